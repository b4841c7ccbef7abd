"""Reports: ``report.md`` with tables and PNG plots for a run directory or an experiment directory.

:func:`write_run_report` is what ``dei-run`` calls at the end of a run and what ``dei report DIR``
calls; it tells a run from an experiment by the shape of ``summary.json`` (an experiment's has
``conditions``). Plots go to ``plots/`` next to ``report.md`` and are linked relatively, so the
directory can be moved or published as it is. matplotlib is imported lazily (Agg backend): the
rest of the framework does not need it.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dei_framework.errors import ConfigError
from dei_framework.experiment_report import experiment_report
from dei_framework.run_report import run_report


def write_run_report(path: Path) -> Path:
    """Writes ``report.md`` and ``plots/*.png`` for a run or an experiment directory.

    Args:
        path: A run directory (``summary.json`` with ``nodes``) or an experiment directory
            (``experiment.json``; its ``summary.json`` is recomputed from the finished runs
            when missing, e.g. after an interruption).

    Returns:
        The path of ``report.md``.

    Raises:
        ConfigError: ``path`` holds neither a finished run nor an experiment.
    """
    path = Path(path)
    summary = _load_summary(path)
    if "conditions" in summary:
        markdown = experiment_report(path, summary)
    elif "nodes" in summary:
        markdown = run_report(path, summary)
    else:
        raise ConfigError(f"{path / 'summary.json'} is neither a run nor an experiment summary")
    report = path / "report.md"
    report.write_text(markdown, encoding="utf-8")
    return report


def _load_summary(path: Path) -> dict[str, Any]:
    summary_path = path / "summary.json"
    if summary_path.exists():
        try:
            return json.loads(summary_path.read_text())
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{summary_path} is damaged: {exc}") from None
    if (path / "experiment.json").exists():
        from dei_framework.experiment_summary import summarize_experiment

        return summarize_experiment(path)
    if (path / "config.json").exists():
        raise ConfigError(f"{path} has no summary.json: the run has not finished "
                          f"(continue it with dei-run --resume {path})")  # fmt: skip
    raise ConfigError(f"{path} is neither a run nor an experiment directory")
