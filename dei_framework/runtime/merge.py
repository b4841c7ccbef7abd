"""Merging a run: its nodes' final archives into one (raw, and on common ground), and the
directories of its node processes into one run directory.

:class:`RunMerge` holds what a merge needs as the run goes (each node's round archives, mapped
into the run's grid) and, at the end, measures common ground
(:mod:`dei_framework.analysis.common_ground`) and
merges; :func:`join_processes` gathers what node processes (``dei node``) wrote apart.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import asyncio
import shutil
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs

from dei_framework.analysis.common_ground import (
    Reference,
    Score,
    build_reference,
    common_fitness,
    evaluate_texts,
    merge_common,
    raw_entries,
    score_texts,
    scores_from_outcomes,
    scoring_spread,
    winners,
)
from dei_framework.contract.descriptors import DescriptorSpace
from dei_framework.contract.domain import Domain
from dei_framework.contract.errors import ConfigError
from dei_framework.contract.kinds import EventKind
from dei_framework.contract.run_summary import Champion, MergedSummary, NodeSummary
from dei_framework.evaluation.local import Evaluator
from dei_framework.runtime.budget.usage import NodeCaps, NodeUsage
from dei_framework.runtime.config.record import NodeConfig
from dei_framework.runtime.config.run_config import RunConfig
from dei_framework.runtime.files import run_layout
from dei_framework.runtime.files.run_dir import RunDir
from dei_framework.runtime.node.process import NodeProcess, read_node_process
from dei_framework.search.archives import ArchiveBase, GridArchive


class RunMerge:
    """A run's nodes merged: their round archives in the run's grid, common ground, the merge.

    Args:
        domain: The run's domain (its fitness floor is the archives' QD offset).
        space: The run's grid: the common space of merges and reports.
        nodes: The run's node names, in the order merges break ties in.
    """

    def __init__(self, domain: Domain, space: DescriptorSpace, nodes: Sequence[str]) -> None:
        self.domain = domain
        self.space = space
        # Keyed in node order from the start, not in the order rounds happen to end: merges
        # break ties between equal elites by archive order, so that order must not be timing.
        self.round_archives: dict[str, dict[int, GridArchive]] = defaultdict(
            dict, {name: {} for name in nodes}
        )
        #: The common-ground reference set; ``None``: the run measures no common ground.
        self.reference: Reference | None = None
        self.common_outcomes: dict = {}
        self.common_scores: dict[str, Score] = {}
        #: What ``merged_archive.json`` holds (filled by :meth:`merged`).
        self.merged_entries: list[dict[str, Any]] = []
        # Merges made, by the archives merged (the last round's merge is also the final one).
        self._merges: dict[tuple[int, ...], tuple[tuple[GridArchive, ...], GridArchive]] = {}

    def add_round(
        self, name: str, round_index: int, archive: ArchiveBase | Mapping[str, Any]
    ) -> None:
        """Keeps a node's round archive (the archive or its JSON), mapped into the run's grid
        (a copy: the archive may change afterwards)."""
        self.round_archives[name][round_index] = self._common(archive)

    def _merge(self, archives: Sequence[GridArchive]) -> GridArchive:
        """:meth:`GridArchive.merge` of kept round archives, made once per set of archives."""
        key = tuple(map(id, archives))  # the archives are kept with it: no id is reused
        if key not in self._merges:
            self._merges[key] = (tuple(archives), GridArchive.merge(archives))
        return self._merges[key][1]

    def _common(self, archive: ArchiveBase | Mapping[str, Any]) -> GridArchive:
        """A node's archive mapped into the run's grid (the common space of merges and reports,
        whatever the node's archive kind and axes)."""
        common = GridArchive(space=self.space, qd_offset=self.domain.fitness_floor)
        if isinstance(archive, ArchiveBase):
            if type(archive) is GridArchive and archive.space == self.space:
                # The same cells: its elites as they are (what placing each of them again
                # from its JSON gives, without the cost of that).
                return common.fill_from(archive)
            archive = archive.to_json()
        return common.fill_from_json(archive)

    async def measure_common(self, evaluator: Evaluator, champions: list[str | None]) -> None:
        """Common ground in its two steps (:mod:`dei_framework.analysis.common_ground`): every
        final-archive elite and round champion once with the selection seed, then the elites kept
        per cell and the champions with every scoring seed (a deterministic domain: the selection
        evaluation is the score, each program is evaluated once)."""
        reference = self.reference
        if reference is None:
            return
        self.common_outcomes = await evaluate_texts(
            evaluator, self._common_texts(champions), reference
        )
        chosen = winners(self.final_archives(), self.common_outcomes, self.space)
        scored = chosen + [text for text in champions if text]
        if self.domain.deterministic:
            self.common_scores = scores_from_outcomes(self.common_outcomes, scored)
        else:
            self.common_scores = await score_texts(evaluator, scored, reference)

    def merge_common_ground(
        self,
        new_evaluator: Callable[[], Evaluator],
        common_seeds: int,
        nodes: dict[str, NodeSummary],
        champions: Mapping[str, Mapping[int, str | None]],
    ) -> None:
        """Common ground for a merge of node processes: every final-archive elite and round
        champion of every node re-evaluated here, in one place, against the reference set (node
        processes leave common ground to the merge).

        Args:
            new_evaluator: Makes an evaluator for the run's domain (closed here after use).
            common_seeds: Scoring seeds per program (the run's ``common_seeds``).
            nodes: The merged per-node summary entries (their common-ground fields are
                filled in).
            champions: Per node, each round's champion text (``None`` for a round without).
        """
        self.reference = build_reference(self.domain, scoring=common_seeds)
        per_round = {name: [champions[name][r] for r in sorted(champions[name])] for name in nodes}
        evaluator = new_evaluator()
        try:
            asyncio.run(
                self.measure_common(
                    evaluator, [text for round_texts in per_round.values() for text in round_texts]
                )
            )
        finally:
            evaluator.close()
        for name, entry in nodes.items():
            champion = entry.champion
            nodes[name] = attrs.evolve(
                entry,
                champion_common_fitness_per_round=tuple(
                    common_fitness(self.common_scores, text) for text in per_round[name]
                ),
                champion=champion and Champion.from_json(self.with_common(champion.to_json())),
            )

    def with_common(self, champion: Mapping[str, Any]) -> dict[str, Any]:
        """A champion entry with its common-ground fitness and spread over the scoring seeds."""
        score = self.common_scores.get(champion.get("text") or "")
        return {
            **champion,
            "common_fitness": score.mean if score else None,
            "common_fitness_std": score.std if score else None,
        }

    def final_space(self) -> DescriptorSpace:
        """The run's grid at its end: :attr:`space` with each learned axis widened to what
        every node's final archive saw (the common grid of merges, common ground and the
        summary); :attr:`space` itself when no axis learns its bounds."""
        return self.space.joined(archive.space for archive in self.final_archives())

    def final_archives(self) -> list[GridArchive]:
        """Each node's last round archive, in node order."""
        return [archives[max(archives)] for archives in self.round_archives.values() if archives]

    def _common_texts(self, champions: Iterable[str | None]) -> list[str]:
        """Every final-archive elite and every round champion (``None``: a round without one):
        what common ground measures."""
        texts = [elite.text for archive in self.final_archives() for elite in archive]
        return texts + [text for text in champions if text]

    def merged(self) -> MergedSummary:
        """Raw merge statistics, per round and with the common-ground block; fills
        :attr:`merged_entries`."""
        finals = self.final_archives()
        raw = self._merge(finals) if finals else None
        empty = GridArchive(space=self.space, qd_offset=self.domain.fitness_floor)
        stats, per_round = (raw or empty).stats(), self.per_round()
        if self.reference is None:
            self.merged_entries = raw_entries(raw) if raw else []
            return MergedSummary(stats=stats, per_round=per_round)
        archive, self.merged_entries = merge_common(
            finals,
            self.common_outcomes,
            self.space,
            qd_offset=self.domain.fitness_floor,
            scores=self.common_scores,
        )
        failed = sum(1 for o in self.common_outcomes.values() if o.evaluation is None)
        deterministic = bool(self.domain.deterministic)
        common = {
            **archive.stats().to_json(),
            **scoring_spread(self.merged_entries),
            "reference": dict(self.reference.record),
            "seed": self.reference.seed,
            # A deterministic domain is scored on its selection seed alone (K = 1).
            "scoring_seeds": [] if deterministic else list(self.reference.scoring_seeds),
            "common_seeds": 1 if deterministic else len(self.reference.scoring_seeds),
            "fitness_scale": self.reference.fitness_scale,
            "failed": failed,
            "scoring_failed": sum(s.failed for s in self.common_scores.values()),
            # Only when set: the records of every other domain (the golden runs) stay as
            # they were.
            **({"deterministic": True} if deterministic else {}),
        }
        return MergedSummary(stats=stats, common=common, per_round=per_round)

    def per_round(self) -> list[dict[str, Any]]:
        """Merge statistics of every round: the nodes' archives of that round merged."""
        rounds = sorted({r for archives in self.round_archives.values() for r in archives})
        per_round = []
        for round_index in rounds:
            archives = [a[round_index] for a in self.round_archives.values() if round_index in a]
            per_round.append({"round": round_index, **self._merge(archives).stats().to_json()})
        return per_round


@attrs.frozen(kw_only=True)
class JoinedProcesses:
    """What the node processes of a run wrote, gathered by :func:`join_processes`.

    Attributes:
        nodes: Per node, its summary entry.
        budget_nodes: Per node, its budget entry.
        wall_seconds: The longest wall time of a process.
        champions: Per node, each round's champion text (``None`` for a round without).
        events: Every process's ``events.jsonl`` lines, node after node.
        calls: Every process's ``calls.jsonl`` lines, node after node.
    """

    nodes: dict[str, NodeSummary]
    budget_nodes: dict[str, Any]
    wall_seconds: float
    champions: dict[str, dict[int, str | None]]
    events: list[dict]
    calls: list[dict]


def join_processes(
    config: RunConfig,
    run_dir: RunDir,
    merge: RunMerge,
    extra: Mapping[str, Mapping[str, Any]] | None = None,
) -> JoinedProcesses:
    """Gathers the node processes' directories (``processes/<node>/``) of ``run_dir``.

    Every node's files are read and checked first (:func:`read_node_process`), so that a merge
    refused for an incomplete or damaged node log writes nothing. Events and calls are then
    concatenated node by node (the caller writes them) and round files copied into
    ``run_dir`` (their archives go to ``merge``); each node's summary entry comes from its
    process's summary, or, for a node whose process ended without one, from its last
    checkpoint (and is marked ``stopped``).

    Args:
        config: The run's configuration.
        run_dir: The run directory holding ``processes/<node>/``.
        merge: Takes every node's round archives.
        extra: Per node, fields added to its summary entry (a launcher's process ids ...);
            a process's own ``pid`` wins over one given here.

    Raises:
        ConfigError: A node's files are damaged, or its logs are incomplete (they disagree
            with its last checkpoint or its summary); except for a node whose ``extra``
            says it ``failed``, which is then reported as stopped with nothing of it merged.
    """
    quotas, caps = config.node_quotas(), config.node_caps()
    processes, unreadable = _read_processes(config, run_dir, extra)
    events: list[dict] = []
    calls: list[dict] = []
    nodes: dict[str, NodeSummary] = {}
    budget_nodes: dict[str, Any] = {}
    champions: dict[str, dict[int, str | None]] = defaultdict(dict)  # text by round
    wall = 0.0
    for node, process in zip(config.nodes, processes, strict=True):
        name = node.name
        if process is None:
            budget_nodes[name], nodes[name] = _failed_node(
                node, quotas[name], caps[name], unreadable[name]
            )
            continue
        champions[name] = _copy_rounds(name, process, run_dir, merge)
        events.extend(process.events)
        calls.extend(process.calls)
        summary = process.summary
        if summary is not None:
            nodes[name] = summary.nodes[name]
            budget_nodes[name] = summary.budget["nodes"][name]
            wall = max(wall, float(summary.budget.get("wall_seconds", 0.0)))
            continue
        budget_nodes[name], nodes[name] = _unfinished_node(
            node, process, quotas[name], caps[name], len(merge.round_archives[name])
        )
    for name, fields in (extra or {}).items():
        if name in nodes:
            node = nodes[name]
            nodes[name] = attrs.evolve(
                node,
                pid=fields.get("pid") if node.pid is None else node.pid,
                extra={**{k: v for k, v in fields.items() if k != "pid"}, **node.extra},
            )
    events = _one_decision_per_round(events)
    return JoinedProcesses(
        nodes=nodes,
        budget_nodes=budget_nodes,
        wall_seconds=wall,
        champions=champions,
        events=events,
        calls=calls,
    )


def _read_processes(
    config: RunConfig, run_dir: RunDir, extra: Mapping[str, Mapping[str, Any]] | None
) -> tuple[list[NodeProcess | None], dict[str, str]]:
    """Every node's process directory, read and checked (:func:`read_node_process`), in the
    order of ``config.nodes``: ``None`` for a process ``extra`` says ``failed`` whose files
    cannot be read, with why by node name.

    Raises:
        ConfigError: A node's files are damaged or incomplete, and its process did not fail.
    """
    processes: list[NodeProcess | None] = []
    unreadable: dict[str, str] = {}
    for node in config.nodes:
        try:
            processes.append(read_node_process(run_dir.process_path(node.name), node.name))
        except ConfigError as exc:
            # A process the launcher saw fail may have failed on its own damaged files: the
            # others are merged and it is reported with nothing of it, not the whole run lost.
            if "failed" not in (extra or {}).get(node.name, {}):
                raise
            processes.append(None)
            unreadable[node.name] = str(exc)
    return processes, unreadable


def _failed_node(
    node: NodeConfig, quota: int | None, caps: NodeCaps, unreadable: str
) -> tuple[dict[str, Any], NodeSummary]:
    """The budget and summary entries of a node whose process failed and whose files cannot
    be read (``unreadable`` says why): nothing of it is merged, and it is marked ``stopped``."""
    budget_node = {
        **NodeUsage().to_json(),
        "quota": quota,
        "model": node.operator,
        "caps": attrs.asdict(caps),
    }
    summary_node = NodeSummary(
        operator=node.operator,
        model=node.operator,
        calls=0,
        attempts=0,
        quota=quota,
        rounds_completed=0,
        champion=None,
        stopped=f"its process failed and its files cannot be read "
        f"({unreadable}): nothing of it is merged",
    )
    return budget_node, summary_node


def _copy_rounds(
    name: str, process: NodeProcess, run_dir: RunDir, merge: RunMerge
) -> dict[int, str | None]:
    """Copies node ``name``'s round files into ``run_dir`` and hands their archives to
    ``merge``; returns each round's champion text (``None`` for a round without)."""
    champions: dict[int, str | None] = {}
    for path, data in process.rounds:
        target = run_layout.node_dir(run_dir.path, name) / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        merge.add_round(name, data["round"], data["archive"])
        champions[data["round"]] = (data.get("champion") or {}).get("text")
    return champions


def _unfinished_node(
    node: NodeConfig, process: NodeProcess, quota: int | None, caps: NodeCaps, rounds_completed: int
) -> tuple[dict[str, Any], NodeSummary]:
    """The budget and summary entries of a node whose process ended without a summary, from
    its last checkpoint (the node is marked ``stopped``)."""
    name = node.name
    state = (process.checkpoint or {}).get("nodes", {}).get(name, {})
    usage = {**NodeUsage().to_json(), **(state.get("usage") or {})}
    budget_node = {**usage, "quota": quota, "model": node.operator, "caps": attrs.asdict(caps)}
    summary_node = NodeSummary(
        operator=node.operator,
        model=node.operator,
        calls=usage["calls"],
        attempts=usage["attempts"],
        quota=quota,
        rounds_completed=rounds_completed,
        champion=None,
        stopped=f"its process ended without finishing (see {process.path}/node.log)",
    )
    return budget_node, summary_node


def _one_decision_per_round(events: list[dict]) -> list[dict]:
    """The processes' logs with each round's allocation decision once (every process made it)
    and without the peers' reports it was made from (they stay in each process's log). The
    decision kept says whether every process made the same one (``agreed``): one that did
    not hear from a peer in time kept its last quota instead."""
    decisions: dict[int, list[dict]] = defaultdict(list)
    for event in events:
        if event.get("event") == EventKind.ALLOCATION:
            decisions[event["round"]].append(event)
    if not decisions:
        return events
    merged = []
    for event in events:
        kind = event.get("event")
        if kind == EventKind.ALLOCATION_REPORT:
            continue
        if kind == EventKind.ALLOCATION:
            made = decisions.pop(event["round"], None)
            if made is None:
                continue
            full = [d for d in made if not d.get("kept")]
            first = full[0] if full else made[0]
            agreed = all(not d.get("kept") and d["quotas"] == first["quotas"] for d in made)
            event = {**first, "agreed": agreed}
        merged.append(event)
    return merged
