"""What a node's round starts with, before any call: the warm start (opponents, then seed
programs, evaluated into the archive) and the received champions the sharing policy lets in."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import attrs

from dei_framework.contract.kinds import CandidateSource
from dei_framework.contract.records import Candidate
from dei_framework.search._slots import NodeSlots
from dei_framework.search._work import PEER, WARM, WorkItem
from dei_framework.search.opponents import OpponentPool
from dei_framework.search.sharing import Admit, SharingPolicy


def warm_start(
    received: Iterable[Candidate],
    *,
    round_index: int,
    continual: bool,
    pool: OpponentPool,
    seeds: Sequence[Candidate],
    sharing: SharingPolicy,
    slots: NodeSlots,
) -> tuple[list[WorkItem], list[Candidate]]:
    """The items a round starts with, in admission order, and the received champions.

    ``reset``: the (fresh) archive is warmed with the whole opponent pool, and received
    champions may join the pool. ``continual``: only the first round is warmed (with the
    initial programs); the archive carries over, and received champions go to cells only.

    Args:
        received: Champions from peers, already parsed and checked.
        round_index: The round.
        continual: The archive lifecycle is ``continual``.
        pool: The opponent pool; received champions the policy admits as opponents join it.
        seeds: The seed programs.
        sharing: Decides where each received champion may go.
        slots: Makes the items.

    Returns:
        The warm items (pool opponents, then seeds), then one ``"peer"`` item per received
        champion admitted to cells or opponents (``source`` ``CandidateSource.PEER_EXCLUDED``
        when kept out of cells); and the received champions the sharing policy admitted anywhere.
    """
    # A persistent archive holds every earlier warm start already (the objective is fixed).
    own = [] if continual and round_index > 0 else pool.opponents()
    # A fresh archive's start; a seed that became an opponent (reset: a champion of this
    # node) is warmed once, as the opponent.
    fighting = {opponent.text for opponent in own}
    seeds = (
        []
        if continual and round_index > 0
        else [seed for seed in seeds if seed.text not in fighting]
    )
    accepted = []
    peers: list[tuple[Candidate, bool]] = []
    for champion in received:
        admit = sharing.on_receive(champion)
        if continual:  # a static objective: the opponent pool never grows
            admit &= Admit.CELLS
        if not admit:
            continue
        accepted.append(champion)
        if Admit.OPPONENTS in admit:
            pool.add_champion(attrs.evolve(champion, source=CandidateSource.PEER))
        peers.append((champion, Admit.CELLS in admit))
    items = []
    for index, opponent in enumerate(own):
        label = opponent.source
        if opponent.source != CandidateSource.INITIAL:
            label = f"{opponent.source}:{opponent.node}"
        items.append(
            slots.item(
                round_index,
                f"w{index}",
                kind=WARM,
                order=len(items),
                program=attrs.evolve(opponent, operator=label),
            )
        )
    for index, seed in enumerate(seeds, start=len(own)):  # ids go on from the opponents'
        items.append(
            slots.item(round_index, f"w{index}", kind=WARM, order=len(items), program=seed)
        )
    for index, (champion, to_cells) in enumerate(peers):
        program = attrs.evolve(
            champion,
            operator=f"peer:{champion.node}",
            source=CandidateSource.received(to_cells=to_cells),
        )
        items.append(
            slots.item(round_index, f"p{index}", kind=PEER, order=len(items), program=program)
        )
    return items, accepted
