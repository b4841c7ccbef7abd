"""The layers of ``dei_framework/``: each package imports only the packages below it, and no
module imports another in a cycle — found by reading the source with ``ast``.

The rule: module A depends on module B when A imports B (or a name from B) anywhere: at module
level, inside a function, or under ``if TYPE_CHECKING:``. A deferred or typing-only import
hides a dependency from the interpreter, not from a reader: the two modules still cannot be
understood, tested or moved apart, so it counts. ``from dei_framework.pkg import X`` with ``X``
a submodule is a dependency on that submodule. Imports from outside the package (plugins,
third parties) are not part of this graph.
"""

from __future__ import annotations

import ast
from pathlib import Path

import dei_framework

PACKAGE = Path(dei_framework.__file__).parent
NAME = "dei_framework"

#: The layers, bottom first: a package may import its own modules and those of the packages
#: before it, never one after it (docs/architecture.md, "Layout", says what each holds).
LAYERS = (
    "contract",
    "search",
    "evaluation",
    "net",
    "plugin",
    "analysis",
    "runtime",
    "experiment",
    "report",
    "app",
)


def _name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_graph() -> dict[str, set[str]]:
    """``module -> modules it imports`` (dotted names) for every module of the package."""
    paths = {_name(path): path for path in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                edges.update(alias.name for alias in node.names if alias.name.split(".")[0] == NAME)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                if node.module.split(".")[0] != NAME:
                    continue
                submodules = [
                    f"{node.module}.{alias.name}"
                    for alias in node.names
                    if f"{node.module}.{alias.name}" in paths
                ]
                edges.update(submodules)
                if len(submodules) < len(node.names):
                    edges.add(node.module)
            elif isinstance(node, ast.ImportFrom) and node.level > 0:
                raise AssertionError(f"{path}: use absolute imports")
        edges.discard(name)
        graph[name] = edges
    return graph


def layer(module: str) -> str | None:
    """The layer a module belongs to (``None``: a top-level module of the package)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else None


def upward(graph: dict[str, set[str]]) -> list[str]:
    """Every import that breaks the layer rule, as ``importer -> imported``."""
    found = []
    for module, edges in sorted(graph.items()):
        mine = layer(module)
        if mine is None:  # the package's __init__ (the public names), __main__
            continue
        for other in sorted(edges):
            theirs = layer(other)
            # a top-level module (the package's __init__, __main__) is above every layer
            allowed = theirs is not None and LAYERS.index(theirs) <= LAYERS.index(mine)
            if not allowed:
                found.append(f"{module} -> {other}")
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected component with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for other in sorted(graph.get(module, ())):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in on_stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_the_graph_sees_every_kind_of_import() -> None:
    graph = module_graph()
    registry, context = "dei_framework.contract.registry", "dei_framework.contract.context"
    assert "dei_framework.contract.errors" in graph[registry]  # module level
    assert "dei_framework.runtime.ensemble" in graph["dei_framework.app.cli"]  # in a function
    assert registry in graph[context]  # under TYPE_CHECKING
    assert (
        "dei_framework.evaluation.dask_worker"
        in graph[  # from a package, a submodule
            "dei_framework.evaluation.dask_backend"
        ]
    )
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert upward(
        {
            "dei_framework.search.x": {"dei_framework.runtime.y"},
            "dei_framework.runtime.y": {"dei_framework.search.x", "dei_framework"},
        }
    ) == [
        "dei_framework.runtime.y -> dei_framework",
        "dei_framework.search.x -> dei_framework.runtime.y",
    ]


def test_every_package_is_a_layer() -> None:
    packages = {path.parent.name for path in PACKAGE.glob("*/__init__.py")}
    assert packages == set(LAYERS)


def test_each_package_imports_only_the_layers_below_it() -> None:
    found = upward(module_graph())
    assert not found, "imports against the layers (docs/architecture.md, 'Layout'):\n" + (
        "\n".join(found)
    )


def test_no_import_cycles_inside_dei_framework() -> None:
    found = cycles(module_graph())
    assert not found, f"import cycles in dei_framework/: {found}"


#: Inside the runtime, what each sub-package may import of the runtime's other modules (its
#: own always; the layers below the runtime always): the floors of runtime/'s docstrings.
RUNTIME_FLOORS = {
    "budget": set(),
    "config": {"budget"},
    "files": {"budget", "config", "driver", "replay"},
    "node": {"budget", "config", "files", "builders", "driver", "merge", "replay", "summary"},
}


def runtime_floor_breaks(graph: dict[str, set[str]]) -> list[str]:
    """Every import of a runtime sub-package's module that :data:`RUNTIME_FLOORS` does not
    allow, as ``importer -> imported``."""
    prefix = f"{NAME}.runtime."
    found = []
    for module, edges in sorted(graph.items()):
        package = module.removeprefix(prefix).split(".")[0]
        if not module.startswith(prefix) or package not in RUNTIME_FLOORS:
            continue
        for other in sorted(edges):
            if not other.startswith(prefix):
                continue
            theirs = other.removeprefix(prefix).split(".")[0]
            if theirs != package and theirs not in RUNTIME_FLOORS[package]:
                found.append(f"{module} -> {other}")
    return found


def test_the_runtime_sub_packages_import_only_their_floors() -> None:
    assert runtime_floor_breaks(
        {"dei_framework.runtime.budget.ledger": {"dei_framework.runtime.config.checks"}}
    ) == ["dei_framework.runtime.budget.ledger -> dei_framework.runtime.config.checks"]
    found = runtime_floor_breaks(module_graph())
    assert not found, "runtime sub-package imports against their docstrings:\n" + "\n".join(found)
