"""No decision in ``scansnap/`` reads words (issue 27, part 4): a verdict's level is a
:class:`~scansnap.verdicts.Level`, why it is inconclusive an :class:`~scansnap.verdicts.Outcome`, a protocol cut a
:class:`~scansnap.results.Cut`, a stale or altered store a distinct exception, a run's training text a
:class:`~scansnap.experiments.wikitext_as_run.TrainText`. So no code may test the text of a verdict, a reason, a label,
a protocol or a run's note by prefix, substring or equality: the words are for readers, and rewording them must never
change what the book decides.

The test reads the syntax tree of every module and fails on (1) a ``startswith``/``endswith`` anywhere that is not
allowed below with why it decides nothing about a verdict, (2) a string method (``startswith``, ``partition``,
``split``, ...) on prose (a value named ``reason``, ``note``, ``level``, ``label()``, ``qualification()``, ...),
(3) ``"..." in`` prose, or a phrase (words with a space) ``in`` anything, (4) ``==``/``!=`` between prose and a
string, or between anything and a verdict's words.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from scansnap.claims import NOT_CHECKED
from scansnap.verdicts import Level, Outcome, Verdict

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "scansnap"

PROSE = {"reason", "note", "level", "label", "qualification", "headline", "protocol", "details", "summary",
         "control_level", "phrase", "shortfall", "premise", "rule", "describe", "qualification_parts"}
"""Names of values that hold words for readers (a verdict's, a rule's, a run's). Not ``text`` or ``words``: in the
library those are a corpus's text and a vocabulary's words, data rather than prose."""
TEXT_METHODS = {"startswith", "endswith", "partition", "rpartition", "removeprefix", "removesuffix", "find", "rfind",
                "index", "rindex", "split", "rsplit", "count"}
VERDICT_WORDS = {*map(str, Level), *(str(o) for o in Outcome), NOT_CHECKED}

ALLOWED = {
    # (module, the receiver of startswith/endswith): why it decides nothing about a verdict, a reason or a note
    ("scansnap/codehash.py", "module"): "a module's dotted name: is it in the scansnap package (watched)?",
    ("scansnap/codehash.py", "head"): "a code object's qualified name: <lambda>, <module> are not functions",
    ("scansnap/codehash.py", "frame.f_code.co_filename"): "dataclass-made methods have a <string> file name",
    ("scansnap/store.py", "line"): "a line of /proc/cpuinfo: the CPU's model name, recorded in provenance",
    ("scansnap/verdict_table.py", "anchor"): "a link's anchor: figure ids start with fig- (the book's label "
                                             "convention), for the command that re-makes the figure",
    ("scansnap/wikitext.py", "s"): "a WikiText-2 line: article titles are ' = Title = ' (the corpus's own format)",
    ("scansnap/wikitext_check.py", "type(e).__module__"): "an exception's module: urllib3's errors are unwrapped",
    ("scansnap/wikitext_check.py", "text"): "a network error's repr, shortened for the message (decides no verdict)",
    ("scansnap/theory/__init__.py", "info.name"): "private submodules (a leading _) are not listed",
    ("scansnap/explore.py", "a.text or ''"): "a plotly annotation's bold title, removed before it is redrawn",
    ("scansnap/figures.py", "p.name"): "a file name: figure records are <id>.json, their data <id>.data.json",
}


def _subject(node: ast.AST) -> str:
    """The name a value is known by: ``v.reason`` -> ``reason``, ``v.label()`` -> ``label``, ``note`` -> ``note``."""
    if isinstance(node, ast.Call):
        return _subject(node.func)
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Subscript):
        return _subject(node.value)
    if isinstance(node, ast.BoolOp):
        return _subject(node.values[0])
    return ""


def _words(node: ast.AST) -> set[str]:
    """The string constants of ``node`` (itself, or the items of a tuple, list or set of them)."""
    items = node.elts if isinstance(node, ast.Tuple | ast.List | ast.Set) else [node]
    return {i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)}


def findings(text: str, module: str) -> list[str]:
    """Every decision on words in the source ``text`` of ``module`` (its path under the checkout), one line each."""
    out = []
    for node in ast.walk(ast.parse(text)):
        where = f"{module}:{getattr(node, 'lineno', '?')}: {ast.unparse(node)[:100]}"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            receiver, method = node.func.value, node.func.attr
            if method in ("startswith", "endswith"):
                if (module, ast.unparse(receiver)) not in ALLOWED:
                    out.append(f"{where}  ({method} on {ast.unparse(receiver)!r}, not allowed)")
            elif method in TEXT_METHODS and _subject(receiver) in PROSE:
                out.append(f"{where}  ({method} on prose)")
        if isinstance(node, ast.Compare):
            for left, op, right in zip([node.left, *node.comparators[:-1]], node.ops, node.comparators, strict=True):
                if isinstance(op, ast.In | ast.NotIn) and _words(left) and (
                        _subject(right) in PROSE or any(" " in w for w in _words(left))):
                    out.append(f"{where}  (a substring of prose)")  # words with a space: a phrase, not a key
                if isinstance(op, ast.Eq | ast.NotEq | ast.In | ast.NotIn):
                    sides = (left, right)
                    if any(_subject(s) in PROSE for s in sides) and any(_words(s) for s in sides):
                        out.append(f"{where}  (prose compared with a string)")
                    elif any(_words(s) & VERDICT_WORDS for s in sides):
                        out.append(f"{where}  (compared with a verdict's words)")
    return out


def test_no_module_decides_by_the_words_of_a_verdict_a_reason_or_a_note() -> None:
    found = [line for path in sorted(PACKAGE.rglob("*.py"))
             for line in findings(path.read_text(encoding="utf8"), path.relative_to(ROOT).as_posix())]
    assert not found, "decisions on words (use Level, Outcome, Cut, TrainText, the store's exceptions):\n" + "\n".join(
        found)


def test_every_allowed_use_is_still_there() -> None:
    """An allowance whose code is gone is removed, so that the list stays the list of true exceptions."""
    used = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                    "startswith", "endswith"):
                used.add((module, ast.unparse(node.func.value)))
    assert set(ALLOWED) <= used, sorted(set(ALLOWED) - used)


@pytest.mark.parametrize("source", [
    'if v.reason.startswith("reduced protocol"):\n    pass',
    'ok = "could NOT train" in note',
    'ok = v.level == "verified"',
    'ok = headline != "not yet checked"',
    'head = v.reason.partition(":")[0]',
    'ok = v.label().endswith("(the control passes too)")',
    'ok = level in ("inconclusive", "not reproduced")',
    'ok = x == "the control passes too"',
    'bad = any("differ from their recorded digests" in p for p in problems)',
])
def test_the_check_catches_each_kind_of_decision_on_words(source: str) -> None:
    assert findings(source, "scansnap/example.py"), source


@pytest.mark.parametrize("source", [
    "ok = v.level is Level.VERIFIED",
    "ok = v.outcome is Outcome.REDUCED_PROTOCOL",
    'ok = cut.field in rule.depends_on',
    'ok = claim.origin == "book"',
    'ok = evidence == "training-sampled"',
])
def test_typed_decisions_pass(source: str) -> None:
    assert not findings(source, "scansnap/example.py"), source


def test_levels_and_outcomes_read_and_write_the_words_unchanged() -> None:
    """The enums' values are the words stored verdicts and ``ledger/verdicts-book.json`` hold: a stored verdict reads
    back equal, and its JSON is the same text."""
    v = Verdict("C1", "inconclusive", "training-population", "rule", reason="the control passes too",
                outcome="the control passes too", control_level="verified")
    assert v.level is Level.INCONCLUSIVE and v.outcome is Outcome.CONTROL_PASSES
    assert f"{v.level}" == "inconclusive" and v.label() == "inconclusive (the control passes too)"
    import json
    from dataclasses import asdict

    again = Verdict(**json.loads(json.dumps(asdict(v))))
    assert again == v and json.loads(json.dumps(asdict(v)))["level"] == "inconclusive"
    with pytest.raises(ValueError, match="outcome"):  # words with no outcome (a record made before outcomes were typed)
        Verdict("C1", "inconclusive", "training-population", "rule", reason="the control passes too")
