"""The search algorithm: one node's Red Queen MAP-Elites as ask/tell, and its parts.

:mod:`~dei_framework.search.scheduler` (the ask/tell core), archives (``archives/``), parent
selectors (``selectors/``), the Red Queen opponent pool, champion-sharing policies, the
per-slot random streams and the budget allocators that move calls between nodes. Nothing here
does I/O or awaits: a custom loop drives it directly.

May import: :mod:`dei_framework.contract`.

Modules:
    scheduler.py            Scheduler: one node's MAP-Elites rounds as ask/tell (archive
                            lifecycle reset or continual)
    _work.py                what the scheduler and its driver exchange: WorkItem, Result,
                            Admission, RoundEnd, TellReport
    _slots.py               work items' ids, keys and seeds, each call slot's generator;
                            derive_seed
    _warm_start.py          what a round starts with: warm start, received champions let in
    _planning.py            the scheduler's call-slot planning: the lag rule, parents drawn per
                            slot
    _inspirations.py        the elites a prompt shows besides the parent (PromptNeeds): the
                            best, then other cells drawn with the slot's generator
    _admission.py           the one admission path: tell's results and tell_batch's rows as
                            one buffer entry, admitted in slot order
    _round_end.py           a round's end: its event and champion, the next round's state
    events.py               the scheduler's events as records: EvaluatedEvent, RoundEvent
                            (to_json: the run log's lines)
    _scheduler_events.py    those events built from work items and archives
    _scheduler_state.py     the scheduler's checkpoint (state_json / restore)
    archives/               ArchiveBase, GridArchive, CVTArchive, AddStatus, ArchiveStats,
                            ArchiveSpec (its docstring lists its modules)
    selectors/              parent choice: ParentSelector, Uniform/Improvement/TournamentSelector
                            (the ``selector`` setting picks one)
    opponents.py            OpponentPool (Red Queen: initial + own window + peer window)
    sharing.py              SharingPolicy protocol (select / on_receive), Admit, built-in
                            policies
    slot_random.py          per-slot random generators (numpy's exact draws, one seed per slot)
    allocation.py           the round-boundary coordinator of budget allocation
                            (AllocationCoordinator); every allocation name importable here
    _allocators.py          budget allocators (static, the complementarity bandit), apportion
    _round_reports.py       round reports (a node's round for the allocation) and the credits
                            they earn
"""
