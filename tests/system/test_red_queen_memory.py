"""Red Queen memory is equal between conditions: over a 10-round run, every node of a Homo
ensemble keeps its own champions exactly as a Solo node does, although it also fights the
champions its peers send (they sit in a window of their own and evict nothing of it)."""

from __future__ import annotations

from midway import events

TOY_ARGS = [
    "--domain",
    "toy",
    "--operator",
    "toy-random",
    "--eval-workers",
    "0",
    "--progress",
    "quiet",
    "--no-report",
    "--rounds",
    "10",
    "--seed",
    "5",
]


def rounds_by_node(out) -> dict[str, list[dict]]:
    """Each node's ``round`` events, in round order."""
    by_node: dict[str, list[dict]] = {}
    for event in events(out):
        if event["event"] == "round":
            by_node.setdefault(event["node"], []).append(event)
    return by_node


def own_memory_rule_holds(rounds: list[dict]) -> list[list[int]]:
    """Checks the own-champion memory of one node round by round and returns it.

    With a window of 20 own champions and 10 rounds nothing may leave: round r fights every own
    champion of rounds < r, except one that was a warm-start copy of a program already in the
    pool (its champion's operator is ``initial``, ``own:...`` or ``peer:...``), which the pool
    keeps once.
    """
    memory = []
    expected: list[int] = []
    for event in rounds:
        own = [o for o in event["opponents"] if o["source"] == "own"]
        assert all(o["node"] == event["node"] for o in own), own
        assert sorted(o["round"] for o in own) == expected, (event["node"], event["round"])
        memory.append(expected)
        champion = event["champion"]
        already_held = champion["operator"] == "initial" or champion["operator"].startswith(
            ("own:", "peer:")
        )
        expected = expected if already_held else [*expected, event["round"]]
    return memory


def test_homo_nodes_keep_the_same_own_champion_memory_as_solo(toy_env, cli, tmp_path) -> None:
    solo, homo = tmp_path / "solo", tmp_path / "homo"
    cli("dei-run", *TOY_ARGS, "--nodes", "1", "--budget", "200", "--out", str(solo), env=toy_env)
    cli("dei-run", *TOY_ARGS, "--nodes", "4", "--budget", "200", "--out", str(homo), env=toy_env)
    (solo_rounds,) = rounds_by_node(solo).values()
    assert len(solo_rounds) == 10
    solo_memory = own_memory_rule_holds(solo_rounds)
    assert len(solo_memory[-1]) >= 5  # the rule was exercised on a long lineage
    homo_rounds = rounds_by_node(homo)
    assert len(homo_rounds) == 4
    for node, node_rounds in homo_rounds.items():
        assert len(node_rounds) == 10, node
        assert len(own_memory_rule_holds(node_rounds)[-1]) >= 3, node
    # ...while the ensemble nodes also fought their peers' champions, more than one round's.
    last = [e for node_rounds in homo_rounds.values() for e in node_rounds if e["round"] == 9]
    for event in last:
        peers = {(o["node"], o["round"]) for o in event["opponents"] if o["source"] == "peer"}
        assert len(peers) > 3, event["node"]
