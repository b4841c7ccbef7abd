"""Plugin classes declare what the core may use besides their required methods
(``capabilities``); the core reads the declaration, never which methods a class overrides."""

from __future__ import annotations

import pytest
from dei_numeric.domain import NumericDomain
from dei_numeric.operators import GaussianOperator, IsoLineOperator

from dei_framework import Domain, ImprovementSelector, Operator, ParentSelector, UniformSelector


def test_a_declared_capability_needs_its_methods() -> None:
    with pytest.raises(TypeError, match="declares 'array' but does not implement propose_genomes"):

        class NoGenomes(Operator):
            capabilities = frozenset({"array"})

            async def propose(self, request):
                raise NotImplementedError

    with pytest.raises(
        TypeError, match="declares 'array' but does not implement evaluate_genomes, genome_texts"
    ):

        class HalfArray(NumericDomain):
            capabilities = frozenset({"array"})
            evaluate_genomes = Domain.evaluate_genomes


def test_an_unknown_capability_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(TypeError, match=r"unknown vector \(known: array, batch\)"):

        class Typo(Operator):
            capabilities = frozenset({"vector"})

            async def propose(self, request):
                raise NotImplementedError


def test_an_undeclared_override_is_refused_naming_the_declaration_to_write() -> None:
    # capabilities were once inferred from the overrides (before 0.2)
    with pytest.raises(
        TypeError, match=r"without declaring them: set capabilities = frozenset\(\{'batch'\}\)"
    ):

        class Legacy(Operator):
            async def propose(self, request):
                raise NotImplementedError

            async def propose_batch(self, requests):
                return []


def test_a_subclass_inherits_the_declaration() -> None:
    class Tuned(GaussianOperator):
        def propose_genomes(self, requests):
            return super().propose_genomes(requests)

    class Curious(ImprovementSelector):
        def tell(self, parent, child, status):
            super().tell(parent, child, status)

    assert Tuned.capabilities == {"batch", "array"} and Curious.capabilities == {"learns"}


def test_the_reference_classes_declare_what_they_implement() -> None:
    assert GaussianOperator.capabilities == IsoLineOperator.capabilities == {"batch", "array"}
    assert NumericDomain.capabilities == {"array"}
    assert ImprovementSelector.capabilities == {"learns"}
    assert UniformSelector.capabilities == ParentSelector.capabilities == frozenset()
    assert Operator.capabilities == Domain.capabilities == frozenset()


@pytest.mark.parametrize(("declared", "batched"), [({"array"}, False), ({"batch", "array"}, True)])
def test_the_driver_batches_an_operators_calls_only_when_it_declares_batch(
    tmp_path, monkeypatch, declared, batched
) -> None:
    from dei_numeric import operators

    from dei_framework import NodeConfig, RunConfig, run

    batches: list[int] = []
    singles: list[str] = []

    class Watched(GaussianOperator):
        capabilities = frozenset(declared)

        async def propose(self, request):
            singles.append(request.key)
            return await super().propose(request)

        async def propose_batch(self, requests):
            batches.append(len(requests))
            return await super().propose_batch(requests)

    monkeypatch.setattr(operators, "GaussianOperator", Watched)
    run(
        RunConfig(
            domain="numeric",
            budget=40,
            rounds=1,
            seed=1,
            eval_workers=0,
            array_path=False,
            nodes=[NodeConfig(name="a", operator="gaussian")],
        ),
        tmp_path / "run",
    )
    if batched:  # a turn's calls in one propose_batch (which answers through propose_genomes)
        assert sum(batches) == 40 and singles == []
    else:
        assert batches == [] and len(singles) == 40
