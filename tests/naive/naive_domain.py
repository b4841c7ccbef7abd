"""FunSearch's online bin packing, written as a domain author would from the docs alone: the
model writes ``priority(item, bins)``, and ``evaluate`` simply ``exec``s it in its own process.

Nothing here protects the run from the program; the core's sandbox must (``executes_code``).
"""

from __future__ import annotations

import ast
import os
import random
import re
from collections.abc import Sequence

from dei_framework import hookimpl
from dei_framework.contract.descriptors import AxisSpec, ThresholdAxis, UniformAxis
from dei_framework.contract.domain import Domain, DomainSpec, Evaluation, Program
from dei_framework.contract.errors import InvalidProgram
from dei_framework.contract.operators import Operator, OperatorReply, OperatorRequest, OperatorSpec

CAPACITY = 100
FENCE = re.compile(r"```(?:python)?\n(.*?)```", re.S)


def _instances(seed: int) -> list[list[int]]:
    rng = random.Random(seed)
    return [[rng.randint(5, 60) for _ in range(40)] for _ in range(3)]


class NaiveBinPacking(Domain):
    name = "naive"
    default_axes = ("lines", "first_fit_share")
    fitness_floor = -1.0
    executes_code = True

    def __init__(self, options=None) -> None:
        self.options = dict(options or {})

    def parse(self, reply: str) -> Program:
        match = FENCE.search(reply)
        text = (match.group(1) if match else reply).strip()
        try:
            tree = ast.parse(text)
        except SyntaxError as exc:
            raise InvalidProgram(f"line {exc.lineno}: {exc.msg}") from None
        if not any(
            isinstance(node, ast.FunctionDef) and node.name == "priority" for node in tree.body
        ):
            raise InvalidProgram("line 1: no function priority(item, bins)")
        return Program(text=text)

    def evaluate(self, program: Program, opponents: Sequence[Program], *, seed: int) -> Evaluation:
        namespace: dict = {}
        exec(program.text, namespace)  # the naive part: the model's code, in this process
        priority = namespace["priority"]
        used, first_fit = 0, 0
        total = 0
        for items in _instances(seed):
            bins: list[int] = []
            for item in items:
                fits = [i for i, free in enumerate(bins) if free >= item]
                if not fits:
                    bins.append(CAPACITY - item)
                    continue
                scores = priority(item, [bins[i] for i in fits])
                best = fits[max(range(len(fits)), key=lambda j: float(scores[j]))]
                first_fit += best == fits[0]
                total += 1
                bins[best] -= item
            used += len(bins)
        lower = sum(sum(items) for items in _instances(seed)) / CAPACITY
        return Evaluation(
            fitness=lower / used - 1.0,
            descriptor={
                "lines": float(program.text.count("\n") + 1),
                "first_fit_share": first_fit / max(total, 1),
            },
        )

    def descriptor_axes(self):
        return [
            AxisSpec(name="lines", axis=ThresholdAxis("lines", (2, 4, 8, 16))),
            AxisSpec(name="first_fit_share", axis=UniformAxis("first_fit_share", 0, 1, 5)),
        ]

    def initial_opponents(self) -> list[str]:
        return []

    def messages(self, kind, *, parent=None, others=(), feedback=None):
        task = ("Write" if kind == "new" else f"Improve:\n{parent.text}\n") + (
            " a Python function priority(item, bins) returning one score per bin."
        )
        return [{"role": "system", "content": "Bin packing."}, {"role": "user", "content": task}]


@hookimpl
def dei_domains():
    return [
        DomainSpec(
            name="naive",
            factory=NaiveBinPacking,
            description="online bin packing, priority() exec'd in-process",
        )
    ]


#: Replies a model may give that harm a naive run (each is invalid under a sandbox).
HOSTILE = {
    "loop": "def priority(item, bins):\n    while True:\n        pass\n",
    "bomb": "def priority(item, bins):\n    hoard = []\n    while True:\n"
    "        hoard.append(bytes(10**8))\n",
    "suicide": "import os, signal\ndef priority(item, bins):\n"
    "    os.kill(os.getpid(), signal.SIGKILL)\n",
    "parricide": "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n"
    "def priority(item, bins):\n    return [0.0] * len(bins)\n",
    "system": "import os\nos.system('rm -f {canary}; echo pwned > {canary}.outside')\n"
    "raise SystemExit(0)\ndef priority(item, bins):\n    return [0.0] * len(bins)\n",
    "import": "import nosuchmodule\ndef priority(item, bins):\n    return [0.0] * len(bins)\n",
}
SYNTAX_ERROR = "def priority(item, bins)\n    return [0.0] * len(bins)\n"


def ordinary(rng: random.Random) -> str:
    """A plain heuristic: best fit, worst fit or first fit, weighted, of 2 to 12 lines."""
    weight = rng.randint(1, 9)
    score = rng.choice([f"-(free - item) * {weight}", f"free * {weight}", "0.0"])
    padding = "".join(f"    step{i} = {i}\n" for i in range(rng.randint(0, 10)))
    return f"def priority(item, bins):\n{padding}    return [{score} for free in bins]\n"


class NaiveOperator(Operator):
    """Seeded: three replies in ten are hostile (or, with ``hostile=False``, a syntax error in its
    place); the others are ordinary heuristics."""

    offline = True

    def __init__(self, label: str, *, hostile: bool, canary: str = "") -> None:
        self.label = label
        self.max_in_flight = 4
        self.hostile = hostile
        self.canary = canary or os.devnull

    async def propose(self, request: OperatorRequest) -> OperatorReply:
        rng = random.Random(request.seed)
        if rng.random() < 0.3:
            kind = rng.choice(sorted(HOSTILE))
            text = HOSTILE[kind].format(canary=self.canary) if self.hostile else SYNTAX_ERROR
        else:
            text = ordinary(rng)
        return OperatorReply(text=f"```python\n{text}```")


@hookimpl
def dei_operators():
    return [
        OperatorSpec(
            name=name,
            domains=("naive",),
            description="scripted replies (tests)",
            factory=lambda ctx, name=name: NaiveOperator(
                name, hostile=name == "naive-hostile", canary=str(ctx.options.get("canary", ""))
            ),
        )
        for name in ("naive-hostile", "naive-syntax")
    ]
