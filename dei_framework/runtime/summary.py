"""A run's ``summary.json``: merged archive figures, per-node metrics, budget, sharing counters.

The fields are described in ``docs/run-directory.md``;
:class:`~dei_framework.runtime.ensemble.Ensemble`
writes the summary at the end of a run and of a merge of node processes.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from dei_framework.analysis.common_ground import common_fitness, reference_record
from dei_framework.analysis.metrics import mean_or_none, operator_divergence
from dei_framework.contract.descriptors import DescriptorSpace
from dei_framework.contract.domain import Domain
from dei_framework.contract.kinds import CALL_KINDS, EventKind
from dei_framework.contract.payloads import JSONValue
from dei_framework.contract.run_summary import Champion, NodeSummary, RunSummary
from dei_framework.evaluation.sandbox.limits import STOP_KINDS, stop_kind
from dei_framework.net.node import Node
from dei_framework.runtime.budget.ledger import BudgetLedger
from dei_framework.runtime.budget.usage import NodeUsage
from dei_framework.runtime.config.resolve import sandbox_policy
from dei_framework.runtime.config.run_config import RunConfig
from dei_framework.runtime.driver import SearchDriver
from dei_framework.runtime.merge import RunMerge
from dei_framework.search.events import RoundEvent


def node_summary(
    node: Node,
    driver: SearchDriver,
    ledger: BudgetLedger,
    merge: RunMerge,
    fought: Mapping[int, int],
    domain: Domain,
) -> NodeSummary:
    """One node's entry of ``summary.json``.

    Args:
        node: The node.
        driver: Its search driver (its round history).
        ledger: The run's budget ledger.
        merge: The run's merge (common-ground scores of its champions).
        fought: Opponents it fought per round (the fitness scale of its raw figures).
        domain: The run's domain.
    """
    loop = driver
    usage: NodeUsage = ledger.usage[node.name]
    generality = [e.generality for e in loop.history]
    final = loop.history[-1] if loop.history else None
    champion = final.champion.to_json() if final and final.champion else None
    if champion is not None and merge.reference is not None:
        champion = merge.with_common(champion)
    return NodeSummary(
        operator=loop.operator.label,
        model=loop.operator.label,
        calls=usage.calls,
        attempts=usage.attempts,
        cost_usd=usage.to_json()["cost_usd"],
        array_path=loop.array_path,
        quota=ledger.quotas[node.name],
        rounds_completed=len(loop.history),
        generality=final.generality if final else None,
        generality_peak=max((g for g in generality if g is not None), default=None),
        generality_per_round=tuple(generality),
        generality_excluded=tuple(sorted(loop.generality_excluded)),
        champion_initial_per_round=tuple(e.champion_initial for e in loop.history),
        niche_novelty=mean_or_none(e.niche_novelty for e in loop.history),
        niche_novelty_per_round=tuple(e.niche_novelty for e in loop.history),
        coverage_per_round=tuple(e.stats.coverage for e in loop.history),
        qd_score_per_round=tuple(e.stats.qd_score for e in loop.history),
        champion=None if champion is None else Champion.from_json(champion),
        champion_common_fitness_per_round=tuple(
            common_fitness(merge.common_scores, e.champion.text if e.champion else None)
            for e in loop.history
        )
        if merge.reference is not None
        else None,
        fitness_scale_per_round=tuple(_fitness_scales(domain, fought, loop.history)),
        stopped=loop.stopped,
        sharing=node.stats(),
        operator_status=loop.operator.status(),
        pid=os.getpid(),
    )


def _fitness_scales(
    domain: Domain, fought: Mapping[int, int], history: Sequence[RoundEvent]
) -> list[float | None]:
    return [
        float(domain.fitness_scale(fought[e.round])) if e.round in fought else None for e in history
    ]


#: Distinct reasons of invalid candidates :class:`EventTally` counts.
REASONS = 100
#: Characters of a reason it keeps (the first line of the domain's message).
REASON_CHARS = 200


class EventTally:
    """What the summary takes from a run's events, counted as they are logged: how many
    candidates were evaluated and how many were invalid, and where each node's operator-made
    candidates fell in the run's grid (the operator divergence).

    A run counts its events as it writes them, so that its summary need not read
    ``events.jsonl`` back (a cost that grew with the run); a resumed run first counts the
    events its log kept, a merge of node processes the merged log.

    Args:
        space: The run's grid (the common space: nodes may use other axes or archives).
        events: Events to count first.
        placed: Nodes whose events' cells are cells of ``space`` already (a grid archive over
            it): their cells are taken as they are instead of placing each descriptor again.
    """

    def __init__(
        self,
        space: DescriptorSpace,
        events: Iterable[Mapping[str, Any]] = (),
        *,
        placed: Collection[str] = (),
    ) -> None:
        self.space = space
        self.placed = frozenset(placed)
        self.evaluated = 0
        self.invalid = 0
        #: Per node, the operator-made candidates per cell of :attr:`space`.
        self.cells: dict[str, dict[tuple[int, ...], int]] = {}
        #: Per node, its operator-made candidates evaluated, and how many of them were invalid.
        self.made: dict[str, int] = {}
        self.made_invalid: dict[str, int] = {}
        #: Invalid candidates a limit or the sandbox stopped, by kind
        #: (:data:`~dei_framework.evaluation.sandbox.limits.STOP_KINDS`).
        self.stopped: dict[str, int] = dict.fromkeys(STOP_KINDS, 0)
        #: Invalid candidates by the first line of their reason (at most :data:`REASONS`
        #: reasons: a run's commonest reason is among its first ones or it is not common).
        self.reasons: dict[str, int] = {}
        # A learned grid moves during the run: descriptors are placed at its end.
        self._rows: dict[str, list[list[float]]] | None = {} if space.learned else None
        self.add(events)

    def add(self, events: Iterable[Mapping[str, Any]]) -> None:
        """Counts ``events`` (any kind; only ``evaluated`` ones count)."""
        evaluated = EventKind.EVALUATED  # looked up once, not per event
        for event in events:
            if event.get("event") != evaluated:
                self.invalid += event.get("status") == "invalid"
                continue
            self.evaluated += 1
            invalid = event.get("status") == "invalid"
            self.invalid += invalid
            kind = stop_kind(event.get("error")) if invalid else None
            if kind is not None:
                self.stopped[kind] += 1
            if invalid:
                self._reason(event.get("error"))
            if event.get("kind") not in CALL_KINDS:
                continue
            node, descriptor = event["node"], event.get("descriptor")
            self.made[node] = self.made.get(node, 0) + 1
            self.made_invalid[node] = self.made_invalid.get(node, 0) + invalid
            if event.get("cell") is None:
                continue
            if self._rows is not None and descriptor:
                row = [float(descriptor[name]) for name in self.space.names]
                self._rows.setdefault(node, []).append(row)
                continue
            cell = (
                self.space.cell(descriptor)
                if descriptor and node not in self.placed
                else tuple(event["cell"])
            )
            counts = self.cells.setdefault(node, {})
            counts[cell] = counts.get(cell, 0) + 1

    def _reason(self, error: Any) -> None:
        reason = (str(error or "").strip().splitlines() or ["no reason given"])[0][:REASON_CHARS]
        if reason in self.reasons or len(self.reasons) < REASONS:
            self.reasons[reason] = self.reasons.get(reason, 0) + 1

    def histograms(self, space: DescriptorSpace | None = None) -> dict[str, np.ndarray]:
        """Per node, its candidates per cell of the flattened (row-major) grid: the cell
        distributions :func:`~dei_framework.analysis.metrics.operator_divergence` compares.

        Args:
            space: The run's grid at its end (:meth:`RunMerge.final_space`), where a grid
                with learned bounds places the descriptors; default :attr:`space`.
        """
        space = space or self.space
        shape = space.shape
        histograms = {}
        for node, rows in (self._rows or {}).items():
            for cell in map(tuple, space.indices(np.asarray(rows)).tolist()):
                counts = self.cells.setdefault(node, {})
                counts[cell] = counts.get(cell, 0) + 1
        if self._rows:
            self._rows = {}  # placed once
        for node, counts in self.cells.items():
            histogram = histograms[node] = np.zeros(int(np.prod(shape)))
            for cell, count in counts.items():
                histogram[int(np.ravel_multi_index(cell, shape))] += count
        return histograms

    def no_elite(self, elites: int) -> str | None:
        """Why a run kept no elite, in one line (``None`` when it kept one)."""
        if elites:
            return None
        if not self.evaluated:
            return "no elite kept: no candidate was evaluated"
        if not self.reasons:
            return (
                f"no elite kept: none of the {self.evaluated} candidates evaluated had a "
                "finite fitness the archive takes"
            )
        reason, count = max(self.reasons.items(), key=lambda item: item[1])
        every = "all" if self.invalid == self.evaluated else f"{self.invalid} of"
        return (
            f"no elite kept: {every} {self.evaluated} candidates were invalid; commonest "
            f"reason ({count} of {self.invalid}): {reason}"
        )


def run_summary(
    config: RunConfig,
    domain: Domain,
    merge: RunMerge,
    nodes: Mapping[str, NodeSummary],
    budget: dict[str, JSONValue],
    tally: EventTally,
) -> RunSummary:
    """The run's ``summary.json``; fills ``merge.merged_entries`` (``merged_archive.json``).

    Args:
        config: The run's configuration.
        domain: The run's domain.
        merge: The run's merge (round archives, common ground).
        nodes: Per node, its entry (:func:`node_summary`).
        budget: The budget ledger's record.
        tally: The run's events, counted (see :class:`EventTally`).
    """
    space = merge.final_space()
    merged = merge.merged()
    return RunSummary(
        domain=config.domain,
        transport=config.transport,
        sharing=config.sharing,
        seed=config.seed,
        rounds=config.rounds,
        lifecycle=config.lifecycle,
        space={
            "axes": list(space.names),
            "shape": list(space.shape),
            "cells": space.cells,
            "grid": space.to_json(),
        },
        merged=merged,
        generality={
            "reference": _generality_reference(domain),
            # Per node: how many reference programs it fought or produced, left out of
            # its generality (the names are in nodes.<name>.generality_excluded).
            "excluded": {
                name: None if node.generality_excluded is None else len(node.generality_excluded)
                for name, node in nodes.items()
            },
        },
        nodes=nodes,
        operator_divergence=operator_divergence(tally.histograms(space)),
        budget=budget,
        compute_axis=budget.get("axis", config.compute_axis),
        invalid=tally.invalid,
        evaluated=tally.evaluated,
        # Only where candidates ran in a sandbox (domains whose programs are data never stop).
        stopped=dict(tally.stopped) if sandbox_policy(config, domain).sandboxed else None,
        no_elite=tally.no_elite(merged.stats.num_elites),
    )


def _generality_reference(domain: Domain) -> dict[str, Any] | None:
    texts = domain.generality_reference()
    return None if texts is None else reference_record(texts)
