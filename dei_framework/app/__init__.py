"""The application: the ``dei`` and ``dei-run`` commands and ``dei watch`` (the live page).

May import: every layer below it.
"""
