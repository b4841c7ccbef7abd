"""Names a package hands on from one of its modules, imported on first use (PEP 562), so that
importing one submodule of the package does not import that module too.

Imports nothing of the framework: every layer may use it (tests/core/test_layers.py).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Collection
from typing import Any


def lazy_names(package: str, source: str, names: Collection[str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` that gives ``names`` from module ``source``.

    Args:
        package: The package's ``__name__`` (for the error message).
        source: The dotted name of the module the names come from.
        names: The names handed on (the package's ``__all__``).
    """

    def __getattr__(name: str) -> Any:
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(source), name)

    return __getattr__
