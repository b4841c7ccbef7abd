"""The Core War domain: Redcode warriors evaluated in multi-warrior battles, as in DRQ and DEI.

A candidate fights all of its node's opponents at once, in one core, for ``rounds`` rounds with
pMARS placement (random from the core's seed, the candidate's position relative to the others
changes every round) and a first mover that rotates round by round. Its fitness is DEI's
survival share: per cycle, its share of the living warriors, times the number of warriors N,
averaged over the cycle limit and the rounds, so it lies in ``[0, N]`` and a full-length tie of
everyone is 1.0. Its descriptors are DRQ's: total spawned processes (``tsp``) and memory
coverage (``mc``), averaged over rounds, plus two static ones (``opcodes``, ``length``).

Defaults are the paper's MARS (core 8000, 80000 cycles, 8000 processes, length 100, distance
100) and 20 rounds per evaluation. The C simulator runs a 12-warrior, 20-round evaluation in
about 0.2-0.3 s, so the offline default run (4 nodes x 40 calls x 3 rounds plus warm starts)
finishes in about a minute on two cores and nothing had to be scaled down; ``rounds`` can be
lowered with ``--domain-option rounds=5`` for quick experiments.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
from dei_coreware.assembler import AssemblerSettings
from dei_coreware.extract import extract
from dei_coreware.generality import (
    BUNDLED_GENERALITY,
    MAX_SEED,
    WarriorSet,
    bundled_names,
    bundled_warrior,
    canonical,
    generality,
    load_warrior_set,
)
from dei_coreware.mars import MarsSettings, run_battle
from dei_coreware.mars._settings import MAX_WARRIORS
from dei_coreware.prompts import build_messages
from dei_coreware.redcode import Warrior

from dei_framework.contract.descriptors import AxisSpec, ThresholdAxis
from dei_framework.contract.domain import Domain, Evaluation, Program
from dei_framework.contract.errors import ConfigError, InvalidProgram, ReferenceOverlap
from dei_framework.contract.records import Candidate, Message

#: DRQ's bins (6 x 6 = 36 cells for the default grid) and its two alternative axes.
TSP_THRESHOLDS = (1, 10, 100, 1000, 10000)
MC_THRESHOLDS = (10, 100, 500, 1000, 4000)
OPCODE_THRESHOLDS = (4, 6, 8, 10, 14)
LENGTH_THRESHOLDS = (5, 12, 20, 35, 60)
#: Bundled warriors that make the default initial opponents: four strategies (bomber, stone,
#: replicator, core clear) that are small and kill weak candidates quickly. None of them bombs
#: with SPL: a stun bomb makes its victim's processes spawn, which would push every candidate's
#: TSP into the top rows of the grid (spawns count for the warrior that executes the SPL).
DEFAULT_OPPONENTS = ("dwarf", "stone", "paper", "clear")
#: Parsed programs kept per process (opponents are re-parsed every round).
_PARSE_CACHE = 4096
#: What to do with generality warriors that are also initial opponents.
OVERLAP_POLICIES = ("refuse", "drop")

logger = logging.getLogger(__name__)


def _integer(name: str, low: int) -> Any:
    def convert(value: Any) -> int:
        try:
            number = int(value)
        except (TypeError, ValueError):
            raise ConfigError(f"coreware option {name} must be an integer, got {value!r}") from None
        if number < low or (isinstance(value, float) and value != number):
            raise ConfigError(f"coreware option {name} must be an integer >= {low}, got {value!r}")
        return number

    return convert


@attrs.frozen(kw_only=True)
class CorewarOptions:
    """The domain's options (``--domain-option KEY=VALUE``, ``[domain_options]``, ``--human-set``).

    Attributes:
        coresize: Core size (``-s``).
        cycles: Cycle limit of a round (``-c``).
        processes: Most processes per warrior (``-p``).
        maxlength: Most instructions per warrior (``-l``).
        mindistance: Least distance between warriors (``-d``).
        rounds: Rounds per evaluation battle (the paper's 20).
        human_set: Folder of ``.red`` files for generality (default: the bundled
            ``warriors/generality`` folder, disjoint from the default opponents).
        generality_rounds: Rounds per one-on-one generality pairing.
        generality_overlap: ``refuse`` (default): a generality set sharing a program (same
            load image) with the initial opponents is an error; ``drop``: those warriors are
            left out of the generality set, with a warning.
        opponents: Initial opponents: a folder, ``.red`` files, or bundled names
            (``dwarf,imp``); a list or a comma-separated string. Default: four bundled ones.
    """

    coresize: int = attrs.field(default=8000, converter=_integer("coresize", 2))
    cycles: int = attrs.field(default=80000, converter=_integer("cycles", 1))
    processes: int = attrs.field(default=8000, converter=_integer("processes", 1))
    maxlength: int = attrs.field(default=100, converter=_integer("maxlength", 1))
    mindistance: int = attrs.field(default=100, converter=_integer("mindistance", 1))
    rounds: int = attrs.field(default=20, converter=_integer("rounds", 1))
    human_set: str | None = None
    generality_rounds: int = attrs.field(default=10, converter=_integer("generality_rounds", 1))
    opponents: tuple[str, ...] = attrs.field(default=DEFAULT_OPPONENTS)
    generality_overlap: str = attrs.field(default="refuse")

    @generality_overlap.validator
    def _check_overlap(self, attribute: Any, value: str) -> None:
        if value not in OVERLAP_POLICIES:
            raise ConfigError(
                f"coreware option generality_overlap must be one of "
                f"{', '.join(OVERLAP_POLICIES)}, got {value!r}"
            )

    @opponents.validator
    def _check_opponents(self, attribute: Any, value: tuple[str, ...]) -> None:
        if not isinstance(value, tuple) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"coreware option opponents must be names or paths, got {value!r}")

    @classmethod
    def from_mapping(cls, options: Mapping[str, Any]) -> CorewarOptions:
        """Builds the options from a mapping, rejecting unknown keys.

        Raises:
            ConfigError: An unknown key or an invalid value.
        """
        values = {key.replace("-", "_"): value for key, value in options.items()}
        known = {field.name for field in attrs.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ConfigError(
                f"unknown coreware option(s) {', '.join(unknown)}; "
                f"known: {', '.join(sorted(known))}"
            )
        if values.get("human_set") is not None:
            values["human_set"] = str(values["human_set"])
        if "opponents" in values:
            raw = values["opponents"]
            items = raw.split(",") if isinstance(raw, str) else list(raw)
            values["opponents"] = tuple(str(item).strip() for item in items if str(item).strip())
        try:
            built = cls(**values)
            built.mars_settings()
        except ConfigError:
            raise
        except Exception as exc:  # MarsError and attrs' own checks say what is wrong
            raise ConfigError(f"coreware options: {exc}") from None
        return built

    def mars_settings(self) -> MarsSettings:
        """The simulator settings for evaluation battles."""
        return MarsSettings(
            coresize=self.coresize,
            cycles=self.cycles,
            processes=self.processes,
            maxlength=self.maxlength,
            mindistance=self.mindistance,
            rounds=self.rounds,
        )

    def assembler_settings(self) -> AssemblerSettings:
        """The constants warriors see (``CORESIZE``, ``MAXLENGTH``...)."""
        return AssemblerSettings(
            coresize=self.coresize,
            maxprocesses=self.processes,
            maxcycles=self.cycles,
            maxlength=self.maxlength,
            mindistance=self.mindistance,
            rounds=self.rounds,
        )


def resolve_opponent_files(entries: Sequence[str]) -> list[Path]:
    """Files behind the ``opponents`` option: bundled names, ``.red`` files, or folders.

    Raises:
        ConfigError: An entry names nothing.
    """
    files: list[Path] = []
    for entry in entries:
        bundled = bundled_warrior(entry)
        path = Path(entry).expanduser()
        if bundled is not None and not path.exists():
            files.append(bundled)
        elif path.is_dir():
            found = sorted(path.glob("*.red"))
            if not found:
                raise ConfigError(f"coreware opponents: no .red files in {entry!r}")
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            names = ", ".join(bundled_names())
            raise ConfigError(
                f"coreware opponents: {entry!r} is neither a file, a folder nor a bundled "
                f"warrior ({names})"
            )
    return files


def placement_seed(seed: int, mindistance: int) -> int:
    """Maps the core's 31-bit seed into what pMARS's ``-F`` accepts."""
    return mindistance + seed % (MAX_SEED - mindistance)


def descriptor_axes() -> list[AxisSpec]:
    """The Core War axes: ``tsp`` and ``mc`` (DRQ's default grid), ``opcodes`` and ``length``.

    The domain offers them and the plugin registers them (``dei plugins`` lists them).
    """
    return [
        AxisSpec(
            name="tsp",
            axis=ThresholdAxis("tsp", TSP_THRESHOLDS),
            domain="coreware",
            description="total spawned processes (successful SPLs), mean over rounds",
        ),
        AxisSpec(
            name="mc",
            axis=ThresholdAxis("mc", MC_THRESHOLDS),
            domain="coreware",
            description="memory coverage (distinct addresses executed), mean over rounds",
        ),
        AxisSpec(
            name="opcodes",
            axis=ThresholdAxis("opcodes", OPCODE_THRESHOLDS),
            domain="coreware",
            description="distinct opcodes in the load image",
        ),
        AxisSpec(
            name="length",
            axis=ThresholdAxis("length", LENGTH_THRESHOLDS),
            domain="coreware",
            description="instructions in the load image",
        ),
    ]


class CorewarDomain(Domain):
    """Core War (ICWS'94 Redcode, pMARS-exact MARS) as a DEI domain.

    Args:
        options: Domain options (see :class:`CorewarOptions`); strings from the command line
            are converted.

    Raises:
        ConfigError: Unknown or invalid options, or opponent files that do not assemble.
    """

    name = "coreware"
    default_axes = ("tsp", "mc")
    fitness_floor = 0.0
    # Adversarial: fitness is a battle against the pool, so every round starts a fresh archive.
    lifecycle = "reset"

    def __init__(self, options: Mapping[str, Any] | None = None) -> None:
        self.settings = CorewarOptions.from_mapping(options or {})
        self._mars = self.settings.mars_settings()
        self._assembler = self.settings.assembler_settings()
        self._opponent_files = resolve_opponent_files(self.settings.opponents)
        if self.settings.human_set is not None:
            if not Path(self.settings.human_set).is_dir():
                raise ConfigError(f"--human-set {self.settings.human_set!r} is not a folder")
            if not any(Path(self.settings.human_set).glob("*.red")):
                raise ConfigError(f"--human-set {self.settings.human_set!r} holds no .red files")
        self._initial: list[str] | None = None
        # Per-process caches, rebuilt lazily in each worker (see __getstate__).
        self._parsed: dict[str, Program] = {}
        self._humans: WarriorSet | None = None
        self._images: dict[str, list[str]] | None = None  # generality warriors by load image
        self._dropped: frozenset[str] = frozenset()
        self._dropped = self._check_generality_overlap()

    # --- pickling: workers get the options, not the caches --------------------------------------

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_parsed"] = {}
        state["_humans"] = None
        state["_images"] = None
        return state

    # --- programs -------------------------------------------------------------------------------

    def parse(self, reply: str) -> Program:
        """Extracts and assembles the warrior in an operator's reply (see :mod:`.extract`).

        Raises:
            InvalidProgram: Nothing assembles (``line N: ...`` from the assembler).
        """
        cached = self._parsed.get(reply)
        if cached is not None:
            return cached
        found = extract(reply, settings=self._assembler)
        program = Program(text=found.source, data=found.warrior)
        if len(self._parsed) >= _PARSE_CACHE:
            self._parsed.clear()
        self._parsed[reply] = program
        return program

    def initial_opponents(self) -> list[str]:
        """Sources of the initial opponents (bundled warriors unless ``opponents`` is set).

        Raises:
            ConfigError: An opponent file does not assemble.
        """
        if self._initial is None:
            texts = []
            for file in self._opponent_files:
                text = file.read_text(encoding="latin-1")
                try:
                    texts.append(self.parse(text).text)
                except InvalidProgram as exc:
                    raise ConfigError(f"coreware opponent {str(file)!r}: {exc}") from None
            self._initial = texts
        return list(self._initial)

    # --- evaluation -----------------------------------------------------------------------------

    def _warrior(self, program: Program) -> Warrior:
        if isinstance(program.data, Warrior):
            return program.data
        return self.parse(program.text).data

    def battle_size(self) -> int:
        """Most warriors one battle can hold (pMARS's limit and the core's room)."""
        return min(MAX_WARRIORS, self.settings.coresize // self.settings.mindistance)

    def evaluate(self, program: Program, opponents: Sequence[Program], *, seed: int) -> Evaluation:
        """One battle of the candidate (warrior 0) against all opponents at once.

        When the opponents do not fit in one core, the most recent ones (the end of the list:
        the latest champions) are kept.
        """
        candidate = self._warrior(program)
        others = [self._warrior(o) for o in opponents]
        room = self.battle_size() - 1
        if len(others) > room:
            others = others[len(others) - room :]
        warriors = [candidate, *others]
        n = len(warriors)
        rounds = self.settings.rounds
        result = run_battle(
            warriors,
            self._mars,
            seed=placement_seed(seed, self._mars.mindistance),
            rounds=rounds,
            workers=1,
            observe=True,
        )
        cycles = self._mars.cycles
        share = sum(r.share_sum[0] for r in result.rounds) / rounds
        fitness = n * share / cycles
        descriptor = {
            "tsp": sum(r.processes_spawned[0] for r in result.rounds) / rounds,
            "mc": sum(r.memory_coverage[0] for r in result.rounds) / rounds,
            **static_descriptors(candidate),
        }
        info = {
            "warriors": n,
            "rounds": rounds,
            "score": result.scores[0],
            "wins": sum(r.winners == (0,) for r in result.rounds),
            "survived": sum(0 in r.winners for r in result.rounds),
        }
        if not math.isfinite(fitness):  # cannot happen with a sane MARS; never archive NaN
            raise InvalidProgram(f"evaluation produced a non-finite fitness {fitness!r}")
        return Evaluation(fitness=fitness, descriptor=descriptor, info=info)

    def descriptor_axes(self) -> list[AxisSpec]:
        """``tsp`` and ``mc`` (DRQ's default grid), ``opcodes`` and ``length``."""
        return descriptor_axes()

    # --- generality -----------------------------------------------------------------------------

    def warrior_set(self) -> WarriorSet:
        """The generality set (``human_set`` or the bundled ``warriors/generality``), loaded once
        per process, without the warriors ``generality_overlap=drop`` left out."""
        if self._humans is None:
            folder = self.settings.human_set or str(BUNDLED_GENERALITY)
            loaded = load_warrior_set(folder, self._assembler)
            self._humans = attrs.evolve(
                loaded,
                warriors=tuple(
                    (name, w) for name, w in loaded.warriors if name not in self._dropped
                ),
            )
        return self._humans

    def _check_generality_overlap(self) -> frozenset[str]:
        """Generality warriors that are also initial opponents (by load image), to drop.

        Raises:
            ReferenceOverlap: there are some and ``generality_overlap`` is ``refuse``.
        """
        opponents = {
            canonical(self.parse(text).data): file.name
            for text, file in zip(self.initial_opponents(), self._opponent_files, strict=True)
        }
        shared = {
            name: opponents[canonical(warrior)]
            for name, warrior in self.warrior_set().warriors
            if canonical(warrior) in opponents
        }
        self._humans = None
        if not shared:
            return frozenset()
        pairs = ", ".join(f"{name} (= opponent {other})" for name, other in sorted(shared.items()))
        folder = self.settings.human_set or str(BUNDLED_GENERALITY)
        if self.settings.generality_overlap == "refuse":
            raise ReferenceOverlap(
                f"the generality set {folder} shares {len(shared)} program(s) with the initial "
                f"opponents: {pairs}; a champion trained against them would look more general "
                "than it is. Use a generality set without them, other opponents, or "
                "--domain-option generality_overlap=drop to leave them out of the generality set"
            )
        logger.warning(
            "coreware: left %d warrior(s) out of the generality set %s because the initial "
            "opponents include them: %s",
            len(shared),
            folder,
            pairs,
        )
        return frozenset(shared)

    def generality_reference(self) -> list[str]:
        """Canonical load images (see :func:`~dei_coreware.generality.canonical`) of the
        generality set actually used."""
        return [canonical(warrior) for _, warrior in self.warrior_set().warriors]

    def fitness_scale(self, opponents: int) -> float:
        """N, the warriors in a battle against ``opponents`` opponents (fitness lies in
        ``[0, N]``); opponents beyond the core's room are left out of a battle."""
        return float(1 + min(opponents, self.battle_size() - 1))

    def generality_report(self, program: Program):
        """Generality with its details (opponents used and skipped, scores per pairing)."""
        humans = self.warrior_set()
        settings = attrs.evolve(self._mars, rounds=self.settings.generality_rounds)
        return generality(
            self._warrior(program),
            humans.warriors,
            settings,
            rounds=self.settings.generality_rounds,
            skipped=len(humans.skipped),
        )

    def generality(self, program: Program) -> float | None:
        """Share of the generality set the program beats or ties one-on-one."""
        humans = self.warrior_set()
        if not humans.warriors:
            return None
        return self.generality_report(program).share

    def generality_outcomes(self, program: Program) -> dict[str, bool] | None:
        """Per generality warrior (file name), whether the program beats or ties it."""
        if not self.warrior_set().warriors:
            return None
        return {
            name: mine >= theirs for name, mine, theirs in self.generality_report(program).outcomes
        }

    def reference_matches(self, program: Program) -> list[str]:
        """Generality warriors (file names) with the program's load image."""
        if self._images is None:
            images: dict[str, list[str]] = {}
            for name, warrior in self.warrior_set().warriors:
                images.setdefault(canonical(warrior), []).append(name)
            self._images = images
        return list(self._images.get(canonical(self._warrior(program)), ()))

    # --- prompts and options --------------------------------------------------------------------

    def messages(
        self,
        kind: str,
        *,
        parent: Candidate | None = None,
        others: Sequence[Candidate] = (),
        feedback: str | None = None,
    ) -> list[Message]:
        """Chat messages for LLM operators (see :mod:`.prompts`)."""
        return build_messages(
            kind, parent=parent, others=others, feedback=feedback, options=self.settings
        )

    def options(self) -> dict[str, Any]:
        """The resolved options, as recorded in the run's config."""
        data = attrs.asdict(self.settings)
        data["opponents"] = list(data["opponents"])
        return data


def static_descriptors(warrior: Warrior) -> dict[str, float]:
    """Descriptors read off the load image: distinct opcodes and length."""
    return {
        "opcodes": float(len({ins.opcode for ins in warrior.instructions})),
        "length": float(len(warrior)),
    }
