"""Champion-sharing policies: what a node publishes at a round's end and what it does with
what it receives.

Whatever the policy, a received program is re-evaluated locally before it can enter the
archive: a peer's claimed fitness and descriptor are never trusted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from dei_framework.archive import Elite, GridArchive
from dei_framework.errors import ConfigError


@attrs.frozen(kw_only=True)
class SharingPolicy:
    """How one node shares champions.

    Attributes:
        name: The policy's registered name.
        top_k: How many of the round's best elites to publish (0 publishes nothing).
        to_opponents: Received champions join the opponent pool (cross-model Red Queen pressure).
        seed_empty_cells: Received champions, once re-evaluated, fill empty archive cells.
    """

    name: str
    top_k: int = 1
    to_opponents: bool = True
    seed_empty_cells: bool = True

    def select(self, archive: GridArchive) -> list[Elite]:
        """The elites to publish from a finished round's archive, best first."""
        ranked = sorted(archive, key=lambda elite: -elite.fitness)
        return ranked[: self.top_k]


#: ``factory(options)`` builds a policy; options come from the ``[sharing]`` config table.
SharingFactory = Callable[[Mapping[str, Any]], SharingPolicy]


@attrs.frozen(kw_only=True)
class SharingSpec:
    """A sharing policy a plugin registers through ``dei_sharing_policies``."""

    name: str
    factory: SharingFactory
    description: str = ""


def _top_k(options: Mapping[str, Any]) -> SharingPolicy:
    k = options.get("k", 3)
    if not isinstance(k, int) or k < 1:
        raise ConfigError(f"sharing top-k: k must be a positive integer, got {k!r}")
    return SharingPolicy(name="top-k", top_k=k)


#: The policies the core itself registers (through its built-in plugin).
BUILTIN_POLICIES = (
    SharingSpec(
        name="champion",
        factory=lambda options: SharingPolicy(name="champion"),
        description="publish the round champion; receivers add it to opponents and empty cells",
    ),
    SharingSpec(
        name="top-k",
        factory=_top_k,
        description="publish the k best elites of the round (option k, default 3)",
    ),
    SharingSpec(
        name="opponents-only",
        factory=lambda options: SharingPolicy(name="opponents-only", seed_empty_cells=False),
        description="publish the champion; receivers only add it to their opponents",
    ),
    SharingSpec(
        name="none",
        factory=lambda options: SharingPolicy(
            name="none", top_k=0, to_opponents=False, seed_empty_cells=False
        ),
        description="share nothing: independent nodes (a baseline)",
    ),
)
