"""scansnap.codehash: the functions a call executes, and a hash of their syntax that docstrings, comments and
unrelated edits leave alone while a one-token change of the arithmetic changes it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import module_from_source

from scansnap import codehash

SOURCE = '''"""A module."""
import math

SCALE = 2.0
"""How much."""
THRESHOLD = 0.5  # read by no function that runs


def helper(x):
    """Doubles."""
    return SCALE * x


class Box:
    def grow(self, x):
        def inner(y):
            return [helper(v) for v in y]
        return inner([x, x])


def run(x):
    # a comment
    return sum(Box().grow(x)) + math.sqrt(x)


def plot(r):
    return r > THRESHOLD
'''


@pytest.fixture
def mod(tmp_path: Path):
    path = tmp_path / "runmod.py"
    with module_from_source(path, SOURCE, "runmod") as module:
        yield module, path


def test_trace_records_the_functions_that_ran_with_nested_code_under_its_definer(mod) -> None:
    module, _ = mod
    out, functions = codehash.trace(module.run, 4.0, modules=[module.__name__])
    assert out == 18.0
    n = module.__name__
    assert functions == [f"{n}:Box.grow", f"{n}:helper", f"{n}:run"]  # inner and the comprehension: Box.grow's
    assert codehash.trace(module.run, 4.0)[1] == []  # only the library and the named modules are watched


def test_strip_docstrings_removes_every_bare_string_and_keeps_the_code() -> None:
    tree = codehash.strip_docstrings(ast.parse(SOURCE))
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    empty = codehash.strip_docstrings(ast.parse('def f():\n    """only a docstring"""\n'))
    assert isinstance(empty.body[0].body[0], ast.Pass)


def _hashes_after(mod, edit) -> tuple[dict[str, str], dict[str, str]]:
    module, path = mod
    fns = codehash.trace(module.run, 4.0, modules=[module.__name__])[1]
    before = codehash.hashes(fns)
    path.write_text(edit(SOURCE))
    return before, codehash.hashes(fns)


@pytest.mark.parametrize("edit", [
    lambda s: s.replace('"""Doubles."""', '"""Doubles its input: a new docstring."""'),
    lambda s: s.replace("# a comment", "# another comment, longer"),
    lambda s: s.replace('"""How much."""', '"""How much, reworded."""'),
    lambda s: s.replace("THRESHOLD = 0.5", "THRESHOLD = 0.9"),  # a rule's threshold: read by no function that ran
    lambda s: s.replace("return r > THRESHOLD", "return r >= THRESHOLD"),  # a figure/analysis edit
    lambda s: s.replace("return SCALE * x", "return (SCALE\n            * x)"),  # layout
], ids=["docstring", "comment", "attribute-docstring", "unread-constant", "analysis", "layout"])
def test_edits_outside_what_runs_leave_every_hash_unchanged(mod, edit) -> None:
    before, after = _hashes_after(mod, edit)
    assert before == after and codehash.code_hash(before) == codehash.code_hash(after)


@pytest.mark.parametrize("edit, changed", [
    (lambda s: s.replace("return SCALE * x", "return SCALE + x"), "helper"),  # one token of arithmetic
    (lambda s: s.replace("SCALE = 2.0", "SCALE = 2.5"), "helper"),  # a constant the run reads
    (lambda s: s.replace("return inner([x, x])", "return inner([x])"), "Box.grow"),
    (lambda s: s.replace("def helper(x):", "def helper2(x):"), "helper"),  # gone: hashes as missing
], ids=["operator", "read-constant", "nested", "renamed"])
def test_a_change_of_what_runs_changes_that_functions_hash(mod, edit, changed) -> None:
    before, after = _hashes_after(mod, edit)
    assert [f.partition(":")[2] for f in before if before[f] != after[f]] == [changed]
    assert codehash.code_hash(before) != codehash.code_hash(after)


def test_a_missing_module_or_function_hashes_as_missing() -> None:
    assert codehash.function_hash("scansnap.no_such_module:f") == "missing"
    assert codehash.function_hash("scansnap.codehash:no_such_function") == "missing"
    assert codehash.function_hash("scansnap.codehash:trace") != "missing"
