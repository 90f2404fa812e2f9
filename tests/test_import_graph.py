"""The import graph of the product has no cycles and points one way: from the command line and the
packages built on the core (train, transfer, hub, demo) down to the core (navzoo/), never back up.

Imports inside functions count (a deferred import that dodges a cycle is still a cycle); imports under
`if TYPE_CHECKING:` do not, as they never run."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Installed package -> folder, as pyproject.toml's package-dir maps them.
FOLDERS = {
    "navzoo": "navzoo",
    "navzoo.train": "train",
    "navzoo.transfer": "transfer",
    "navzoo.hub": "hub",
    "navzoo.demo": "demo",
}
# What each layer may import besides itself; the core imports only the core.
ALLOWED = {
    "core": set(),
    "train": {"core"},
    "transfer": {"core", "train"},
    "hub": {"core", "train"},
    "demo": {"core"},
}
COMMAND_LINE = "navzoo.cli.main"  # registers every package's subcommand, so it sits above them all


def _module_files() -> dict[str, Path]:
    files = {}
    for package, folder in FOLDERS.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = [p for p in path.relative_to(ROOT / folder).with_suffix("").parts if p != "__init__"]
            files[".".join([package, *parts])] = path
    return files


MODULES = _module_files()


def _is_type_checking_block(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")


def _import_nodes(node: ast.AST):
    for child in ast.iter_child_nodes(node):
        if _is_type_checking_block(child):
            continue
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child
        yield from _import_nodes(child)


def imported_modules(name: str) -> set[str]:
    """The product's modules that `name` imports, at module load or inside functions."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in _import_nodes(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
            continue
        if node.level:
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            source = ".".join([*base, node.module] if node.module else base)
        else:
            source = node.module
        submodules = {f"{source}.{alias.name}" for alias in node.names} & MODULES.keys()
        found |= submodules
        if len(submodules) < len(node.names):
            found.add(source)
    # Importing a module initialises its parent packages first; that edge is Python's, not a dependency.
    return {m for m in found if m in MODULES and m != name and not name.startswith(m + ".")}


def layer(name: str) -> str:
    for package in ("train", "transfer", "hub", "demo"):
        if name == f"navzoo.{package}" or name.startswith(f"navzoo.{package}."):
            return package
    return "core"


GRAPH = {name: imported_modules(name) for name in MODULES}


def test_the_graph_covers_the_product():
    assert {
        "navzoo.zoo.loader",
        "navzoo.train.trainer",
        "navzoo.transfer.finetune",
        "navzoo.hub.push",
    } <= GRAPH.keys()
    assert "navzoo.sim.batch_sim" in GRAPH["navzoo.evaluation.episodes"]


def test_no_import_cycles():
    cycles = _cycles(GRAPH)
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


@pytest.mark.parametrize("name", sorted(n for n in MODULES if n != COMMAND_LINE))
def test_imports_point_down(name):
    upward = {m for m in GRAPH[name] if layer(m) != layer(name) and layer(m) not in ALLOWED[layer(name)]}
    assert not upward, f"{name} ({layer(name)}) imports {sorted(upward)}"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for successor in edges:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))
    return components


# Imports every module first thing in an interpreter where no navzoo module is loaded yet, one after another.
FIRST_IMPORT = """
import importlib, sys
failed = []
for name in sys.argv[1:]:
    for loaded in [m for m in sys.modules if m == "navzoo" or m.startswith("navzoo.")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except ImportError as err:
        if getattr(err, "name", None) is None or str(err.name).startswith("navzoo"):
            failed.append(f"{name}: {err}")
print("\\n".join(failed))
"""


def test_every_module_can_be_imported_first():
    # The graph above has no cycle, but importing a module first initialises its packages, whose
    # __init__ may import modules that come back to the half-loaded one: only a real import shows that.
    done = subprocess.run(
        [sys.executable, "-c", FIRST_IMPORT, *sorted(MODULES)], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    assert not done.stdout.strip(), "modules that fail when imported first:\n" + done.stdout
