"""The ids, keys and seeds of a node's work items, and the random generator of each call slot:
every one derives from ``(run seed, node, round, slot)``, so a seeded run draws the same
whatever the timing."""

from __future__ import annotations

import hashlib

from dei_framework.contract.records import Candidate
from dei_framework.search._work import Kind, WorkItem
from dei_framework.search.slot_random import SlotGenerator, initial_states

#: Slots whose generators' starting states are computed together (one vectorised pass).
_RNG_BLOCK = 256
#: Blocks of starting states kept (the current round's and the next one's early calls).
_RNG_BLOCKS_KEPT = 8


def derive_seed(*parts: int | str) -> int:
    """A 31-bit seed derived from parts (ints or strings), stable across Python versions."""
    return _seed_of("/".join(map(str, parts)))


def _seed_of(joined: str) -> int:
    """:func:`derive_seed` of parts already joined with ``/``."""
    digest = hashlib.blake2b(joined.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & 0x7FFFFFFF


class NodeSlots:
    """Makes the work items of one node and the generators of its call slots.

    Args:
        seed: The run seed.
        node: The node's name.
    """

    def __init__(self, seed: int, node: str) -> None:
        self.seed = seed
        self.node = node
        self._eval_seeds: dict[int, int] = {}
        self._rng_blocks: dict[tuple[int, int], list[tuple[int, int]]] = {}

    def eval_seed(self, round_index: int) -> int:
        """The evaluation seed of a round: every candidate of a round meets the same
        conditions."""
        seed = self._eval_seeds.get(round_index)
        if seed is None:  # derived once per round, not once per slot
            seed = self._eval_seeds[round_index] = derive_seed(
                self.seed, self.node, round_index, "eval"
            )
        return seed

    def item(
        self,
        round_index: int,
        suffix: str,
        *,
        kind: Kind,
        order: int,
        parent: Candidate | None = None,
        others: tuple[Candidate, ...] = (),
        feedback: str | None = None,
        program: Candidate | None = None,
        inspirations: tuple[Candidate, ...] = (),
    ) -> WorkItem:
        """The work item ``suffix`` (``s17`` a call slot, ``w3`` warm, ``p0`` peer) of a
        round, with its key's seed and the round's evaluation seed. (Fields by name, not
        ``**fields``: one item per slot, and a keyword dict per call shows in the benchmark.)"""
        key = f"{self.node}/r{round_index}/{suffix}"
        return WorkItem(
            id=f"{self.node}-r{round_index}-{suffix}",
            key=key,
            node=self.node,
            round=round_index,
            order=order,
            kind=kind,
            seed=_seed_of(f"{self.seed}/{key}"),  # = derive_seed(self.seed, key)
            eval_seed=self.eval_seed(round_index),
            parent=parent,
            others=others,
            feedback=feedback,
            program=program,
            inspirations=inspirations,
        )

    def generator(self, round_index: int, slot: int, quota: int) -> SlotGenerator:
        """The generator of a call slot of a round of ``quota`` calls: it draws what
        ``np.random.default_rng`` seeded by ``(seed, node, round, slot)`` draws, for a fraction
        of the cost (see :mod:`~dei_framework.search.slot_random`)."""
        block, offset = divmod(slot, _RNG_BLOCK)
        states = self._rng_blocks.get((round_index, block))
        if states is None or offset >= len(states):  # new, or cut short by an earlier quota
            if len(self._rng_blocks) >= _RNG_BLOCKS_KEPT:
                self._rng_blocks.clear()
            start = block * _RNG_BLOCK
            end = max(slot + 1, min(start + _RNG_BLOCK, quota))
            prefix = f"{self.seed}/{self.node}/{round_index}"
            states = self._rng_blocks[round_index, block] = initial_states(
                [_seed_of(f"{prefix}/{s}") for s in range(start, end)]
            )  # derive_seed's
        return SlotGenerator(*states[offset])
