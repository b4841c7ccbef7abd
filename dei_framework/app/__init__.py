"""The application: the ``dei`` and ``dei-run`` commands and ``dei watch`` (the live page).

May import: every layer below it.

Modules:
    console.py          console-script entry points: load cli.py, Ctrl-C while it loads
    cli.py              the commands: dei-run, dei (plugins, report, experiment, ...)
    cli_experiment.py   dei experiment's flags -> ExperimentPlan
    watch/              dei watch: incremental run reader, JSON API, web page (its docstring
                        lists its modules)
"""
