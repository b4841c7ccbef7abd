"""A run's files: the run directory's layout, its writer and readers, its lock, checkpoints.

Every path into a run directory is built by :mod:`~dei_framework.runtime.files.run_layout`
(``tests/runtime/test_run_layout.py`` fails on one built by hand anywhere else).

May import: the layers below the runtime, :mod:`dei_framework.runtime.config.resolve`,
:mod:`dei_framework.runtime.budget.ledger` and the driver's modules a checkpoint reads
(:mod:`~dei_framework.runtime.driver`, :mod:`~dei_framework.runtime.replay`).

Modules:
    run_layout.py           the names and paths of a run directory's files, in one place
    run_dir.py              RunDir: a run directory's files, appends and atomic writes
    run_files.py            reading a run's files: one checking loader, damage is one line
                            naming it
    run_lock.py             one writer per run directory: flock on its lock file, for the
                            process's life
    checkpoints.py          checkpoint.json: written between two awaits, read back on
                            --resume; what a resume or a replay reads back

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""
