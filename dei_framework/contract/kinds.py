"""The closed vocabularies of a run's records: where a candidate came from, what a work item
asks, what an event of the run log is, what a progress update says.

Each is a :class:`enum.StrEnum`: a member *is* the string the run log, the checkpoint and the
hook payloads hold (``CandidateSource.PEER == "peer"``, ``json.dumps`` writes ``"peer"``), so
the files keep their documented shapes, and a record read back from JSON (plain strings)
compares equal to the members. Compare with ``==`` or ``in``, never ``is``.

Looking a member up (``WorkKind.MUTATE``) costs an attribute lookup on the enum class, a few
times a plain name's in Python 3.11: the scheduler's per-item paths bind the members they
compare with to module names once.
"""

from __future__ import annotations

import enum

__all__ = ["CandidateSource", "EventKind", "ProgressKind", "WorkKind"]


class CandidateSource(enum.StrEnum):
    """Where a :class:`~dei_framework.contract.records.Candidate` came from (its ``source``).

    Said of programs a node did not write in the round at hand: opponents, seed programs,
    received champions. A candidate a node evaluated and offered to its archive (an elite, a
    round's champion) has none (:attr:`NONE`).
    """

    #: An evaluated candidate of the node's own search: an archive elite, a champion.
    NONE = ""
    #: One of the domain's initial opponents (``Domain.initial_opponents``).
    INITIAL = "initial"
    #: One of the domain's seed programs (``Domain.seed_programs``), warmed into a fresh
    #: archive without joining the opponent pool.
    SEED = "seed"
    #: A champion of this node's earlier round, in its opponent pool (``reset`` lifecycle).
    OWN = "own"
    #: A champion received from another node: in the opponent pool's peer window, or
    #: evaluated at a round's start and offered to the archive's cells.
    PEER = "peer"
    #: A received champion the sharing policy admitted to the opponent pool but not to cells
    #: (``SharingPolicy.on_receive`` gave :attr:`~dei_framework.search.sharing.Admit.OPPONENTS`
    #: without :attr:`~dei_framework.search.sharing.Admit.CELLS`). It is still evaluated at
    #: the round's start as a ``peer`` item (it counts for niche novelty), then reported
    #: invalid with ``"not admitted (sharing policy)"`` and never offered to the archive. Only
    #: a ``peer`` work item's program carries it (and so a checkpoint's pending items); the
    #: pool holds the same champion as :attr:`PEER`.
    PEER_EXCLUDED = "peer-excluded"

    @classmethod
    def received(cls, *, to_cells: bool) -> CandidateSource:
        """The source of a received champion's ``peer`` item: :attr:`PEER` when the sharing
        policy lets it into the archive's cells, else :attr:`PEER_EXCLUDED`."""
        return cls.PEER if to_cells else cls.PEER_EXCLUDED


class WorkKind(enum.StrEnum):
    """What a :class:`~dei_framework.search._work.WorkItem` asks (its ``kind``, and the
    ``kind`` of the ``evaluated`` event it ends as)."""

    #: Call the operator for a program from scratch, then evaluate its reply.
    NEW = "new"
    #: Call the operator for a variation of a parent elite, then evaluate its reply.
    MUTATE = "mutate"
    #: Evaluate a program as it is at a round's start: a pool opponent re-evaluated, or a seed
    #: program.
    WARM = "warm"
    #: Evaluate a champion received from another node.
    PEER = "peer"


#: The kinds of item an operator writes the program of (the candidates a run's calls made).
CALL_KINDS = (WorkKind.NEW, WorkKind.MUTATE)


class EventKind(enum.StrEnum):
    """What a line of ``events.jsonl`` is (its ``event``); the two the hooks receive are
    :attr:`EVALUATED` and :attr:`ROUND`."""

    #: One candidate evaluated (or found invalid) and admitted in slot order.
    EVALUATED = "evaluated"
    #: A node's round ended.
    ROUND = "round"
    #: Champions a node took in at a round's start (what ``--replay`` reproduces).
    RECEIVED = "received"
    #: A champion delivered after the node's last round had started (never fought).
    RECEIVED_LATE = "received_late"
    #: A node stopped early (a budget cap, a failing operator, a lost process).
    NODE_STOPPED = "node_stopped"
    #: A budget allocator's decision at a round boundary.
    ALLOCATION = "allocation"
    #: A peer process's round report an allocation decision was made from.
    ALLOCATION_REPORT = "allocation_report"
    #: A node waiting for money from the shared money cap instead of stopping.
    MONEY_STARVED = "money_starved"
    #: A node process handing its unspent money to its peers.
    MONEY_HANDED = "money_handed"
    #: A node process receiving money a peer handed over.
    MONEY_RECEIVED = "money_received"


class ProgressKind(enum.StrEnum):
    """What a progress update (``progress(kind, data)``, ``--progress``) reports."""

    #: A node's totals so far, before a run goes on (non-zero on ``--resume``).
    RESUMED = "resumed"
    #: An ``evaluated`` event (the display counts the operator-made ones).
    EVALUATED = "evaluated"
    #: A ``round`` event, with the operator's status.
    ROUND = "round"
    #: A ``node_stopped`` event.
    STOPPED = "stopped"
    #: The operators' status, at each periodic checkpoint (``--progress json`` writes it as
    #: an ``{"event": "status", ...}`` line).
    STATUS = "status"
