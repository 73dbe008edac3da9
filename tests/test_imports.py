"""The package's import graph: no cycles, and the layers of DESIGN.md (no module imports one above it).

Every ``import`` statement counts, at module level or inside a function (a deferred import is still a
dependency). ``from scansnap.theory import decoder`` is an edge to the submodule ``scansnap.theory.decoder``;
a package whose ``__init__`` loads its submodules dynamically (``importlib.import_module``) depends on each of them.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "scansnap"


def _name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _edges(name: str, path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, module]).strip(".")
            subs = {f"{module}.{a.name}" for a in node.names if f"{module}.{a.name}" in MODULES}
            found |= subs or {module}
            if len(subs) < len(node.names):
                found.add(module)
    if path.name == "__init__.py" and "import_module(" in path.read_text():
        found |= {m for m in MODULES if m.startswith(name + ".") and m.count(".") == name.count(".") + 1}
    return {m for m in found if m in MODULES and m != name}


GRAPH = {name: _edges(name, path) for name, path in MODULES.items()}


def _cycles() -> list[list[str]]:
    """One cycle per strongly connected component with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(GRAPH[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    return out


def test_the_graph_sees_known_edges() -> None:
    assert "scansnap.verdicts" in GRAPH["scansnap.claims"]
    assert "scansnap.theory.decoder" in GRAPH["scansnap.theory.phase"]
    assert "scansnap.theory.phase" in GRAPH["scansnap.theory"]  # loaded dynamically by the package


def test_no_import_cycles() -> None:
    assert _cycles() == []


BOTTOM = ("scansnap._checks", "scansnap._io", "scansnap._threads", "scansnap.profiles", "scansnap.data",
          "scansnap.model", "scansnap.metrics", "scansnap.figures", "scansnap.verdicts", "scansnap.claims",
          "scansnap.results", "scansnap.provenance", "scansnap.closure")
TOP = ("scansnap.cli", "scansnap.__main__", "scansnap.book", "scansnap.ledger", "scansnap.ledger_page",
       "scansnap.store")


def test_layers_point_down() -> None:
    """The bottom layer imports nothing from experiments or the top; experiments never import the top."""
    for name in BOTTOM:
        up = {m for m in GRAPH[name] if m.startswith("scansnap.experiments") or m in TOP}
        assert not up, f"{name} imports {sorted(up)} from above it"
    for name in GRAPH:
        if name.startswith("scansnap.experiments") or name.startswith("scansnap.theory"):
            assert not GRAPH[name] & set(TOP), f"{name} imports {sorted(GRAPH[name] & set(TOP))}"
