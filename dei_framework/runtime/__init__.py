"""The runtime of a run: the node driver, building a run from its configuration, the ensemble
loop, budget accounting, checkpoints and resume, replay, the run directory, merging, node
processes.

May import: every layer below it — :mod:`dei_framework.contract`, :mod:`dei_framework.search`,
:mod:`dei_framework.evaluation`, :mod:`dei_framework.net`, :mod:`dei_framework.plugin`,
:mod:`dei_framework.analysis`.

Modules:
    config/                 a run's configuration: flags + TOML file + preset -> RunConfig,
                            its fields, checks and JSON record; the sandbox policy chosen
    budget/                 the budget ledger (equal compute, hard caps), one call's meter,
                            the quantities it keeps
    files/                  the run directory: its layout (every path, in one place), writer,
                            readers, lock, checkpoints and what a resume reads back
    node/                   one node's parts; a node in a process of its own: links to its
                            peers, its directory, joining them, the one-machine launcher
    driver.py               SearchDriver: the asyncio driver keeping a scheduler's slots busy
    rounds.py               what a round starts with (received champions, opponents
                            installed) and its generality, measured off the loop
    replies.py              replies evaluated in one batch, the next round's calls made early,
                            tasks that report themselves as they finish
    operator_calls.py       one node's operator calls, one path: recorded replies, billing,
                            logging, one error ladder and back-off (a single call is a batch of
                            one)
    array_path.py           the array path: genomes to the vectorised evaluation and tell_batch
    ensemble.py             Ensemble / run(): the loop of N nodes (or one, ``local=``) in one
                            process: logs what the parts report, checkpoints, the summary
    assembly.py             assemble(): every part of a run (RunParts) built once, front to
                            back, restored on --resume, fed from the record on --replay
    builders.py             the parts assembly puts together: domain and grid, evaluator,
                            plugin objects, lifecycle, delivery, operator cap checks;
                            DEI_CHAOS_STALL's random stalls
    replay.py               the recorded-reply operator (--replay)
    merge.py                merging: round archives in the run's grid, common ground, joining
                            the node processes' directories
    summary.py              a run's summary.json (merged figures, per-node metrics, budget)
    progress.py             a run's progress display: live table, lines, JSON lines, quiet
"""
