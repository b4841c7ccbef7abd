"""The docs' run examples work as the scripts a user saves them as, not only when exec'd here.

Evaluation workers are started with the spawn start method and import the user's script
again, so an example that calls ``run()`` at the top level of a file fails there although it
works in a notebook or in-process. Each example runs here as a file, in a fresh interpreter,
with its evaluation workers spawned; the LLM node of library.md's example is pointed at a
loopback OpenAI-compatible server (the one change made to its text), so nothing leaves the
machine.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from openai_stub import OpenAIStub, ok

DOCS = Path(__file__).resolve().parents[2] / "docs"
#: A reply the symreg domain parses (an expression in a fence, with some prose).
SYMREG_REPLY = "Try this one:\n```\nexp(-x0) * cos(2*x1)\n```\n"


def _blocks(page: str, marker: str) -> list[str]:
    """The page's Python blocks that contain ``marker``."""
    blocks = re.findall(r"```python\n(.*?)```", (DOCS / page).read_text(), re.DOTALL)
    return [block for block in blocks if marker in block]


def _script_env() -> dict[str, str]:
    """No proxy (the loopback server is reached directly), a test key, litellm's bundled
    price table (no download)."""
    env = dict(os.environ, OPENAI_API_KEY="sk-test", LITELLM_LOCAL_MODEL_COST_MAP="True")
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
        env.pop(name, None)
    return env


def _run_script(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, path.name],
        cwd=path.parent,
        env=_script_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_library_pages_first_example_runs_as_a_script(tmp_path) -> None:
    [source] = _blocks("library.md", 'run(config, "runs/from-python")')
    assert 'if __name__ == "__main__":' in source
    stub = OpenAIStub(default=ok(SYMREG_REPLY)).start()
    try:
        local = source.replace(
            'options={"temperature": 0.8}',
            f'options={{"temperature": 0.8, "api_base": "{stub.base_url}"}}',
        )
        assert local != source  # the example still has the LLM node this test points away
        script = tmp_path / "from_python.py"
        script.write_text(local)
        result = _run_script(script)
    finally:
        stub.stop()
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    coverage, champion = result.stdout.strip().splitlines()[-1].split(" ", 1)
    assert float(coverage) > 0 and champion
    run = tmp_path / "runs/from-python"
    # The default: worker processes (spawned), not evaluations in this process.
    assert json.loads((run / "config.json").read_text())["eval_workers"] != 0
    summary = json.loads((run / "summary.json").read_text())
    assert stub.completed == summary["nodes"]["llm"]["calls"] > 0


def test_the_static_domain_example_runs_as_a_script_with_spawned_workers(tmp_path) -> None:
    [module] = _blocks("writing-a-domain.md", "class Sphere(Domain)")
    [source] = _blocks("writing-a-domain.md", "import sphere_module")
    assert 'if __name__ == "__main__":' in source and "eval_workers=2" in source
    (tmp_path / "sphere_module.py").write_text(module)
    script = tmp_path / "run_sphere.py"
    script.write_text(source)
    result = _run_script(script)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr and "died" not in result.stderr, result.stderr[-3000:]
    lifecycle, coverage = result.stdout.strip().splitlines()[-1].split()
    assert lifecycle == "continual" and float(coverage) > 0.05
    run = tmp_path / "runs/sphere"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["budget"]["calls"] == 400 and summary["evaluated"] > 0
    # no warm start, and every node's champion crossed at every round start after the first
    log = [json.loads(line) for line in (run / "events.jsonl").open()]
    assert not [e for e in log if e["event"] == "evaluated" and e["kind"] == "warm"]
    assert not [e for e in log if e["event"] == "evaluated" and e.get("status") == "invalid"]
    received = {(e["node"], e["round"]) for e in log if e["event"] == "received"}
    assert received == {(f"node-{n}", r) for n in range(4) for r in (1, 2, 3)}


def test_a_script_without_the_main_guard_fails_loudly_naming_it(tmp_path) -> None:
    # The same example with its guard removed: every spawned worker dies while it imports the
    # script again, and run() raises with the cause instead of returning an empty summary.
    [module] = _blocks("writing-a-domain.md", "class Sphere(Domain)")
    [source] = _blocks("writing-a-domain.md", "import sphere_module")
    head, guard, body = source.partition('if __name__ == "__main__":')
    assert guard
    body = body.split("\n", 1)[1]  # the guard's comment goes with it
    unguarded = head + "\n".join(line.removeprefix("    ") for line in body.splitlines())
    (tmp_path / "sphere_module.py").write_text(module)
    script = tmp_path / "run_sphere.py"
    script.write_text(unguarded)
    result = _run_script(script)
    assert result.returncode != 0
    assert "every evaluation worker died" in result.stderr, result.stderr[-3000:]
    assert 'if __name__ == "__main__":' in result.stderr.split("every evaluation worker died")[-1]
