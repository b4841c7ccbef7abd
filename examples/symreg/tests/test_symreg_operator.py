"""The offline ``symreg-gp`` operator: valid, bounded, reproducible proposals."""

from __future__ import annotations

import asyncio

import attrs
import pytest
from dei_symreg.domain import SymRegDomain
from dei_symreg.expr import size
from dei_symreg.operator import GPOperator, create

from dei_framework import Candidate, Operator, OperatorRequest, OperatorSettings
from dei_framework.contract.errors import ConfigError


@pytest.fixture(scope="module")
def small_domain() -> SymRegDomain:
    return SymRegDomain({"max_nodes": 15, "max_depth": 6})


def propose(operator: Operator, **request) -> str:
    request = OperatorRequest(key="n/r0/s0", messages=[], **request)
    return asyncio.run(operator.propose(request)).text


def parent(domain: SymRegDomain, text: str) -> Candidate:
    program = domain.parse(text)
    return Candidate(id=text, text=program.text, fitness=0.5)


def test_every_proposal_parses_within_the_limits(small_domain):
    gp = GPOperator(small_domain)
    elites = [parent(small_domain, t) for t in ("x0 * sin(x1) + 1", "exp(x0) - x1^2", "x1")]
    for seed in range(400):
        kind = "new" if seed % 4 == 0 else "mutate"
        text = propose(
            gp,
            kind=kind,
            seed=seed,
            parent=elites[seed % 3] if kind == "mutate" else None,
            others=elites,
        )
        tree = small_domain.parse(text).data  # raises if invalid
        assert size(tree) <= 15


def test_proposals_are_reproducible_and_vary(small_domain):
    gp = GPOperator(small_domain)
    p = parent(small_domain, "x0 * sin(x1) + 1")
    first = [propose(gp, kind="mutate", seed=s, parent=p) for s in range(30)]
    assert first == [propose(gp, kind="mutate", seed=s, parent=p) for s in range(30)]
    assert len(set(first)) > 10
    assert sum(t != p.text for t in first) >= 25


def test_crossover_brings_in_material_from_others():
    domain = SymRegDomain()
    gp = GPOperator(domain)
    p, donor = parent(domain, "x0 + x1"), parent(domain, "tanh(x0 * x1)")
    texts = {propose(gp, kind="mutate", seed=s, parent=p, others=[donor]) for s in range(200)}
    assert any("tanh" in t for t in texts)


def test_factory_reads_options_and_checks_the_domain(small_domain):
    settings = OperatorSettings(
        spec="symreg-gp",
        node="node-0",
        options={"temperature": 2.0, "concurrency": 3, "api_base": "ignored"},
        domain=small_domain,
    )
    gp = create(settings)
    assert (gp.temperature, gp.max_in_flight, gp.label, gp.offline) == (2.0, 3, "symreg-gp", True)
    with pytest.raises(ConfigError, match="temperature"):
        create(
            OperatorSettings(
                spec="symreg-gp", node="n", options={"temperature": 0}, domain=small_domain
            )
        )
    with pytest.raises(ConfigError, match="only with --domain symreg"):
        create(attrs.evolve(settings, domain=object()))
