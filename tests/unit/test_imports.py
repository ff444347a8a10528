"""graphi_tf's modules import each other without a cycle and use no other module's private names.

Read from the source with ast (nothing is imported), so a cycle through an import inside a
function, which Python tolerates at import time, is found too.
"""
import ast
import pathlib
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


def _graph() -> Dict[str, Set[str]]:
    """module -> the graphi_tf modules it imports anywhere in its file. An import of the
    package ``graphi_tf`` itself is left out: importing any of its modules imports it first,
    so that edge is implied by every other one (and ``import graphi_tf`` in a function only
    makes sure the native library is loaded)."""
    graph: Dict[str, Set[str]] = {}
    for name, path in MODULES.items():
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            edges.update(m for m in _imported(node, name) if m != PACKAGE and m != name)
        graph[name] = edges
    return graph


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
    tree = ast.parse("def run():\n    from graphi_tf import cli\n")
    assert [m for node in ast.walk(tree) for m in _imported(node, "graphi_tf.trace")] == ["graphi_tf.cli"]


def test_no_import_cycle_between_graphi_tf_modules():
    graph = _graph()
    assert graph["graphi_tf.cli"] and graph["graphi_tf.trace"]  # the analysis saw the modules and imports
    assert _find_cycle(graph) is None, " -> ".join(_find_cycle(graph))


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
