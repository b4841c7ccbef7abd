"""Third-party search components: an selector, an archive and a sharing policy.

* ``best-first`` selector: always mutates the best elite (others drawn uniformly).
* ``coarse`` archive: a grid that keeps only the first axis (one cell per bin of it).
* ``peers-as-opponents`` sharing: publishes the two best elites; received ones only become
  opponents.
"""

from __future__ import annotations

import attrs

from dei_framework import (
    Admit,
    ArchiveSpec,
    DescriptorSpace,
    GridArchive,
    ParentSelector,
    SelectorSpec,
    SharingSpec,
    hookimpl,
)


class BestFirst(ParentSelector):
    name = "best-first"

    def select(self, archive, rng, count):
        occupied = list(archive)
        best = archive.best()
        return [best, *(occupied[int(i)] for i in rng.integers(len(occupied), size=count - 1))]


class CoarseArchive(GridArchive):
    kind = "coarse"

    def __init__(self, *, space, qd_offset=0.0, seed=None):
        super().__init__(space=DescriptorSpace(space.axes[:1]), qd_offset=qd_offset, seed=seed)


@attrs.frozen
class PeersAsOpponents:
    name: str = "peers-as-opponents"
    shares: bool = True

    def select(self, archive):
        return sorted(archive, key=lambda elite: -elite.fitness)[:2]

    def on_receive(self, champion):
        return Admit.OPPONENTS


@hookimpl
def dei_parent_selectors():
    return [
        SelectorSpec(
            name="best-first",
            factory=lambda ctx: BestFirst(),
            description="mutate the best elite (tests)",
        )
    ]


@hookimpl
def dei_archives():
    return [
        ArchiveSpec(
            name="coarse",
            factory=lambda ctx: CoarseArchive,
            description="one cell per bin of the first axis (tests)",
        )
    ]


@hookimpl
def dei_sharing_policies():
    return [
        SharingSpec(
            name="peers-as-opponents",
            factory=lambda ctx: PeersAsOpponents(),
            description="publish two, admit as opponents only (tests)",
        )
    ]
