"""Reports: ``report.md`` and its plots for a run or an experiment, and program export.

May import: every layer below it, up to :mod:`dei_framework.experiment`.

Modules:
    write.py                report.md for a run or an experiment directory (dei report, end of
                            run)
    run_report.py           a run's report.md
    experiment_report.py    an experiment's report.md
    plots.py                the reports' PNG plots (matplotlib, imported lazily)
    export.py               dei export: champions and elites as files (dei_export_program hook)
"""
