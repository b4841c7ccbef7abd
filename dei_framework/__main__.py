"""``python -m dei_framework ARGS`` is ``dei ARGS`` (the launcher starts node processes so)."""

from dei_framework.app.console import main

if __name__ == "__main__":
    main()
