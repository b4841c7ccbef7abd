"""No untyped event or summary crosses a public function of the core: a run's events and
summary are the typed records of :mod:`dei_framework.contract.run_summary` (``RunSummary``,
``RoundEvent``, ``EvaluatedEvent`` ...) wherever a public signature hands one over."""

from __future__ import annotations

import ast
import re
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "dei_framework"

#: Parameters that carry an event or a summary.
CARRIERS = {"event", "summary", "stats"}
#: Functions whose return value is a run's summary or an event.
GIVERS = re.compile(r"^(run|run_async|summary|\w+_summary|event|merge_node_processes)$")
#: An annotation that says nothing of the record's fields.
UNTYPED = re.compile(r"\b(dict|Mapping)\[str, (Any|object)\]")


def _public_functions():
    for path in sorted(CORE.rglob("*.py")):
        # Private modules too: their public names are re-exported (hooks, Admission ...).
        relative = path.relative_to(CORE)
        tree = ast.parse(path.read_text())
        stack = [(tree, "")]
        while stack:
            node, prefix = stack.pop()
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.ClassDef) and not child.name.startswith("_"):
                    stack.append((child, f"{prefix}{child.name}."))
                elif isinstance(
                    child, (ast.FunctionDef, ast.AsyncFunctionDef)
                ) and not child.name.startswith("_"):
                    yield f"{relative}:{child.lineno} {prefix}{child.name}", child


def test_no_public_signature_hands_over_an_untyped_event_or_summary() -> None:
    untyped = []
    for where, function in _public_functions():
        arguments = function.args.args + function.args.kwonlyargs
        for argument in arguments:
            if (
                argument.arg in CARRIERS
                and argument.annotation is not None
                and UNTYPED.search(ast.unparse(argument.annotation))
            ):
                untyped.append(f"{where}({argument.arg}: {ast.unparse(argument.annotation)})")
        if (
            GIVERS.match(function.name)
            and function.returns is not None
            and UNTYPED.search(ast.unparse(function.returns))
        ):
            untyped.append(f"{where} -> {ast.unparse(function.returns)}")
    assert untyped == [], "untyped events or summaries:\n" + "\n".join(untyped)


def test_the_rule_catches_an_untyped_summary(tmp_path) -> None:
    # The scan above must see what it forbids: an untyped summary in a public signature.
    tree = ast.parse("def run_summary(summary: dict[str, Any]) -> dict[str, Any]: ...")
    function = tree.body[0]
    assert GIVERS.match(function.name)
    assert UNTYPED.search(ast.unparse(function.returns))
    assert UNTYPED.search(ast.unparse(function.args.args[0].annotation))
