"""Chat prompts for LLM operators: the task, a sample of the data, and the elites to improve.

The reply format asked for (one expression in one fenced block) is what
:mod:`dei_symreg.extract` looks for first; prose around it is tolerated.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from dei_framework.contract.records import Candidate, Message
from dei_symreg.expr import FUNCTIONS

if TYPE_CHECKING:
    from dei_symreg.domain import SymRegDomain

SYSTEM = """\
You are an expert in symbolic regression. You write one closed-form mathematical expression \
that predicts y from the input variables.

Rules:
- Variables: {variables}. No other names.
- Operators: + - * / ^ (power) and unary minus; numeric constants such as 0.5 or 1e-3; pi.
- Functions: {functions}, each applied to one argument in parentheses.
- At most {max_nodes} nodes (variables, constants, operators, calls) and {max_depth} levels.
- The expression must be finite at every data point: no log or sqrt of negative values, no
  division by zero.
- Fitness is 1 / (1 + NMSE) on the training data (1 = perfect, 0.5 = no better than the mean).

Answer with the expression alone inside one fenced code block, for example:
```
x0 * sin(x1) + 0.5
```"""


def _data_table(domain: SymRegDomain) -> str:
    dataset = domain.dataset
    rows = min(domain.prompt_points, len(dataset.y_train))
    header = " | ".join([*dataset.variables, "y"])
    lines = [header]
    for i in range(rows):
        values = [*dataset.x_train[i], dataset.y_train[i]]
        lines.append(" | ".join(f"{v:.4g}" for v in values))
    return "\n".join(lines)


def _describe(parent: Candidate) -> str:
    descriptor = ", ".join(f"{k} {v:g}" for k, v in parent.descriptor.items())
    return f"{parent.text}\n  (fitness {parent.fitness:.4f}; {descriptor})"


def messages(
    domain: SymRegDomain,
    kind: str,
    *,
    parent: Candidate | None = None,
    others: Sequence[Candidate] = (),
    feedback: str | None = None,
) -> list[Message]:
    """The chat messages for one request (system prompt first)."""
    limits = domain.limits
    system = SYSTEM.format(
        variables=", ".join(domain.variables),
        functions=", ".join(FUNCTIONS),
        max_nodes=limits.max_nodes,
        max_depth=limits.max_depth,
    )
    context = domain.options().get("description") or ""
    low, high = domain.options()["low"], domain.options()["high"]
    parts = [
        *([f"Context: {context}"] if context else []),
        f"Inputs are sampled uniformly in [{low}, {high}). "
        f"{len(domain.dataset.y_train)} training points; the first rows:",
        _data_table(domain),
    ]
    if kind == "mutate" and parent is not None:
        parts.append(
            "Improve this expression (a better fit, or a different structure that "
            "fits as well):\n" + _describe(parent)
        )
        if others:
            parts.append(
                "Other good expressions, for inspiration or to combine:\n"
                + "\n".join(_describe(o) for o in others)
            )
    else:
        parts.append("Write a new expression that fits these data.")
    if feedback:
        parts.append(f"A previous attempt from this expression was rejected: {feedback}")
    parts.append("Reply with one expression in one fenced code block.")
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(parts)}]
