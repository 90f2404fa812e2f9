"""The product's import graph: no cycles, and layers that point one way.

The allowed order, lowest first. A module may import modules of its own package and of any lower tier;
packages on one tier do not import each other.

    base        navzoo.errors, version, names, config_base, typed_config, lazy_exports, memory; navzoo.storage
    sim         navzoo.sim            the batch simulator; it defines the task interface (navzoo.sim.task)
    tasks       navzoo.tasks          PointGoal, Flee, Explore: the simulator's tasks
    models      navzoo.models         policies, their configs and weight files
    agents, zoo navzoo.agents         baselines, planners, policies as agents
                navzoo.zoo            the registry, the loader, habitat's releases and the shipped weights
    evaluation  navzoo.evaluation     metrics, tables, replays, maps, video
    interop     navzoo.interop        habitat-sim scenes, gymnasium, stable-baselines3, Embree reference
    train, hub, demo                  the training backend; Hub publishing; the Gradio app
    transfer    navzoo.transfer       Flee / Explore transfer, built on train

Command-line modules sit above all of them: navzoo.cli.*, any module named `cli` or `*_cli`, and the
package's front door (navzoo/__init__.py, navzoo/__main__.py). No library module imports argparse or a
command-line module. No library module is over 500 lines.

Every import counts: at module level, inside functions, and under `if TYPE_CHECKING:` (a cycle the type
checker sees is a cycle in the design). Importing `a.b.c` runs the `__init__` of `a` and `a.b` first, so it
is an import of those packages too, unless the importer is inside them.
"""

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
BASE_MODULES = (
    "errors",
    "version",
    "names",
    "config_base",
    "typed_config",
    "lazy_exports",
    "memory",
    "storage",
)
# Tiers, lowest first; each tier lists its packages (under navzoo.).
TIERS = (
    BASE_MODULES,
    ("sim",),
    ("tasks",),
    ("models",),
    ("agents", "zoo"),
    ("evaluation",),
    ("interop",),
    ("train", "hub", "demo"),
    ("transfer",),
)
FRONT_DOOR = {"navzoo", "navzoo.__main__"}


def _module_files() -> dict[str, Path]:
    files = {}
    for package, folder in FOLDERS.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = [p for p in path.relative_to(ROOT / folder).with_suffix("").parts if p != "__init__"]
            files[".".join([package, *parts])] = path
    return files


MODULES = _module_files()


def _imports(name: str) -> tuple[set[str], set[str]]:
    """The product's modules `name` imports (with the packages that importing them initialises), and the
    top-level names of everything it imports."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found, roots = set(), set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = {alias.name for alias in node.names}
            found |= names
            roots |= {n.split(".")[0] for n in names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, node.module] if node.module else base)
            else:
                source = node.module or ""
            roots.add(source.split(".")[0])
            submodules = {f"{source}.{alias.name}" for alias in node.names} & MODULES.keys()
            found |= submodules
            if len(submodules) < len(node.names):
                found.add(source)
    modules = set()
    for module in found:
        parts = module.split(".")
        for end in range(1, len(parts) + 1):
            initialised = ".".join(parts[:end])
            if initialised in MODULES and initialised != name and not name.startswith(initialised + "."):
                modules.add(initialised)
    return modules, roots


IMPORTS = {name: _imports(name) for name in MODULES}
GRAPH = {name: modules for name, (modules, _) in IMPORTS.items()}


def is_command_line(name: str) -> bool:
    last = name.rpartition(".")[2]
    return name in FRONT_DOOR or name.startswith("navzoo.cli") or last == "cli" or last.endswith("_cli")


def tier(name: str) -> tuple[int, str]:
    """(tier, package) of a library module."""
    package = name.split(".")[1]
    if package in BASE_MODULES:
        return 0, "base"  # the base modules may import each other (the cycle test still applies)
    for rank, packages in enumerate(TIERS):
        if package in packages:
            return rank, package
    raise AssertionError(f"{name} belongs to no tier; add its package to TIERS and to the docstring")


LIBRARY = sorted(n for n in MODULES if not is_command_line(n))


def test_the_graph_covers_the_product():
    assert {
        "navzoo.zoo.loader",
        "navzoo.train.trainer",
        "navzoo.transfer.finetune",
        "navzoo.hub.push",
        "navzoo.cli.main",
    } <= GRAPH.keys()
    assert "navzoo.sim.batch_sim" in GRAPH["navzoo.evaluation.episodes"]
    # Imports under TYPE_CHECKING and inside functions are edges too.
    assert "navzoo.sim.batch_sim" in GRAPH["navzoo.tasks.pointgoal"]
    assert "navzoo.hub.pull" in GRAPH["navzoo.hub.pull_cli"]


def test_no_import_cycles():
    cycles = _cycles(GRAPH)
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_the_cycle_finder_finds_cycles():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("name", LIBRARY)
def test_library_modules_import_only_lower_layers(name):
    rank, package = tier(name)
    wrong = {
        m for m in GRAPH[name] if not is_command_line(m) and tier(m)[1] != package and tier(m)[0] >= rank
    }
    assert not wrong, f"{name} (tier {TIERS[rank]}) imports {sorted(wrong)}"


@pytest.mark.parametrize("name", LIBRARY)
def test_library_modules_have_no_command_line(name):
    modules, roots = IMPORTS[name]
    assert "argparse" not in roots, f"{name} imports argparse; parsing belongs in a cli module"
    command_line = sorted(m for m in modules if is_command_line(m))
    assert not command_line, f"{name} imports the command line: {command_line}"


MAX_MODULE_LINES = 500  # one job per module: past this, a module is doing two


def test_no_library_module_is_over_500_lines():
    long = {n: len(MODULES[n].read_text().splitlines()) for n in LIBRARY}
    over = {n: lines for n, lines in long.items() if lines > MAX_MODULE_LINES}
    assert not over, f"modules over {MAX_MODULE_LINES} lines (split them by job): {over}"


def test_navzoo_top_level_stays_small():
    top = [p.stem for p in (ROOT / "navzoo").glob("*.py") if p.stem not in ("__init__", "__main__")]
    assert len(top) <= 8, f"{len(top)} modules straight under navzoo/: {sorted(top)}"


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
    # Only a real import shows a package __init__ that comes back to a half-loaded module.
    names = sorted(n for n in MODULES if not n.endswith("__main__"))
    done = subprocess.run(
        [sys.executable, "-c", FIRST_IMPORT, *names], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    assert not done.stdout.strip(), "modules that fail when imported first:\n" + done.stdout
