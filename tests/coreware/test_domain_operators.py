"""The offline operators: always text, mostly valid, deterministic, and really different."""

from __future__ import annotations

import asyncio

import pytest
from dei_coreware.domain import CorewarDomain
from dei_coreware.generality import BUNDLED
from dei_coreware.operators import GPOperator, TemplateOperator
from dei_coreware.operators.templates import ARCHETYPES, read_tag, write_archetype

from dei_framework.contract.errors import ConfigError, InvalidProgram
from dei_framework.contract.operators import OperatorRequest, OperatorSettings
from dei_framework.contract.records import Candidate
from dei_framework.plugin.manager import load_plugins

PARENTS = [
    Candidate(id=f"p-{file.stem}", text=file.read_text(), fitness=1.0)
    for file in sorted(BUNDLED.glob("*/*.red"))
]


@pytest.fixture(scope="module")
def domain() -> CorewarDomain:
    return CorewarDomain({"rounds": 2})


def requests(count: int) -> list[OperatorRequest]:
    out = []
    for seed in range(count):
        if seed % 5 == 0:
            out.append(OperatorRequest(key=f"k{seed}", kind="new", messages=[], seed=seed))
        else:
            parent = PARENTS[seed % len(PARENTS)]
            others = [PARENTS[(seed + 3) % len(PARENTS)]]
            out.append(
                OperatorRequest(
                    key=f"k{seed}",
                    kind="mutate",
                    messages=[],
                    parent=parent,
                    others=others,
                    seed=seed,
                )
            )
    return out


def validity(operator, domain: CorewarDomain, count: int = 300) -> float:
    valid = 0
    for request in requests(count):
        text = asyncio.run(operator.propose(request)).text
        assert isinstance(text, str) and text.strip()
        try:
            domain.parse(text)
            valid += 1
        except InvalidProgram:
            pass
    return valid / count


@pytest.mark.parametrize("operator", [GPOperator(), TemplateOperator()], ids=["gp", "templates"])
def test_operators_write_mostly_valid_warriors(operator, domain) -> None:
    # Measured: both are at 100%; the bar leaves room for deliberate rough edits later.
    assert validity(operator, domain) >= 0.95


@pytest.mark.parametrize("operator", [GPOperator(), TemplateOperator()], ids=["gp", "templates"])
def test_operators_are_deterministic_in_the_seed(operator) -> None:
    batch = requests(40)
    first = [operator.write(r) for r in batch]
    assert first == [operator.write(r) for r in batch]
    assert len(set(first)) > 30


def test_gp_mutations_stay_close_to_the_parent(domain) -> None:
    gp = GPOperator()
    parent = PARENTS[[p.id for p in PARENTS].index("p-dwarf")]
    sizes = []
    for seed in range(50):
        text = gp.write(
            OperatorRequest(key="k", kind="mutate", messages=[], parent=parent, seed=seed)
        )
        sizes.append(len(domain.parse(text).data))
    assert min(sizes) >= 1 and max(sizes) <= 4 + 3 and sum(sizes) / len(sizes) < 6


def test_gp_survives_a_parent_that_does_not_assemble(domain) -> None:
    broken = Candidate(id="x", text="mov 1 2 3", fitness=0.0)
    text = GPOperator().write(
        OperatorRequest(key="k", kind="mutate", messages=[], parent=broken, seed=1)
    )
    domain.parse(text)


def test_every_archetype_assembles_and_runs_alone(domain) -> None:
    import random

    rng = random.Random(0)
    for name, archetype in ARCHETYPES.items():
        for _ in range(8):
            params = archetype.draw(rng, 8000)
            text = write_archetype(name, params, 8000)
            assert read_tag(text) == (name, params)
            program = domain.parse(text)
            assert 0.0 <= domain.evaluate(program, [], seed=3).fitness <= 1.0


def test_templates_reparameterise_their_own_warriors() -> None:
    templates = TemplateOperator()
    parent_text = write_archetype("dwarf", {"step": 4, "bomb": 0, "decoys": 0, "spl": 0}, 8000)
    parent = Candidate(id="p", text=parent_text, fitness=1.0)
    kinds = []
    for seed in range(60):
        child = templates.write(
            OperatorRequest(key="k", kind="mutate", messages=[], parent=parent, seed=seed)
        )
        name, params = read_tag(child)
        kinds.append(name)
        if name == "dwarf":
            changed = sum(
                params[k] != v for k, v in {"step": 4, "bomb": 0, "decoys": 0, "spl": 0}.items()
            )
            assert changed <= 2
    assert 0.6 < kinds.count("dwarf") / len(kinds) < 1.0  # mostly re-draws, sometimes a switch


def test_operators_cover_different_cells(domain) -> None:
    """Different priors: the cells their new warriors land in differ."""
    from dei_framework.contract.descriptors import DescriptorSpace

    axes = {spec.name: spec.axis for spec in domain.descriptor_axes()}
    space = DescriptorSpace([axes["tsp"], axes["mc"]])
    opponents = [domain.parse(t) for t in domain.initial_opponents()]
    cells = {}
    for label, operator in (("gp", GPOperator()), ("templates", TemplateOperator())):
        found = set()
        for seed in range(40):
            text = operator.write(OperatorRequest(key="k", kind="new", messages=[], seed=seed))
            evaluation = domain.evaluate(domain.parse(text), opponents, seed=9)
            found.add(space.cell(evaluation.descriptor))
        cells[label] = found
    assert len(cells["gp"]) >= 4 and len(cells["templates"]) >= 4
    assert cells["gp"] != cells["templates"]


def test_plugin_registers_domain_operators_and_cli() -> None:
    registry = load_plugins()
    assert registry.domain("coreware").factory({}).name == "coreware"
    for name in ("gp", "templates"):
        spec = registry.operator(name)
        assert spec.offline and spec.domains == ("coreware",)
    from dei_coreware import plugin

    commands = plugin.dei_cli_commands()
    assert all(getattr(c, "name", None) == "coreware" for c in commands)


def test_families_write_valid_warriors_of_their_own_archetypes_only(domain) -> None:
    from dei_coreware.operators.families import FAMILIES, FamilyOperator

    seen: dict[str, set[str]] = {}
    for name, archetypes in FAMILIES.items():
        operator = FamilyOperator(archetypes, label=name)
        assert validity(operator, domain) >= 0.95
        for seed in range(60):
            text = operator.write(OperatorRequest(key="k", kind="new", messages=[], seed=seed))
            tag = read_tag(text)
            assert tag is not None and tag[0] in archetypes
            seen.setdefault(name, set()).add(tag[0])
        assert seen[name] == set(archetypes)  # every archetype of the family comes up
    # Different priors: no two families share an archetype.
    listed = [a for archetypes in FAMILIES.values() for a in archetypes]
    assert len(listed) == len(set(listed))


def test_families_are_registered_but_not_in_the_offline_default() -> None:
    from dei_framework.runtime.config.resolve import default_operators

    plugins = load_plugins()
    for name in ("bombers", "papers", "scanners", "imps"):
        assert plugins.operator(name).offline
    assert default_operators(plugins, "coreware") == ["gp", "templates"]


def test_a_family_mutation_is_deterministic_and_stays_close_to_its_parent() -> None:
    from dei_coreware.operators.families import FamilyOperator

    operator = FamilyOperator(("dwarf",), label="bombers")
    parent = Candidate(
        id="p",
        text=operator.write(OperatorRequest(key="k", kind="new", messages=[], seed=1)),
        fitness=1.0,
    )
    request = OperatorRequest(key="k", kind="mutate", messages=[], parent=parent, seed=5)
    assert operator.write(request) == operator.write(request)
    children = [
        operator.write(OperatorRequest(key="k", kind="mutate", messages=[], parent=parent, seed=s))
        for s in range(20)
    ]
    # A re-drawn constant can come out the same (a bomb kind has two values): mostly new.
    assert sum(child != parent.text for child in children) >= 15
    assert len(set(children)) > 10


def test_gp_strength_scales_the_edits_and_one_is_the_operator_as_it_was(domain) -> None:
    batch = requests(60)
    plain = [GPOperator().write(r) for r in batch]
    assert [GPOperator(strength=1.0).write(r) for r in batch] == plain
    strong = [GPOperator(strength=3.0).write(r) for r in batch]
    mutated = [i for i, r in enumerate(batch) if r.kind == "mutate"]
    # From-scratch calls ignore the strength; mutations change more of their parent.
    assert all(strong[i] == plain[i] for i, r in enumerate(batch) if r.kind == "new")
    assert sum(strong[i] != plain[i] for i in mutated) > len(mutated) // 2
    assert validity(GPOperator(strength=2.0), domain, count=100) >= 0.95
    spec = load_plugins().operator("gp")
    assert spec.ladder_option == "strength"
    with pytest.raises(ConfigError, match="strength must be a positive number"):
        spec.factory(OperatorSettings(spec="gp", node="n", options={"strength": 0}, domain=domain))


def test_family_strength_re_rolls_more_and_one_is_the_family_as_it_was() -> None:
    from dei_coreware.operators.families import FAMILIES, FamilyOperator

    for name in FAMILIES:
        plain, strong = (FamilyOperator(FAMILIES[name], label=name, strength=s) for s in (1.0, 3.0))
        parent = Candidate(
            id="p",
            text=plain.write(OperatorRequest(key="k", kind="new", messages=[], seed=2)),
            fitness=1.0,
        )
        batch = [
            OperatorRequest(key="k", kind="mutate", messages=[], parent=parent, seed=s)
            for s in range(30)
        ]
        as_before = FamilyOperator(FAMILIES[name], label=name)
        assert [plain.write(r) for r in batch] == [as_before.write(r) for r in batch]
        assert [strong.write(r) for r in batch] != [plain.write(r) for r in batch], name
    assert load_plugins().operator("bombers").ladder_option == "strength"
