"""Generality: the share of a fixed set of human warriors a champion beats or ties one-on-one.

DEI and DRQ measure how general a champion is against warriors it never trained against: a
set of human-written warriors (317 in the papers), each fought one-on-one for R rounds. The
champion *beats or ties* an opponent when its pMARS score (3 per win, 1 per tie) is at least
the opponent's. Seeds derive from the opponent's file name, so a champion's generality does not
depend on the order of the set, on the run, or on the machine.
"""

from __future__ import annotations

import difflib
import zlib
from collections.abc import Sequence
from pathlib import Path

import attrs
from dei_coreware.assembler import AssemblerSettings, AssemblyError, assemble_file
from dei_coreware.mars import MarsSettings, run_battle
from dei_coreware.redcode import Warrior

#: The bundled warriors, in two disjoint folders: ``opponents/`` (the default initial opponents)
#: and ``generality/`` (the default generality set), so that by default no champion is measured
#: against a warrior it trained on.
BUNDLED = Path(__file__).resolve().parent / "warriors"
BUNDLED_OPPONENTS = BUNDLED / "opponents"
BUNDLED_GENERALITY = BUNDLED / "generality"
#: Largest seed pMARS's 32-bit generator takes.
MAX_SEED = 2**31 - 1


@attrs.frozen
class WarriorSet:
    """Warriors read from a folder of ``.red`` files.

    Attributes:
        folder: Where they were read from.
        warriors: ``(file name, load image)`` pairs, sorted by file name.
        skipped: ``(file name, assembler error)`` of the files that do not assemble.
    """

    folder: str
    warriors: tuple[tuple[str, Warrior], ...]
    skipped: tuple[tuple[str, str], ...] = ()


@attrs.frozen
class GeneralityResult:
    """A champion's generality against a warrior set.

    Attributes:
        share: ``beaten_or_tied / used`` (0 when the set is empty).
        beaten_or_tied: Opponents whose score the champion matched or exceeded.
        used: Opponents fought (the set's assembling warriors).
        skipped: Files of the set that do not assemble (left out).
        outcomes: ``(file name, champion score, opponent score)`` per opponent.
    """

    share: float
    beaten_or_tied: int
    used: int
    skipped: int
    outcomes: tuple[tuple[str, int, int], ...] = ()


def load_warrior_set(folder: str | Path, settings: AssemblerSettings) -> WarriorSet:
    """Assembles every ``*.red`` file of a folder, skipping (and recording) those that fail.

    Raises:
        FileNotFoundError: ``folder`` is not a directory.
    """
    path = Path(folder)
    if not path.is_dir():
        raise FileNotFoundError(f"warrior set {str(path)!r} is not a directory")
    warriors: list[tuple[str, Warrior]] = []
    skipped: list[tuple[str, str]] = []
    for file in sorted(path.glob("*.red")):
        try:
            warriors.append((file.name, assemble_file(file, settings=settings)))
        except (AssemblyError, OSError) as exc:
            skipped.append((file.name, str(exc)))
    return WarriorSet(folder=str(path), warriors=tuple(warriors), skipped=tuple(skipped))


def bundled_warrior(name: str) -> Path | None:
    """The bundled ``.red`` file called ``name`` (in either folder), or ``None``."""
    for folder in (BUNDLED_OPPONENTS, BUNDLED_GENERALITY):
        if (folder / f"{name}.red").is_file():
            return folder / f"{name}.red"
    return None


def bundled_names() -> list[str]:
    """Names of every bundled warrior."""
    return sorted(p.stem for p in BUNDLED.glob("*/*.red"))


def canonical(warrior: Warrior) -> str:
    """A warrior's load image as text: what two copies of one program share whatever their
    comments, labels or layout (used to tell whether two sets share a program)."""
    return f"ORG {warrior.start}\n" + "\n".join(str(ins) for ins in warrior.instructions)


#: Shape similarity (see :func:`shape_similarity`) from which two warriors count as near
#: duplicates. A dwarf and the same loop with one more line (a SPL bomb) score 0.89; two
#: warriors that share only a common ``JMP``/``DAT`` tail score well below 0.8.
NEAR_DUPLICATE = 0.8


def shape(warrior: Warrior) -> list[str]:
    """A warrior's code with its constants left out: ``OPCODE.MODIFIER`` and the two addressing
    modes of each instruction, in order (step sizes, distances and bomb values do not count)."""
    return [f"{i.opcode}.{i.modifier} {i.a_mode}{i.b_mode}" for i in warrior.instructions]


def shape_similarity(first: Warrior, second: Warrior) -> float:
    """How alike two warriors' code is, constants aside: ``2 M / (len1 + len2)`` where ``M``
    counts the instructions of the longest matching blocks of their :func:`shape`
    (:class:`difflib.SequenceMatcher`'s ratio). 1.0: the same code modulo constants."""
    return difflib.SequenceMatcher(None, shape(first), shape(second), autojunk=False).ratio()


def near_duplicates(first: Warrior, second: Warrior) -> bool:
    """Two warriors that are the same program (same load image) or almost the same code
    (:func:`shape_similarity` at least :data:`NEAR_DUPLICATE`, e.g. one strategy with other
    constants or one instruction more)."""
    return (
        canonical(first) == canonical(second) or shape_similarity(first, second) >= NEAR_DUPLICATE
    )


def pairing_seed(name: str, mindistance: int, salt: int = 0) -> int:
    """The placement seed of the pairing with warrior file ``name`` (stable across runs)."""
    digest = zlib.crc32(f"{salt}/{name}".encode())
    return mindistance + digest % (MAX_SEED - mindistance)


def generality(
    champion: Warrior,
    opponents: Sequence[tuple[str, Warrior]],
    settings: MarsSettings,
    *,
    rounds: int,
    skipped: int = 0,
    salt: int = 0,
) -> GeneralityResult:
    """Fights ``champion`` one-on-one against each opponent and counts the beaten or tied.

    The champion is warrior 0; the MARS alternates the first mover every round, so with an
    even ``rounds`` both sides move first equally often.

    Args:
        champion: The warrior to test.
        opponents: ``(name, warrior)`` pairs (a :attr:`WarriorSet.warriors`).
        settings: Simulator settings (core size, cycle limit...).
        rounds: Rounds per pairing.
        skipped: Files of the set left out (recorded in the result).
        salt: Mixed into the seeds (0 reproduces the published figures).
    """
    outcomes = []
    beaten = 0
    for name, warrior in opponents:
        result = run_battle(
            [champion, warrior],
            settings,
            rounds=rounds,
            workers=1,
            seed=pairing_seed(name, settings.mindistance, salt),
            observe=False,
        )
        mine, theirs = result.scores
        beaten += mine >= theirs
        outcomes.append((name, mine, theirs))
    used = len(outcomes)
    return GeneralityResult(
        share=beaten / used if used else 0.0,
        beaten_or_tied=beaten,
        used=used,
        skipped=skipped,
        outcomes=tuple(outcomes),
    )
