"""The Core War domain: options, fitness, descriptors, generality, prompts and pickling."""

from __future__ import annotations

import pickle

import pytest
from dei_coreware import domain as domain_module
from dei_coreware.domain import CorewarDomain, placement_seed
from dei_coreware.generality import BUNDLED, bundled_warrior, load_warrior_set, pairing_seed
from dei_coreware.prompts import SYSTEM

from dei_framework.contract.descriptors import DescriptorSpace
from dei_framework.contract.errors import ConfigError, InvalidProgram
from dei_framework.contract.records import Candidate

IMP = "imp mov.i #0, 1\nend imp\n"
DAT = "dat #0, #0\n"
DWARF = bundled_warrior("dwarf").read_text()


@pytest.fixture(scope="module")
def domain() -> CorewarDomain:
    return CorewarDomain({"rounds": 4})


def test_options_from_the_command_line_are_converted_and_checked(tmp_path) -> None:
    built = CorewarDomain({"rounds": "6", "coresize": 8000, "generality-rounds": "2"})
    assert built.settings.rounds == 6 and built.settings.generality_rounds == 2
    assert built.options()["opponents"] == ["dwarf", "stone", "paper", "clear"]
    with pytest.raises(ConfigError, match="unknown coreware option"):
        CorewarDomain({"corsize": 8000})
    with pytest.raises(ConfigError, match="rounds must be an integer"):
        CorewarDomain({"rounds": "many"})
    with pytest.raises(ConfigError, match="mindistance"):
        CorewarDomain({"maxlength": 200, "mindistance": 100})
    with pytest.raises(ConfigError, match="neither a file"):
        CorewarDomain({"opponents": "no-such-warrior"})
    with pytest.raises(ConfigError, match="human-set"):
        CorewarDomain({"human_set": "/no/such/folder"})
    with pytest.raises(ConfigError, match="holds no .red files"):
        CorewarDomain({"human_set": str(tmp_path)})


def test_opponents_option_takes_bundled_names_files_and_folders(tmp_path) -> None:
    (tmp_path / "a.red").write_text(DAT)
    (tmp_path / "b.red").write_text(DWARF)
    assert len(CorewarDomain({"opponents": "stone,dwarf"}).initial_opponents()) == 2
    assert len(CorewarDomain({"opponents": [str(tmp_path)]}).initial_opponents()) == 2
    assert len(CorewarDomain({"opponents": str(tmp_path / "a.red")}).initial_opponents()) == 1
    (tmp_path / "bad.red").write_text("mov 1 2 3\n")
    with pytest.raises(ConfigError, match="bad.red"):
        CorewarDomain({"opponents": str(tmp_path)}).initial_opponents()


def test_bundled_warriors_assemble_with_the_required_header() -> None:
    files = sorted(BUNDLED.glob("*/*.red"))
    assert {f.stem for f in files} >= {
        "imp",
        "dwarf",
        "stone",
        "paper",
        "scanner",
        "spiral",
        "clear",
        "vampire",
        "imp-pair",
        "silk",
    }
    for file in files:
        text = file.read_text()
        assert ";name " in text and ";author DEI " in text and ";strategy " in text
    for folder in ("opponents", "generality"):
        loaded = load_warrior_set(BUNDLED / folder, CorewarDomain().settings.assembler_settings())
        assert len(loaded.warriors) == len(list((BUNDLED / folder).glob("*.red")))
        assert not loaded.skipped


def test_imp_against_a_lone_dat_scores_the_number_of_warriors(domain) -> None:
    evaluation = domain.evaluate(domain.parse(IMP), [domain.parse(DAT)], seed=7)
    assert evaluation.fitness == pytest.approx(2.0)
    assert evaluation.info["warriors"] == 2 and evaluation.info["wins"] == 4


def test_two_surviving_imps_tie_at_one(domain) -> None:
    evaluation = domain.evaluate(domain.parse(IMP), [domain.parse(IMP)], seed=7)
    assert evaluation.fitness == pytest.approx(1.0)
    assert evaluation.info["survived"] == 4 and evaluation.info["wins"] == 0


def test_alone_the_fitness_is_the_survival_share(domain) -> None:
    assert domain.evaluate(domain.parse(IMP), [], seed=1).fitness == pytest.approx(1.0)
    assert domain.evaluate(domain.parse(DAT), [], seed=1).fitness == 0.0


def test_fitness_stays_within_zero_and_n(domain) -> None:
    opponents = [domain.parse(t) for t in domain.initial_opponents()]
    for name in ("imp", "dwarf", "paper", "clear", "vampire"):
        evaluation = domain.evaluate(
            domain.parse(bundled_warrior(name).read_text()), opponents, seed=11
        )
        assert 0.0 <= evaluation.fitness <= len(opponents) + 1


def test_descriptors_count_spawns_and_coverage(domain) -> None:
    # Alone, an imp never splits and visits every cell of the core.
    imp = domain.evaluate(domain.parse(IMP), [], seed=3).descriptor
    assert imp == {"tsp": 0.0, "mc": 8000.0, "opcodes": 1.0, "length": 1.0}
    # Two SPL 1 make 1 + 2 new processes; the three cells are all it ever executes.
    tree = domain.evaluate(domain.parse("spl 1\nspl 1\njmp 0\n"), [], seed=3).descriptor
    assert tree == {"tsp": 3.0, "mc": 3.0, "opcodes": 2.0, "length": 3.0}
    dwarf = domain.evaluate(domain.parse(DWARF), [], seed=3).descriptor
    assert dwarf["tsp"] == 0.0 and dwarf["mc"] == 3.0 and dwarf["length"] == 4.0


def test_spawns_stop_at_the_process_limit() -> None:
    small = CorewarDomain({"processes": 100, "rounds": 2})
    # SPL 0 / JMP -1: every pass adds a process until the warrior has 100 of them.
    descriptor = small.evaluate(small.parse("spl 0\njmp -1\n"), [], seed=3).descriptor
    assert descriptor["tsp"] == 99.0 and descriptor["mc"] == 2.0


def test_every_axis_is_reported_and_the_default_grid_has_36_cells(domain) -> None:
    axes = {spec.name: spec.axis for spec in domain.descriptor_axes()}
    assert set(axes) == {"tsp", "mc", "opcodes", "length"}
    space = DescriptorSpace([axes[name] for name in domain.default_axes])
    assert space.cells == 36
    descriptor = domain.evaluate(domain.parse(IMP), [], seed=1).descriptor
    assert set(descriptor) == set(axes)
    assert space.cell({"tsp": 0, "mc": 9.9}) == (0, 0)
    assert space.cell({"tsp": 10000, "mc": 4000}) == (5, 5)


def test_first_mover_rotates_and_placements_follow_the_seed(domain, monkeypatch) -> None:
    seen = []
    real = domain_module.run_battle

    def spy(*args, **kwargs):
        result = real(*args, **kwargs)
        seen.append(result)
        return result

    monkeypatch.setattr(domain_module, "run_battle", spy)
    opponents = [domain.parse(DWARF), domain.parse(IMP)]
    domain.evaluate(domain.parse(IMP), opponents, seed=5)
    domain.evaluate(domain.parse(IMP), opponents, seed=6)
    first, second = seen
    assert [r.first_mover for r in first.rounds] == [0, 1, 2, 0]
    assert [r.positions for r in first.rounds] != [r.positions for r in second.rounds]


def test_same_seed_same_evaluation(domain) -> None:
    opponents = [domain.parse(t) for t in domain.initial_opponents()]
    program = domain.parse(bundled_warrior("scanner").read_text())
    one = domain.evaluate(program, opponents, seed=123)
    two = domain.evaluate(program, opponents, seed=123)
    assert one == two


def test_seeds_map_into_what_pmars_accepts() -> None:
    for seed in (0, 1, 99, 2**31 - 1, 2**31 - 102):
        assert 100 <= placement_seed(seed, 100) <= 2**31 - 1
    assert pairing_seed("a.red", 100) == pairing_seed("a.red", 100) != pairing_seed("b.red", 100)


def test_the_battle_keeps_the_latest_opponents_when_the_core_is_full() -> None:
    small = CorewarDomain({"coresize": 800, "mindistance": 100, "maxlength": 100, "rounds": 1})
    opponents = [small.parse(IMP)] * 12
    evaluation = small.evaluate(small.parse(IMP), opponents, seed=1)
    assert evaluation.info["warriors"] == 8 == small.battle_size()


def test_generality_counts_beaten_or_tied_and_skips_broken_files(tmp_path) -> None:
    (tmp_path / "dat.red").write_text(DAT)
    (tmp_path / "imp.red").write_text(IMP)
    (tmp_path / "dwarf.red").write_text(DWARF)
    (tmp_path / "broken.red").write_text("dat #0 #0\n")
    # (The bundled dwarf is a default opponent: fight others, or the set would be refused.)
    small = CorewarDomain(
        {"human_set": str(tmp_path), "generality_rounds": 6, "opponents": "stone,paper"}
    )
    report = small.generality_report(small.parse(DAT))
    # A lone DAT dies at once: it loses to the imp and the dwarf, and against another DAT
    # whoever moves first dies, so with the first mover alternating they tie on score.
    assert (report.used, report.skipped, report.beaten_or_tied) == (3, 1, 1)
    assert [mine >= theirs for _, mine, theirs in report.outcomes] == [True, False, False]
    assert small.generality(small.parse(DAT)) == pytest.approx(1 / 3)
    # The imp outlives the DAT and ties the other imp.
    assert small.generality(small.parse(IMP)) >= 2 / 3


def test_generality_defaults_to_the_bundled_warriors() -> None:
    share = CorewarDomain({"generality_rounds": 2}).generality(
        CorewarDomain().parse(bundled_warrior("clear").read_text())
    )
    assert 0.0 < share <= 1.0


def test_generality_on_the_human_set(corewar_dir) -> None:
    human = CorewarDomain(
        {"human_set": str(corewar_dir / "warriors" / "human"), "generality_rounds": 2}
    )
    loaded = human.warrior_set()
    assert len(loaded.warriors) == 316 and [name for name, _ in loaded.skipped] == ["stone.red"]
    share = human.generality(human.parse(DWARF))
    assert 0.0 < share < 1.0
    assert human.generality(human.parse(DWARF)) == share


def test_the_domain_pickles_small_and_without_caches(corewar_dir) -> None:
    human = CorewarDomain({"human_set": str(corewar_dir / "warriors" / "human")})
    human.warrior_set()
    human.parse(IMP)
    data = pickle.dumps(human)
    assert len(data) < 4000
    copy = pickle.loads(data)
    assert copy._humans is None and copy._parsed == {}
    assert copy.evaluate(copy.parse(IMP), [], seed=1).fitness == 1.0


def test_parse_returns_the_cleaned_source_and_rejects_garbage(domain) -> None:
    program = domain.parse("Here you go:\n```redcode\n;name Imp\nimp mov.i #0, 1\n```\nEnjoy.")
    assert program.text == ";name Imp\nimp mov.i #0, 1\n"
    assert domain.parse(program.text).text == program.text
    with pytest.raises(InvalidProgram, match=r"^line 2: "):
        domain.parse("```redcode\nmov 0, 1\nmov 0 1 2\n```")
    too_long = "```redcode\n" + "dat 0, 0\n" * 101 + "```"
    with pytest.raises(InvalidProgram, match="too many instructions"):
        domain.parse(too_long)


def test_prompts_carry_the_reference_the_parent_and_the_feedback(domain) -> None:
    new = domain.messages("new")
    assert [m["role"] for m in new] == ["system", "user"]
    system = new[0]["content"]
    for needle in (
        "8000",
        "ORG",
        "END",
        "SPL",
        "SNE",
        "{",
        "}",
        "<",
        ">",
        "*",
        "@",
        "#",
        "$",
        ".AB",
        "```redcode",
        "p-space",
    ):
        assert needle in system, needle
    # The example in the reference is a valid warrior.
    example = SYSTEM.split("```redcode\n", 1)[1].split("```", 1)[0]
    assert len(domain.parse(example).data) == 4
    parent = Candidate(
        id="n-r0-s1", text=DWARF, fitness=1.25, descriptor={"tsp": 0.0, "mc": 3.0, "length": 4.0}
    )
    other = Candidate(id="n-r0-s2", text=IMP, fitness=0.5, descriptor={"tsp": 12.0, "mc": 900.0})
    user = domain.messages(
        "mutate", parent=parent, others=[other], feedback="line 3: MOV needs two operands"
    )[1]["content"]
    assert DWARF.strip() in user and IMP.strip() in user
    assert "1.250" in user and "never starts extra processes" in user
    assert "about 900 distinct core cells" in user
    assert "line 3: MOV needs two operands" in user
    assert "```redcode" in user
