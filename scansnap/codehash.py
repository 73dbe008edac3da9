"""The code a run depends on: the functions it executes, found by running it, hashed by their syntax.

A stored run (:mod:`scansnap.store`) is stale when the code that computed it changes, and only then: a
docstring, a comment, a rule's threshold, a figure or a page edit must leave hours of stored runs current. So the
hash covers what the run *executes*, at the grain of functions, not the modules it imports:

* :func:`trace` calls the run under a profile hook (``sys.setprofile``) and records every function of the
  watched modules (the ``scansnap`` package, and the module defining the run when it lies outside it) whose frame
  ran, as ``"module:qualified.name"``; a nested function, lambda or comprehension belongs to the function that
  defines it, and module bodies (imports) are not counted;
* :func:`function_hash` hashes one recorded function: the syntax tree (``ast``) of its definition with every
  docstring removed (comments and layout are not in the tree), plus the module-level assignments and imports of
  the names it reads (``HORIZON = 5``, ``from scansnap import lm``); :func:`code_hash` combines them: a one-token
  change of the run's arithmetic changes it, an edit anywhere else does not.

A function that moved, was renamed or deleted hashes as missing, so the run is stale. A function the run starts
to call after an edit is called from a recorded one, whose edit already changed the hash. Functions that run in
another process (a process pool) are not seen: trace a run with one process.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["code_hash", "definition", "function_hash", "hashes", "strip_docstrings", "trace"]

LIBRARY = "scansnap"


def _watched(module: str, extra: frozenset[str]) -> bool:
    return module == LIBRARY or module.startswith(LIBRARY + ".") or module in extra


def _outer(qualname: str) -> str | None:
    """The function a code object belongs to: ``"f.<locals>.g"`` -> ``"f"``; ``None`` for a module body."""
    head = qualname.split(".<locals>", 1)[0]
    return None if head.startswith("<") else head


def trace(fn: Callable[..., Any], *args: Any, modules: Iterable[str] = (), **kwargs: Any) -> tuple[Any, list[str]]:
    """``(fn(*args, **kwargs), functions)``: the result, and every function of the ``scansnap`` package (and of
    ``modules``, e.g. a test's module defining a run) that ran during the call, as sorted ``"module:qualname"``."""
    extra, seen = frozenset(modules), set()

    def hook(frame, event, _arg) -> None:
        if event == "call":
            module = frame.f_globals.get("__name__", "")
            if _watched(module, extra) and not frame.f_code.co_filename.startswith("<"):  # not dataclass-made
                name = _outer(frame.f_code.co_qualname)
                if name:
                    seen.add(f"{module}:{name}")

    old = sys.getprofile()
    sys.setprofile(hook)
    try:
        out = fn(*args, **kwargs)
    finally:
        sys.setprofile(old)
    return out, sorted(seen)


def strip_docstrings(tree: ast.AST) -> ast.AST:
    """``tree`` with every statement that is a bare string constant removed (docstrings of modules, classes and
    functions, and the attribute docstrings under assignments); a body left empty gets ``pass``."""
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            kept = [s for s in body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                                            and isinstance(s.value.value, str))]
            node.body = kept or [ast.Pass()]
    return tree


def _source(module: str) -> str | None:
    loaded = sys.modules.get(module)
    path = getattr(loaded, "__file__", None)
    if path is None:
        try:
            spec = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            return None
        path = spec.origin if spec else None
    return Path(path).read_text() if path and Path(path).is_file() else None


def _tree(module: str) -> ast.Module | None:
    text = _source(module)
    return strip_docstrings(ast.parse(text)) if text is not None else None


def _find(body: list[ast.stmt], parts: list[str]) -> ast.AST | None:
    for node in body:
        if isinstance(node, ast.If | ast.Try):  # a definition under `if TYPE_CHECKING:` or `try:`
            found = _find([*node.body, *node.orelse, *getattr(node, "finalbody", [])], parts)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.name == parts[0]:
            found = node if len(parts) == 1 else _find(node.body, parts[1:])
        else:
            continue
        if found is not None:
            return found
    return None


def definition(function: str) -> ast.AST | None:
    """The syntax tree (docstrings removed) of ``"module:qualname"`` as its source file is now; ``None`` when the
    module or the name is gone."""
    module, _, qualname = function.partition(":")
    tree = _tree(module)
    return None if tree is None else _find(tree.body, qualname.split("."))


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}


def _bound(stmt: ast.stmt) -> set[str]:
    """Names a module-level statement binds (assignments and imports; definitions are hashed on their own)."""
    if isinstance(stmt, ast.Assign):
        return {n.id for t in stmt.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    if isinstance(stmt, ast.AnnAssign | ast.AugAssign) and isinstance(stmt.target, ast.Name):
        return {stmt.target.id}
    if isinstance(stmt, ast.Import | ast.ImportFrom):
        return {(a.asname or a.name).split(".")[0] for a in stmt.names}
    return set()


def function_hash(function: str) -> str:
    """SHA-256 (16 hex digits) of ``"module:qualname"`` as its source is now: the docstring-free syntax of its
    definition and of the module-level assignments and imports of the names it reads; ``"missing"`` when the
    module or the function is gone."""
    node = definition(function)
    if node is None:
        return "missing"
    module = function.partition(":")[0]
    h = hashlib.sha256(function.encode() + b"\0" + ast.dump(node).encode())
    read = _names(node)
    for stmt in _tree(module).body:
        if _bound(stmt) & read:
            h.update(b"\0" + ast.dump(stmt).encode())
    return h.hexdigest()[:16]


def hashes(functions: Iterable[str]) -> dict[str, str]:
    """``{function: function_hash(function)}``, sorted by name."""
    return {f: function_hash(f) for f in sorted(set(functions))}


def code_hash(functions: Iterable[str] | Mapping[str, str]) -> str:
    """One SHA-256 (16 hex digits) over :func:`hashes` of ``functions`` (or over given ``{function: hash}``)."""
    table = functions if isinstance(functions, Mapping) else hashes(functions)
    text = "".join(f"{f}={table[f]}\n" for f in sorted(table))
    return hashlib.sha256(text.encode()).hexdigest()[:16]
