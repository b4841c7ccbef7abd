"""Tasks that report themselves as they finish, so that a driver's wait for the next finished
one costs the same however many are in flight (``asyncio.wait`` would hook and unhook every
one of them each time).

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any


class FinishedTasks:
    """Watched tasks that finished, and the future a waiter waits on for the next one."""

    def __init__(self) -> None:
        self._done: list[asyncio.Task] = []
        self._wakeup: asyncio.Future | None = None

    def watch(self, coroutine: Coroutine[Any, Any, Any]) -> asyncio.Task:
        """A task for ``coroutine`` whose completion :meth:`next` reports."""
        task = asyncio.create_task(coroutine)
        task.add_done_callback(self._on_done)
        return task

    def _on_done(self, task: asyncio.Task) -> None:
        self._done.append(task)
        if self._wakeup is not None and not self._wakeup.done():
            self._wakeup.set_result(None)

    async def next(self) -> list[asyncio.Task]:
        """The watched tasks that finished since the last call (waits for one if none has)."""
        if not self._done:
            self._wakeup = asyncio.get_running_loop().create_future()
            try:
                await self._wakeup
            finally:
                self._wakeup = None
        done, self._done = self._done, []
        return done
