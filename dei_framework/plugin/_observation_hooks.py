"""The observation hooks: what happens in a run (candidates, rounds, champions, the end).

Called for every plugin, return values ignored; a failing observer is left out of that hook
from then on. Collected by :mod:`dei_framework.plugin.hookspecs`, the module the plugin manager
registers. The payloads are frozen records read by attribute: the events of
:mod:`~dei_framework.search.events` (``stats.stats.coverage``; ``to_json()`` gives the line of
``events.jsonl``) and :class:`~dei_framework.contract.run_summary.RunSummary`
(``summary.merged.stats.coverage``; ``to_json()`` is ``summary.json``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dei_framework.plugin._markers import hookspec

if TYPE_CHECKING:
    from dei_framework.contract.run_summary import RunSummary
    from dei_framework.net.envelope import ChampionEnvelope
    from dei_framework.search.events import EvaluatedEvent, RoundEvent


@hookspec
def dei_candidate_evaluated(event: EvaluatedEvent) -> None:
    """A candidate was evaluated, or found invalid, on a node of the run.

    Fires:
        Once per ``evaluated`` event, right after it is written to ``events.jsonl``: every
        operator-written candidate, warm-start re-evaluation and received champion, on every
        node (in the process running that node when nodes run as processes). A failed operator
        call has no event and fires nothing.

    Args:
        event: The ``evaluated`` event (``event.to_json()`` is the line written to
            ``events.jsonl``): ``event.node``, ``event.kind``, ``event.status``,
            ``event.fitness``, ``event.cell``, ...

    Returns:
        Nothing; return values are ignored (an observation hook).
    """


@hookspec
def dei_round_ended(node: str, round: int, stats: RoundEvent) -> None:
    """A node finished a round.

    Fires:
        Once per node and round, after the round's archive file (``nodes/<node>/round-NNN.json``)
        is written (in the process running that node when nodes run as processes). Rounds
        finished before a ``--resume`` do not fire again.

    Args:
        node: The node's name.
        round: The round just finished (0-based).
        stats: The ``round`` event (``stats.to_json()`` is the line written to
            ``events.jsonl``): ``stats.stats`` (the archive's
            :class:`~dei_framework.search.archives.ArchiveStats`), ``stats.champion``,
            ``stats.niche_novelty``, ``stats.opponents`` fought, ...

    Returns:
        Nothing; return values are ignored (an observation hook).
    """


@hookspec
def dei_champion_received(
    node: str, envelope: ChampionEnvelope | None, accepted: bool, reason: str
) -> None:
    """A node took a message from its inbox.

    Fires:
        Once per message a node drains at a round's start, and once per message drained after
        its last round (arrived too late to fight), in a run that shares champions; never for
        a node's own champion coming back through gossip, nor in a ``--replay`` run (the
        received champions are then read from the record).

    Args:
        node: The receiving node.
        envelope: The :class:`~dei_framework.net.envelope.ChampionEnvelope` (``None`` if the
            message could not be decoded or verified).
        accepted: Whether it was valid (it is then parsed, and the sharing policy decides
            whether it joins the node's opponents, its archive, or neither).
        reason: ``"ok"`` when accepted, ``"dropped"`` when not (``summary.json``'s
            ``nodes.<name>.sharing.dropped`` counts the drops by cause).

    Returns:
        Nothing; return values are ignored (an observation hook).
    """


@hookspec
def dei_run_finished(run_dir: str, summary: RunSummary) -> None:
    """A run finished and its results are written.

    Fires:
        Once per run, after ``summary.json`` and ``merged_archive.json`` are written: at the
        end of ``dei-run`` (or :func:`~dei_framework.run`; each run of ``dei experiment``).
        When nodes run as processes, each node's process fires it for its own directory
        (``processes/<node>/``) and the launcher fires it once more after merging them. An
        interrupted run does not fire it.

    Args:
        run_dir: The run directory (the one holding ``summary.json``).
        summary: The run's results (``summary.to_json()`` is what ``summary.json`` holds):
            ``summary.merged``, ``summary.nodes``, ``summary.budget``, ...

    Returns:
        Nothing; return values are ignored (an observation hook).
    """
