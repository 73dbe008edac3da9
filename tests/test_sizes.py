"""The size limits of the code standards, held by a test rather than by a reviewer's eye.

No library module over 400 lines, no experiment module over 350 (issue 27), no chapter code cell over 30 lines (the
chapters stay thin: the logic lives in ``scansnap``), and the experiments' code, without docstrings, comments and
blank lines, at most 7,500 lines (issue 27's budget for the experiments, restated on code: the package's prose,
the rules' words and the shapes in the docstrings, is the book's documentation, not code to fold).
"""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ROOT / "scansnap"
EXPERIMENTS = LIBRARY / "experiments"


def code_lines(source: str) -> int:
    """Lines of ``source`` that hold code: not blank, not only a comment, not inside a docstring.

    A docstring is a string statement: a module's, a class's or a function's first statement, or an attribute's
    docstring after an assignment (any string expression standing alone).
    """
    lines = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                            tokenize.ENDMARKER):
            lines.update(range(tok.start[0], tok.end[0] + 1))
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            lines.difference_update(range(node.lineno, node.end_lineno + 1))
    return len(lines)


def test_code_lines_leave_out_docstrings_comments_and_blank_lines() -> None:
    source = ('"""Module\ndocstring."""\n\n# a comment\nx = 1  # counted\n\n\n'
              'def f():\n    """Doc."""\n    return (x +\n            2)\n')
    assert code_lines(source) == 4  # x = 1; def f():; the two lines of the return


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf8").splitlines())


def test_no_library_module_is_over_400_lines() -> None:
    big = {str(p.relative_to(ROOT)): _lines(p) for p in LIBRARY.rglob("*.py") if _lines(p) > 400}
    assert not big, f"split these by concept: {big}"


def test_no_experiment_module_is_over_350_lines() -> None:
    big = {p.name: _lines(p) for p in EXPERIMENTS.glob("*.py") if _lines(p) > 350}
    assert not big, f"split these by concept: {big}"


def test_the_experiments_code_stays_within_its_budget() -> None:
    total = sum(code_lines(p.read_text(encoding="utf8")) for p in EXPERIMENTS.glob("*.py"))
    assert total <= 7_500, f"scansnap/experiments holds {total} lines of code (budget 7,500)"


def test_no_chapter_code_cell_is_over_30_lines() -> None:
    long = []
    for page in sorted((ROOT / "book").rglob("*.md")):
        inside, count, start = False, 0, 0
        for i, line in enumerate(page.read_text(encoding="utf8").splitlines(), 1):
            if line.startswith("```{code-cell}"):
                inside, count, start = True, 0, i
            elif inside and line.startswith("```"):
                inside = False
                if count > 30:
                    long.append(f"{page.relative_to(ROOT)}:{start} ({count} lines)")
            elif inside and not line.startswith(":"):
                count += 1
    assert not long, f"move the logic into scansnap: {long}"
