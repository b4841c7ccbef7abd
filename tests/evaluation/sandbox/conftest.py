"""Fixtures of the sandbox tests: the naive program domain installed for real (`dei-naive`,
whose `evaluate` execs the model's code), evaluations of texts through it in a sandbox, and
the loopback OpenAI-compatible model."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from openai_stub import stub  # noqa: F401 - the loopback model's fixture

from dei_framework.evaluation.local import Evaluator
from dei_framework.evaluation.sandbox import choose_policy


@pytest.fixture
def sandboxed(naive_env, request) -> Callable[..., list]:
    """``sandboxed(texts, level=..., while_open=..., **limits)``: the outcomes of ``texts``
    evaluated one after the other on one evaluator (so on one warm process) of the naive
    domain. ``limits`` are :func:`choose_policy`'s (``timeout`` 5 s unless given);
    ``while_open(outcomes)`` runs before the evaluator (and its warm process) is closed;
    ``isolated`` needs the ``bubblewrap`` fixture."""

    def evaluate(
        texts: list[str],
        *,
        level: str = "process",
        workers: int = 0,
        while_open: Callable[[list], Any] | None = None,
        **limits: Any,
    ) -> list:
        if level == "isolated":
            request.getfixturevalue("bubblewrap")
        from naive_domain import NaiveBinPacking  # installed by the naive_env fixture

        domain = NaiveBinPacking()
        policy = choose_policy(domain, level=level, **{"timeout": 5.0, **limits})
        axes = {axis.name for axis in domain.descriptor_axes()}
        evaluator = Evaluator(domain, workers=workers, descriptor_keys=axes, sandbox=policy)

        async def run() -> list:
            return [await evaluator.evaluate(text, [], seed=1) for text in texts]

        try:
            outcomes = asyncio.run(run())
            if while_open is not None:
                while_open(outcomes)
            return outcomes
        finally:
            evaluator.close()

    return evaluate


@pytest.fixture
def naive_env(naive_site: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Environment for `dei-run` (and sys.path for this process) that sees the naive domain,
    with a test key and no proxy between us and the loopback model."""
    monkeypatch.syspath_prepend(str(naive_site))
    env = dict(os.environ, OPENAI_API_KEY="sk-test", LITELLM_LOCAL_MODEL_COST_MAP="True")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(naive_site), env.get("PYTHONPATH")]))
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
        env.pop(name, None)
    return env


@pytest.fixture
def bubblewrap() -> str:
    """The `bwrap` binary (`.ci/run` installs Debian's `bubblewrap`)."""
    found = shutil.which("bwrap")
    if found is None:
        pytest.skip("bubblewrap is not installed (apt install bubblewrap); .ci/run installs it")
    return found
