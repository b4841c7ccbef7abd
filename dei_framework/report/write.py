"""Reports: ``report.md`` with tables and PNG plots for a run directory or an experiment directory.

:func:`write_run_report` is what ``dei-run`` calls at the end of a run and what ``dei report DIR``
calls; it tells an experiment by its ``experiment.json`` (or a summary that says it is one), and
reads every file through :mod:`dei_framework.runtime.files.run_files`. Plots go to ``plots/``
next to ``report.md`` and are linked relatively, so the directory can be moved or published as
it is. matplotlib is imported lazily (Agg backend): the rest of the framework does not need it.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

from pathlib import Path

from dei_framework.contract.errors import ConfigError
from dei_framework.report.experiment_report import experiment_report
from dei_framework.report.run_report import run_report
from dei_framework.runtime.files.run_dir import holds_experiment
from dei_framework.runtime.files.run_files import read_experiment_summary, read_finished_run
from dei_framework.runtime.files.run_layout import CONFIG_FILE, REPORT_FILE, SUMMARY_FILE


def write_run_report(path: Path) -> Path:
    """Writes ``report.md`` and ``plots/*.png`` for a run or an experiment directory.

    Everything the report shows is read (and checked) before anything is written: a damaged
    file ends the command with one line naming it, and leaves the directory as it was.

    Args:
        path: A finished run directory (``summary.json`` with ``nodes``) or an experiment
            directory (``experiment.json``, or a summary of ``kind`` experiment; its
            ``summary.json`` is recomputed from the finished runs when missing, e.g. after an
            interruption).

    Returns:
        The path of ``report.md``.

    Raises:
        ConfigError: ``path`` holds neither a finished run nor an experiment, or a file of it
            is damaged.
    """
    path = Path(path)
    summary_path = path / SUMMARY_FILE
    if holds_experiment(path):
        if summary_path.exists():
            summary = read_experiment_summary(summary_path)
        else:
            from dei_framework.experiment.summary import summarize_experiment

            summary = summarize_experiment(path)
        runs = {
            run["dir"]: read_finished_run(path / run["dir"])
            for condition in summary["conditions"].values()
            for run in condition["runs"]
        }
        markdown = experiment_report(path, summary, runs)
    elif summary_path.exists() or (path / CONFIG_FILE).exists():
        markdown = run_report(read_finished_run(path))
    else:
        raise ConfigError(f"{path} is neither a run nor an experiment directory")
    report = path / REPORT_FILE
    report.write_text(markdown, encoding="utf-8")
    return report
