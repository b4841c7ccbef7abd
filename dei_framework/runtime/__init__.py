"""The runtime of a run: the node driver, building a run from its configuration, the ensemble
loop, budget accounting, checkpoints and resume, replay, the run directory, merging, node
processes.

May import: every layer below it — :mod:`dei_framework.contract`, :mod:`dei_framework.search`,
:mod:`dei_framework.evaluation`, :mod:`dei_framework.net`, :mod:`dei_framework.plugin`,
:mod:`dei_framework.analysis`.

Modules:
    driver.py               SearchDriver: the asyncio driver keeping a scheduler's slots busy
    _round_inputs.py        what a round starts with: received champions, opponents installed
    _reply_evaluation.py    replies resolved against their parents and evaluated in one batch
    _early_calls.py         the next round's calls made while a round drains
    _round_generality.py    each round's generality, measured off the loop and filled in
    operator_calls.py       one node's operator calls, one path: recorded replies, billing,
                            logging, one error ladder and back-off (a single call is a batch of
                            one)
    array_path.py           the array path: genomes to the vectorised evaluation and tell_batch
    finished_tasks.py       tasks that report themselves as they finish (a wait costs O(1))
    ensemble.py             Ensemble / run(): the loop of N nodes (or one, ``local=``) in one
                            process: logs what the parts report, checkpoints, the summary
    assembly.py             assemble(): every part of a run (RunParts) built once, front to
                            back, restored on --resume, fed from the record on --replay
    _node_assembly.py       one node's parts: scheduler (restored), identity, clock, driver
    builders.py             the parts assembly puts together: domain and grid, evaluator,
                            plugin objects, lifecycle, delivery, operator cap checks
    restore.py              what a resume or a replay reads back: node state, round files, the
                            record
    process_links.py        a node process's round reports and money hand-overs to its peers
    process_merge.py        joining the node processes' directories into one run (dei merge)
    config.py               flags + TOML file + preset -> RunConfig: one order of precedence
                            (Sources)
    run_config.py           RunConfig, each field with its key, flag and help (NodeConfig
                            re-exported)
    _node_config.py         NodeConfig: one node's operator and its own settings
    _config_checks.py       the checks a RunConfig passes: counts, seconds, members, across
                            fields
    _run_budget.py          a run's budget arithmetic: node quotas and caps, the compute limit
    _config_json.py         config.json: a RunConfig as JSON and back (older records'
                            defaults)
    settings.py             a run setting's key, flag, help and docs group; flags that are no
                            key
    presets.py              named protocols (--preset dei-paper)
    endpoints.py            per-node endpoints (--operator MODEL@URL), a shared --api-base
                            checked
    budget.py               BudgetLedger (equal compute, hard caps); CallMeter re-exported
    _call_meter.py          CallMeter: one call's account with the ledger, attempt by attempt
    _usage.py               what the ledger keeps: compute axes, split_budget, NodeCaps,
                            NodeUsage (Price re-exported from the contract)
    money_pool.py           the money cap shared by node processes (hand-overs, starved waits)
    checkpoints.py          checkpoint.json: written between two awaits, read back on --resume
    replay.py               the recorded-reply operator (--replay)
    run_dir.py              RunDir: a run directory's files, appends and atomic writes
    run_files.py            reading a run's files: one checking loader, damage is one line
                            naming it
    run_layout.py           the names of a run directory's files, in one place
    run_lock.py             one writer per run directory: flock on its .dei.lock, for the
                            process's life
    merge.py                merging: round archives in the run's grid, common ground, joining
                            the node processes' directories
    node_process.py         one node process's directory read and checked against its summary
    summary.py              a run's summary.json (merged figures, per-node metrics, budget)
    launcher.py             one process per node on one machine (dei-run over a networked
                            transport)
    progress.py             a run's progress display: live table, lines, JSON lines, quiet
    chaos.py                DEI_CHAOS_STALL: random stalls, to test that results ignore timing
"""
