"""graphi_tf's modules import each other without a cycle, the package root included, use no
other module's private names, and ``import graphi_tf`` loads the library only, never the lab.

Read from the source with ast (nothing is imported), so a cycle through an import inside a
function, which Python tolerates at import time, is found too; the last test also imports
graphi_tf in a fresh process and lists what it loaded.
"""
import ast
import pathlib
import subprocess
import sys
from typing import Dict, List, Optional, Set

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = "graphi_tf"


def _modules() -> Dict[str, pathlib.Path]:
    """Every module of the package: dotted name -> file (a package's is its __init__.py)."""
    modules = {}
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


MODULES = _modules()

LIBRARY = frozenset({
    "graphi_tf", "graphi_tf._cli_logging", "graphi_tf._loader", "graphi_tf._build_info",
    "graphi_tf._graphi_tf", "graphi_tf._argtypes", "graphi_tf.config", "graphi_tf.info",
    "graphi_tf.tune", "graphi_tf.cache", "graphi_tf.decision", "graphi_tf.stepstats",
    "graphi_tf.autotune_persister", "graphi_tf.trace", "graphi_tf.version", "graphi_tf.environment",
})
"""The library: what ``import graphi_tf`` may load. Everything else (the A/B lab, the models,
the command line, the bundle) is loaded only by who uses it."""


def _imported(node: ast.AST, current: str) -> List[str]:
    """The graphi_tf modules an import statement names (``from graphi_tf import x`` names
    graphi_tf.x if that is a module, else graphi_tf itself)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.split(".")[0] == PACKAGE]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:  # relative: from the module's package, one level up per extra dot
        package = current.split(".") if MODULES[current].name == "__init__.py" else current.split(".")[:-1]
        base = package[: len(package) - (node.level - 1)]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    if source.split(".")[0] != PACKAGE:
        return []
    return [f"{source}.{a.name}" if f"{source}.{a.name}" in MODULES else source for a in node.names]


def _graph(root_edges: bool = True) -> Dict[str, Set[str]]:
    """module -> the graphi_tf modules it imports anywhere in its file, the package root
    (``import graphi_tf``, ``from graphi_tf import configure``) included. Importing a module
    imports its package first; that implied edge is not listed."""
    graph: Dict[str, Set[str]] = {}
    for name, path in MODULES.items():
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            edges.update(m for m in _imported(node, name) if m != name and (root_edges or m != PACKAGE))
        graph[name] = edges
    return graph


def _reachable(graph: Dict[str, Set[str]], start: str) -> Set[str]:
    seen, todo = set(), [start]
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo.extend(graph.get(node, ()))
    return seen


def _find_cycle(graph: Dict[str, Set[str]]) -> Optional[List[str]]:
    state: Dict[str, int] = {}  # 1: on the current path, 2: done
    path: List[str] = []

    def visit(node: str) -> Optional[List[str]]:
        state[node] = 1
        path.append(node)
        for succ in sorted(graph.get(node, ())):
            if state.get(succ) == 1:
                return path[path.index(succ):] + [succ]
            if succ not in state:
                found = visit(succ)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_cycle_finder_finds_a_cycle_through_a_function_level_import():
    graph = {"graphi_tf.a": {"graphi_tf.b"}, "graphi_tf.b": {"graphi_tf.c"}, "graphi_tf.c": {"graphi_tf.a"},
             "graphi_tf.d": {"graphi_tf.a"}}
    assert _find_cycle(graph) == ["graphi_tf.a", "graphi_tf.b", "graphi_tf.c", "graphi_tf.a"]
    tree = ast.parse("def run():\n    from graphi_tf.lab import cli\n    import graphi_tf\n")
    assert sorted(m for node in ast.walk(tree) for m in _imported(node, "graphi_tf.trace")) == [
        "graphi_tf", "graphi_tf.lab.cli"]


def test_no_import_cycle_between_graphi_tf_modules_the_package_root_included():
    graph = _graph()
    assert graph["graphi_tf.lab.cli"] and graph["graphi_tf.trace"]  # the analysis saw the modules and imports
    assert "graphi_tf" in graph["graphi_tf.lab.ab"]  # and the root's edges
    assert _find_cycle(graph) is None, " -> ".join(_find_cycle(graph))


def test_the_package_root_reaches_only_library_modules():
    reached = _reachable(_graph(), PACKAGE)
    assert "graphi_tf.tune" in reached  # the analysis followed the root's imports
    assert reached <= LIBRARY, sorted(reached - LIBRARY)


def test_import_graphi_tf_loads_no_lab_or_model_module():
    code = "import sys, graphi_tf; print(' '.join(m for m in sys.modules if m.split('.')[0] == 'graphi_tf'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240,
                         cwd=str(ROOT), check=True).stdout.split()
    assert "graphi_tf.config" in out
    assert set(out) <= LIBRARY, sorted(set(out) - LIBRARY)


def test_no_module_imports_another_modules_private_name():
    offenders = []
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PACKAGE):
                for alias in node.names:
                    private = alias.name.startswith("_") and not alias.name.startswith("__")
                    if private and f"{node.module}.{alias.name}" not in MODULES:
                        offenders.append(f"{name}: from {node.module} import {alias.name}")
    assert offenders == []


def test_the_package_defines_one_usage_error_class():
    defined = [name for name, path in MODULES.items()
               for node in ast.walk(ast.parse(path.read_text(), str(path)))
               if isinstance(node, ast.ClassDef) and node.name == "UsageError"]
    assert defined == ["graphi_tf.lab.external_models"]
    from graphi_tf.lab import cli_common, external_models

    assert cli_common.UsageError is external_models.UsageError


def test_every_module_outside_the_library_lives_in_the_lab():
    outside = sorted(m for m in MODULES if m not in LIBRARY and m.split(".")[:2] != [PACKAGE, "lab"])
    assert outside == []
