"""A toy domain and operator that exercise the whole DEI loop without Core War.

A program is a line of up to 8 integers in ``[0, 99]``, e.g. ``"3 14 15 92"``. Its fitness is
how many opponents it out-sums (plus a bonus for sums near 200), its descriptors are its length
and its largest number. Cheap, deterministic and picklable, like a real domain must be.
"""

from __future__ import annotations

import asyncio
import os
import random
import re
import time
from collections.abc import Sequence
from pathlib import Path

from dei_framework import hookimpl
from dei_framework.contract.descriptors import AxisSpec, ThresholdAxis, UniformAxis
from dei_framework.contract.domain import Domain, DomainSpec, Evaluation, Program
from dei_framework.contract.errors import InvalidProgram
from dei_framework.contract.operators import (
    Operator,
    OperatorReply,
    OperatorRequest,
    OperatorSpec,
    TransientOperatorFailure,
)


class ToyDomain(Domain):
    name = "toy"
    default_axes = ("length", "peak")

    def __init__(self, options=None) -> None:
        self._options = dict(options or {})

    def parse(self, reply: str) -> Program:
        match = re.search(r"PROGRAM:([^\n]*)", reply)
        body = match.group(1) if match else reply
        tokens = body.split()
        if not tokens or len(tokens) > 8 or not all(t.isdigit() and int(t) < 100 for t in tokens):
            raise InvalidProgram(f"line 1: expected 1-8 integers in [0, 99], got {body[:40]!r}")
        return Program(text=" ".join(str(int(t)) for t in tokens), data=[int(t) for t in tokens])

    def evaluate(self, program: Program, opponents: Sequence[Program], *, seed: int) -> Evaluation:
        if self._options.get("eval_seconds"):  # a slow evaluation, on request (benchmarks)
            time.sleep(float(self._options["eval_seconds"]))
        total = sum(program.data)
        beaten = sum(total > sum(o.data) for o in opponents)
        closeness = 1.0 - min(abs(total - 200), 200) / 200
        descriptor = {"length": len(program.data), "peak": max(program.data)}
        descriptor.pop(self._options.get("omit_axis", ""), None)  # a buggy domain, on request
        # A noisy measurement, on request: Gaussian noise that depends on the seed and the text
        # only (deterministic, like a battle with a given seed).
        noise = float(self._options.get("noise", 0.0))
        if noise:
            noise *= random.Random(f"{seed}:{program.text}").gauss(0.0, 1.0)
        # And noise from the seed alone, the same for every program measured with that seed
        # (a Core War seed fixes everyone's placements): an easy or a hard seed.
        seed_effect = float(self._options.get("seed_effect", 0.0))
        if seed_effect:
            noise += seed_effect * random.Random(f"seed:{seed}").gauss(0.0, 1.0)
        return Evaluation(
            fitness=beaten / max(len(opponents), 1) + closeness + noise, descriptor=descriptor
        )

    def descriptor_axes(self):
        return [
            AxisSpec(name="length", axis=ThresholdAxis("length", (2, 4, 6, 8))),
            AxisSpec(name="peak", axis=UniformAxis("peak", 0, 100, 5)),
        ]

    def initial_opponents(self) -> list[str]:
        return ["10 10", "50 50 50"]

    def messages(self, kind, *, parent=None, others=(), feedback=None):
        # The ``improve`` option words mutation prompts differently (replay tests change it).
        improve = self._options.get("improve", "Improve")
        task = "Write" if kind == "new" else f"{improve} {parent.text}"
        return [{"role": "system", "content": "Toy."}, {"role": "user", "content": task}]

    def generality(self, program: Program) -> float | None:
        gate = self._options.get("generality_gate")
        if gate:  # a slow generality, on request: it waits until the file exists
            with open(f"{gate}.started", "w") as started:
                started.write(str(os.getpid()))
            deadline = time.monotonic() + 60
            while not os.path.exists(gate) and time.monotonic() < deadline:
                time.sleep(0.01)
        return sum(program.data) / 800


#: Environment variables that set ``hold_until`` and ``hold_after`` where the options do not.
HOLD_UNTIL, HOLD_AFTER = "DEI_TOY_HOLD_UNTIL", "DEI_TOY_HOLD_AFTER"


class ToyOperator(Operator):
    """Random integers; mutation changes, adds or drops one. Occasionally writes junk."""

    offline = True

    def __init__(
        self,
        label: str = "toy-random",
        max_in_flight: int = 4,
        delay: float = 0.0,
        down_until: str = "",
        jitter: float = 0.0,
        strength: float = 1.0,
        hold_until: str = "",
        hold_after: int = 0,
    ) -> None:
        self.label = label
        self.strength = strength
        self.max_in_flight = max_in_flight
        self.delay = delay
        self.jitter = jitter  # extra random (unseeded) latency: replies finish in any order
        # A provider that is down until the test creates this file (an event, not a clock).
        self.down_until = Path(down_until) if down_until else None
        # After hold_after calls, each call waits until the test creates this file: a run
        # that cannot finish before the test has done what it must mid-run (kill it, say).
        self.hold_until = Path(hold_until) if hold_until else None
        self.hold_after = hold_after
        self.calls = 0

    async def propose(self, request: OperatorRequest) -> OperatorReply:
        self.calls += 1
        if self.hold_until is not None and self.calls > self.hold_after:
            while not self.hold_until.exists():
                await asyncio.sleep(0.01)
        if self.delay or self.jitter:
            await asyncio.sleep(self.delay + random.random() * self.jitter)
        if self.down_until is not None and not self.down_until.exists():
            raise TransientOperatorFailure("provider down", attempts=3)
        rng = random.Random(request.seed)
        if rng.random() < 0.05:
            return OperatorReply(text="I cannot help with that.")
        if request.kind == "new" or request.parent is None:
            numbers = [rng.randrange(100) for _ in range(rng.randint(1, 8))]
        else:
            numbers = [int(t) for t in request.parent.text.split()]
            for _ in range(max(1, round(self.strength))):  # mutation strength: edits
                move = rng.random()
                if move < 0.3 and len(numbers) < 8:
                    numbers.insert(rng.randrange(len(numbers) + 1), rng.randrange(100))
                elif move < 0.5 and len(numbers) > 1:
                    numbers.pop(rng.randrange(len(numbers)))
                else:
                    numbers[rng.randrange(len(numbers))] = rng.randrange(100)
        return OperatorReply(text="PROGRAM: " + " ".join(map(str, numbers)))


class StuckOperator(Operator):
    """Always the same program: after its first call it can never fill a new cell."""

    offline = True
    label = "toy-stuck"
    max_in_flight = 4

    async def propose(self, request: OperatorRequest) -> OperatorReply:
        return OperatorReply(text="PROGRAM: 7 7")


@hookimpl
def dei_domains():
    return [DomainSpec(name="toy", factory=ToyDomain, description="toy integers (tests)")]


@hookimpl
def dei_operators():
    return [
        OperatorSpec(
            name="toy-random",
            factory=lambda ctx: ToyOperator(
                delay=float(ctx.options.get("delay", 0.0)),
                jitter=float(ctx.options.get("jitter", 0.0)),
                down_until=str(ctx.options.get("down_until", "")),
                strength=float(ctx.options.get("strength", 1.0)),
                # tests/midway.py's kill_midway holds a run it is about to kill this way
                hold_until=str(ctx.options.get("hold_until", os.environ.get(HOLD_UNTIL, ""))),
                hold_after=int(ctx.options.get("hold_after", os.environ.get(HOLD_AFTER, 0))),
            ),
            domains=("toy",),
            description="random integers (tests)",
            ladder_option="strength",
            ladder_range=(0.5, 2.0),
        ),
        OperatorSpec(
            name="toy-stuck",
            factory=lambda ctx: StuckOperator(),
            domains=("toy",),
            description="the same program every call (tests)",
        ),
    ]
