"""Locates the third-party Core War reference data (``../shared/corewar``), absent from clones."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
COREWAR = SHARED / "corewar"


@pytest.fixture(scope="session")
def corewar_dir() -> Path:
    """The ``shared/corewar`` folder; skips the test when it is not there."""
    if not COREWAR.is_dir():
        pytest.skip("../shared/corewar not found: reference data is not part of the repo")
    return COREWAR
