"""Calls to a Dask client that end: plugin installs and removals, and any client coroutine,
bounded in time.

``Client.register_plugin`` and ``Client.unregister_worker_plugin`` wait for every worker's
answer without a bound; a worker that never answers (one refused as it joined, stuck while its
nanny closes it) would hold the run, and at exit the thread that called them, for ever. This
module imports nothing of the project, so the backend and the version guard
(:mod:`~dei_framework.evaluation.dask_guard`) both use it without importing each other.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from typing import Any

#: Seconds to wait for every worker to install (or remove) a worker plugin. The scheduler
#: keeps the plugin before it asks the workers, and a worker that answers holds it; one that
#: never answers (a refused worker stuck while closing) must not hold up the run, nor keep a
#: thread of this process blocked at exit.
PLUGIN_SECONDS = 10.0
#: Seconds a thread waits, beyond a call's own bound, for the call to end on the Dask client's
#: event loop (:func:`bounded`).
SYNC_SLACK_SECONDS = 2.0


def register_plugin(
    client: Any, plugin: Any, name: str, *, timeout: float = PLUGIN_SECONDS
) -> None:
    """``client.register_plugin(plugin, name=name)`` for a worker plugin, bounded in time.

    ``Client.register_plugin`` waits for every worker's answer without a bound, and a worker
    that never answers (one refused as it joined, stuck while its nanny closes it) would hold
    the run, and at exit the thread that called it, for ever. The coroutine behind it, the
    same call, is run here with Dask's own bound (``callback_timeout``), which cancels the
    wait. Should a Dask release rename that coroutine, the unbounded public call is used.

    Raises:
        TimeoutError: Some worker did not answer within ``timeout`` seconds (the scheduler
            keeps the plugin; the workers that answered hold it).
        Exception: What a worker raised installing it, or the client's connection error.
    """
    coroutine = getattr(client, "_register_worker_plugin", None)
    if coroutine is None:
        client.register_plugin(plugin, name=name)
        return
    bounded(
        client,
        coroutine,
        timeout,
        plugin=plugin,
        name=name,
        idempotent=bool(getattr(plugin, "idempotent", False)),
    )


def unregister_plugin(client: Any, name: str, *, timeout: float = PLUGIN_SECONDS) -> None:
    """``client.unregister_worker_plugin(name)``, bounded in time as :func:`register_plugin`.

    Raises:
        TimeoutError: Some worker did not answer within ``timeout`` seconds.
        Exception: What a worker raised removing it, or the client's connection error.
    """
    coroutine = getattr(client, "_unregister_worker_plugin", None)
    if coroutine is None:
        client.unregister_worker_plugin(name)
        return
    bounded(client, coroutine, timeout, name=name)


def unregister_plugins(client: Any, names: Sequence[str], *, timeout: float) -> None:
    """:func:`unregister_plugin` of every one of ``names`` at once, all within ``timeout``
    seconds; what each call met is taken and dropped (a lost scheduler holds nothing)."""
    coroutine = getattr(client, "_unregister_worker_plugin", None)
    if coroutine is None:
        for name in names:
            with contextlib.suppress(Exception):
                client.unregister_worker_plugin(name)
        return

    async def every() -> None:
        await asyncio.gather(*(coroutine(name=name) for name in names), return_exceptions=True)

    with contextlib.suppress(Exception):  # timed out, or the client cannot reach the scheduler
        bounded(client, every, timeout)


def bounded(client: Any, coroutine: Callable[..., Any], timeout: float, **kwargs: Any) -> Any:
    """``client.sync(coroutine, **kwargs)``, the coroutine cancelled after ``timeout`` seconds
    on the client's event loop.

    The bound is kept on the loop, and this thread waits a little longer
    (:data:`SYNC_SLACK_SECONDS`): the call always ends there, and its outcome is taken, before
    this thread moves on (to close the client, say). A bound on this thread's wait only, as
    ``callback_timeout`` alone gives, could leave the call to fail on a closing client with
    nobody to take its error, which asyncio then prints as a traceback.

    Raises:
        TimeoutError: The call took longer than ``timeout``.
        Exception: What the call raised.
    """

    async def within() -> Any:
        async with asyncio.timeout(timeout):
            return await coroutine(**kwargs)

    return client.sync(within, callback_timeout=timeout + SYNC_SLACK_SECONDS)
