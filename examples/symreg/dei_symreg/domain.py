"""The symbolic-regression domain: find an expression that fits a dataset, in many shapes.

Fitness is ``1 / (1 + NMSE)`` on the training split, where ``NMSE = MSE / Var(y)``: 1 is a
perfect fit, 0.5 is as good as predicting the mean, and it tends to 0 for worse fits. An
expression that is not finite at every training point (``log`` of a negative number, division
by zero, overflow) gets the floor, 0. Descriptors are the expression's size (node count) and
nonlinearity (non-polynomial operations), so the archive keeps the best fit of every
complexity and kind, which is the point of quality-diversity search here.

Symbolic regression has no adversary: fitness ignores the opponents. Its runs use the
``continual`` archive lifecycle: the archive persists for the whole run, the seed expressions
(:meth:`SymRegDomain.initial_opponents`) warm the first round, and at each round's end a node's
champion migrates to its peers, which evaluate it and offer it to their own archives.
``--lifecycle reset`` restores DRQ's rounds (a fresh archive each round, warm-started with the
seeds and past champions).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dei_framework.contract.descriptors import AxisSpec, ThresholdAxis
from dei_framework.contract.domain import Domain, Evaluation, Program
from dei_framework.contract.errors import ConfigError
from dei_framework.contract.records import Candidate, Message
from dei_symreg import prompts
from dei_symreg.dataset import Dataset, make_dataset, options_with_defaults
from dei_symreg.expr import (
    Limits,
    Node,
    constants,
    depth,
    evaluate,
    nonlinearity,
    parse_expression,
    size,
    to_text,
)
from dei_symreg.extract import first_parse

#: Every domain option and its default (``[domain_options]`` or ``--domain-option KEY=VALUE``).
DEFAULT_OPTIONS: Mapping[str, Any] = {
    "target": "x0^2 * sin(x1) + 0.5*x0",
    "variables": ["x0", "x1"],
    "samples": 256,
    "test_fraction": 0.25,
    "low": -3.0,
    "high": 3.0,
    "noise": 0.0,
    "data_seed": 0,
    "max_chars": 1000,
    "max_nodes": 64,
    "max_depth": 16,
    "description": "",
    "prompt_points": 12,
}
#: Hard ceiling on ``max_nodes`` and ``max_depth``: evaluation recurses once per level.
LIMIT_CEILING = 400

#: Default binning of every descriptor the domain reports.
AXES = (
    AxisSpec(
        name="size",
        axis=ThresholdAxis("size", (3, 5, 8, 12, 17, 24, 33)),
        domain="symreg",
        description="node count: <3, 3-4, 5-7, ..., >=33",
    ),
    AxisSpec(
        name="nonlinearity",
        axis=ThresholdAxis("nonlinearity", (1, 2, 3, 4, 6)),
        domain="symreg",
        description="function calls, divisions by variables, non-integer powers",
    ),
    AxisSpec(
        name="depth",
        axis=ThresholdAxis("depth", (2, 3, 4, 5, 6, 8, 10)),
        domain="symreg",
        description="tree height",
    ),
    AxisSpec(
        name="constants",
        axis=ThresholdAxis("constants", (1, 2, 3, 4, 6)),
        domain="symreg",
        description="numeric constants",
    ),
)


class SymRegDomain(Domain):
    """Symbolic regression on a generated dataset.

    Args:
        options: Domain options (see :data:`DEFAULT_OPTIONS`); missing ones take defaults.

    Raises:
        ConfigError: an unknown option, a value out of range, or a target that does not parse.
    """

    name = "symreg"
    default_axes = ("size", "nonlinearity")
    fitness_floor = 0.0
    # Static objective: the archive persists across rounds (a round is a migration interval);
    # the seeds below warm the first round only.
    lifecycle = "continual"

    def __init__(self, options: Mapping[str, Any] | None = None) -> None:
        self._options = options_with_defaults(dict(options or {}), DEFAULT_OPTIONS)
        opts = self._options
        variables = opts["variables"]
        if isinstance(variables, str):  # --domain-option variables=x,y
            variables = [v.strip() for v in variables.split(",") if v.strip()]
        opts["variables"] = list(variables)
        try:
            self.limits = Limits(
                max_chars=int(opts["max_chars"]),
                max_nodes=int(opts["max_nodes"]),
                max_depth=int(opts["max_depth"]),
            )
            samples, points = int(opts["samples"]), int(opts["prompt_points"])
            floats = {key: float(opts[key]) for key in ("test_fraction", "low", "high", "noise")}
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"symreg: invalid option value: {exc}") from None
        for key in ("max_chars", "max_nodes", "max_depth"):
            value = getattr(self.limits, key)
            if not 1 <= value <= (10**6 if key == "max_chars" else LIMIT_CEILING):
                raise ConfigError(f"symreg: {key} out of range: {value}")
        self.dataset: Dataset = make_dataset(
            target=str(opts["target"]),
            variables=opts["variables"],
            samples=samples,
            seed=int(opts["data_seed"]),
            **floats,
        )
        self.variables: tuple[str, ...] = self.dataset.variables
        self.prompt_points = points
        # Cached views: the worker processes evaluate thousands of candidates on them.
        self._train = self.dataset.train_inputs()
        self._test = self.dataset.test_inputs()
        self._var_train = float(np.var(self.dataset.y_train)) or 1.0
        self._var_test = float(np.var(self.dataset.y_test)) or 1.0

    # --- parsing --------------------------------------------------------------------------------

    def parse_tree(self, text: str) -> Node:
        """Parses one bare expression with this domain's variables and limits."""
        return parse_expression(text, variables=self.variables, limits=self.limits)

    def parse(self, reply: str) -> Program:
        tree = first_parse(reply, self.parse_tree)
        return Program(text=to_text(tree), data=tree)

    # --- evaluation -----------------------------------------------------------------------------

    def nmse(self, tree: Node, *, held_out: bool = False) -> float:
        """Normalised mean squared error on the training (or held-out) split; ``inf`` when the
        expression is not finite at some point."""
        inputs, y, var = (
            (self._test, self.dataset.y_test, self._var_test)
            if held_out
            else (self._train, self.dataset.y_train, self._var_train)
        )
        prediction = evaluate(tree, inputs)
        if not np.all(np.isfinite(prediction)):
            return float("inf")
        with np.errstate(all="ignore"):
            error = float(np.mean((prediction - y) ** 2)) / var
        return error if np.isfinite(error) else float("inf")

    @staticmethod
    def fitness_of(nmse: float) -> float:
        """``1 / (1 + NMSE)``; 0 for an infinite error."""
        return 1.0 / (1.0 + nmse) if np.isfinite(nmse) else 0.0

    def describe(self, tree: Node) -> dict[str, float]:
        """Raw values of every descriptor axis the domain offers."""
        return {
            "size": size(tree),
            "nonlinearity": nonlinearity(tree),
            "depth": depth(tree),
            "constants": constants(tree),
        }

    def evaluate(self, program: Program, opponents: Sequence[Program], *, seed: int) -> Evaluation:
        """Fits ``program`` to the training split; ``opponents`` and ``seed`` do not matter
        (there is no adversary, and the data is fixed)."""
        tree = program.data if program.data is not None else self.parse_tree(program.text)
        train = self.nmse(tree)
        test = self.nmse(tree, held_out=True)
        return Evaluation(
            fitness=self.fitness_of(train),
            descriptor=self.describe(tree),
            info={"nmse": _finite_or_none(train), "test_nmse": _finite_or_none(test)},
        )

    def generality(self, program: Program) -> float | None:
        """Held-out fitness, ``1 / (1 + NMSE)`` on the test split: how well the fit
        generalises to points it was not selected on."""
        tree = program.data if program.data is not None else self.parse_tree(program.text)
        return self.fitness_of(self.nmse(tree, held_out=True))

    def descriptor_axes(self) -> Sequence[AxisSpec]:
        return AXES

    def initial_opponents(self) -> list[str]:
        """Seed expressions warming the first round (every round's, with ``--lifecycle reset``):
        each variable alone, and a product of the first two (never part of fitness, which has
        no adversary)."""
        seeds = list(self.variables)
        if len(self.variables) > 1:
            seeds.append(f"{self.variables[0]} * {self.variables[1]}")
        return seeds

    # --- prompts --------------------------------------------------------------------------------

    def messages(
        self,
        kind: str,
        *,
        parent: Candidate | None = None,
        others: Sequence[Candidate] = (),
        feedback: str | None = None,
    ) -> list[Message]:
        return prompts.messages(self, kind, parent=parent, others=others, feedback=feedback)

    def options(self) -> dict[str, Any]:
        return dict(self._options)


def _finite_or_none(value: float) -> float | None:
    # Event logs are strict JSON: no Infinity.
    return value if np.isfinite(value) else None
