"""Champion-sharing policies: what a node publishes at a round's end (``select``) and what it
admits of what it receives (``on_receive``).

Whatever the policy, a received program is parsed and re-evaluated locally before it can enter
the opponent pool or the archive: a peer's claimed fitness and descriptor are never trusted.

With the ``continual`` archive lifecycle a round is a migration interval: what ``select`` picks
are the round's *migrants* (the built-in policies take the ``migrants`` fittest elites of the
archive), and the receiver offers each, once evaluated, to its archive; the opponent pool of a
static objective never grows, so :attr:`Admit.OPPONENTS` has no effect there.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

import attrs

from dei_framework.contract.context import FactoryContext
from dei_framework.contract.errors import ConfigError
from dei_framework.contract.records import Candidate
from dei_framework.contract.registry import Kind
from dei_framework.search.archives import ArchiveBase


class Admit(enum.Flag):
    """Where a received champion may go (combine with ``|``)."""

    NOTHING = 0
    #: Into the Red Queen opponent pool (its peer window; ``reset`` lifecycle only).
    OPPONENTS = enum.auto()
    #: Into the archive, once re-evaluated locally: into empty cells of the fresh archive
    #: (``reset``), or competing for its cell like any candidate (``continual``).
    CELLS = enum.auto()


@runtime_checkable
class SharingPolicy(Protocol):
    """How one node shares champions.

    Attributes:
        name: The policy's registered name.
        shares: ``False`` when the policy neither publishes nor admits anything (no transport
            is started for it).
    """

    name: str
    shares: bool

    def select(self, archive: ArchiveBase) -> list[Candidate]:
        """The elites to publish from a finished round's archive (the migrants, with the
        ``continual`` lifecycle)."""

    def on_receive(self, champion: Candidate) -> Admit:
        """Where a received (already parsed, not yet re-evaluated) champion may go."""


@attrs.frozen(kw_only=True)
class TopKSharing:
    """Publishes the ``top_k`` best elites of a round; admits received ones to ``admit``.

    Attributes:
        name: The registered name.
        top_k: How many of the round's best elites to publish (0 publishes nothing).
        admit: Where received champions may go.
    """

    name: str
    top_k: int = 1
    admit: Admit = Admit.OPPONENTS | Admit.CELLS

    @property
    def shares(self) -> bool:
        return self.top_k > 0 or bool(self.admit)

    def select(self, archive: ArchiveBase) -> list[Candidate]:
        ranked = sorted(archive, key=lambda elite: -elite.fitness)
        return ranked[: self.top_k]

    def on_receive(self, champion: Candidate) -> Admit:
        return self.admit


#: ``factory(ctx)`` builds a policy; ``ctx`` holds the ``[sharing_options]`` table.
SharingFactory = Callable[[FactoryContext], SharingPolicy]


@attrs.frozen(kw_only=True)
class SharingSpec:
    """A sharing policy a plugin registers through ``dei_sharing_policies``.

    Attributes:
        name: What users type after ``--sharing``.
        factory: ``factory(ctx)`` builds one node's policy; ``ctx`` is a
            :class:`~dei_framework.contract.context.FactoryContext`, the mapping of the
            ``[sharing_options]`` table with the run's plugins and seed.
        description: One line for ``dei plugins``.
    """

    name: str
    factory: SharingFactory
    description: str = ""


#: The sharing policies: ``registry.lookup(SHARING_POLICIES, name)`` is a :class:`SharingSpec`.
SHARING_POLICIES: Kind[SharingSpec] = Kind("dei_sharing_policies")


def _count(policy: str, options: Mapping[str, Any], key: str, default: int) -> int:
    """A positive integer option of a built-in policy."""
    value = options.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"sharing {policy}: {key} must be a positive integer, got {value!r}")
    return value


def _top_k(options: Mapping[str, Any]) -> SharingPolicy:
    if "k" in options and "migrants" in options and options["k"] != options["migrants"]:
        raise ConfigError("sharing top-k: k and migrants name the same count; give one")
    key = "migrants" if "migrants" in options else "k"
    return TopKSharing(name="top-k", top_k=_count("top-k", options, key, 3))


def _publishing(name: str, admit: Admit) -> SharingFactory:
    """A built-in policy publishing the ``migrants`` fittest elites (default 1: the champion)."""

    def factory(options: Mapping[str, Any]) -> SharingPolicy:
        return TopKSharing(name=name, top_k=_count(name, options, "migrants", 1), admit=admit)

    return factory


#: The policies the core itself registers (through its built-in plugin).
BUILTIN_POLICIES = (
    SharingSpec(
        name="champion",
        factory=_publishing("champion", Admit.OPPONENTS | Admit.CELLS),
        description="publish the round champion (option migrants: the k best); receivers add "
        "it to opponents and cells",
    ),
    SharingSpec(
        name="top-k",
        factory=_top_k,
        description="publish the k best elites of the round (option k or migrants, default 3)",
    ),
    SharingSpec(
        name="opponents-only",
        factory=_publishing("opponents-only", Admit.OPPONENTS),
        description="publish the champion; receivers only add it to their opponents",
    ),
    SharingSpec(
        name="none",
        factory=lambda options: TopKSharing(name="none", top_k=0, admit=Admit.NOTHING),
        description="share nothing: independent nodes (a baseline)",
    ),
)
