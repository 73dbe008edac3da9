"""Every public function and class says which result of the paper or which place of the book it implements, and
the places it names exist (DESIGN.md: "each public function's docstring names the theorem or figure it
implements, and a test checks that those labels exist in the book").

The rule, for every function and class in the ``__all__`` of a public module (``.ci/reference_pages.py``'s
``public_modules``: no part of the dotted name starts with ``_``), checked once, in the module that defines it:

1. **Attribution.** Its docstring names a result of the paper (``Lemma 3``, ``Theorem 1(b)``, ``Corollary 2``,
   ``Remark 1``, ``Assumption 2``, ``Eqn 10``, ``Figure 6``, ``Figs. 11-12``, ``Sec. 5``, ``Appendix G``), a
   place of the book (``Chapter 8``, a figure id such as ``fig-ch9-heads``, a label such as ``thm-3``) or a
   claim of the ledger (``C22``, ``X3``).
2. **The named places exist** (every docstring of a public module, the module's own included): each book label
   (``fig-*``, ``thm-*``, ``lemma-*``, ``cor-*``, ``rem-*``, ``eqn-*``, ``assumption-*``, ``ch-*``) is defined in
   ``book/**/*.md`` (``:name:``, ``:label:`` or ``(label)=``); each ``Chapter N`` is a file
   ``book/chapters/NN-*.md``; each claim id is in :data:`scansnap.claims.CLAIMS`; each lemma, theorem, corollary,
   remark or assumption number is one that the book's pages discuss (ranges such as "Lemmas 10-12" count every
   number in them; equation numbers are not checked: the book states Eqn 1-2 without their numbers); each
   paper figure ``Figure N`` is one the book re-makes (label ``fig-paper-N``).

Exemptions, decided here and nowhere else:

* :data:`EXEMPT` modules are the generic infrastructure: they implement a concept of the book or of DESIGN.md
  (the verdict rules, the claims ledger, typed results, the figure gallery and provenance, profiles, the
  command line, the experiment registry, the statistics the rules use), not a result of the paper. Their
  members need a docstring but no attribution; rule 2 still holds for whatever they name.
* Chapter experiment modules (``scansnap.experiments.chNN_*``) have no ``__all__``: every function in them is
  a step of its chapter's experiment, so the module docstring carries the attribution and must name its
  chapter ("Chapter N", ``N = NN``). Every other public module must declare ``__all__``, so that no new module
  escapes rule 1.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import re
from collections.abc import Iterator
from pathlib import Path

from scansnap import claims

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("reference_pages", ROOT / ".ci" / "reference_pages.py")
reference_pages = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(reference_pages)

EXEMPT = {
    "scansnap": "the package: its docstring lists the modules",
    "scansnap.book": "what a chapter cell calls (glue, show, record): DESIGN.md's chapter template",
    "scansnap.claims": "the claims ledger (book/claims.md)",
    "scansnap.closure": "which library sources a page can run (the page cache)",
    "scansnap.manifest": "the one registry of chapters and experiments (data): no result of the paper",
    "scansnap.device": "where the trainers compute (SCANSNAP_DEVICE, --device): no result of the paper",
    "scansnap.parallel": "where independent runs execute (SCANSNAP_JOBS, SCANSNAP_DASK): no result of the paper",
    "scansnap.codehash": "the functions a stored run executes and the hash of their syntax (stored runs)",
    "scansnap.store": "stored runs: long runs made once, stored with provenance, checked by the build",
    "scansnap.store_verify": "re-running a stored run's first steps and comparing them (store verify)",
    "scansnap.cli": "the command line (python -m scansnap)",
    "scansnap.cli_parser": "the command line's arguments (python -m scansnap)",
    "scansnap.experiments": "the experiment registry (make, load_result, figure ids)",
    "scansnap.experiments.base": "the Experiment and FigureSpec types of DESIGN.md",
    "scansnap.criteria": "a verdict rule's criterion and thresholds (DESIGN.md, the claims ledger)",
    "scansnap.outcomes": "a verdict's level and outcome as types, and how it writes numbers (the claims ledger)",
    "scansnap.findings": "the page What this book found (book/found.md), read from the ledger",
    "scansnap.tallies": "the ledger's two tallies (theory's model; training and real data) for every summary",
    "scansnap.figures": "the figure gallery, figure provenance and citations (book/figures.md)",
    "scansnap.figure_layout": "the layout check every figure of the book passes (tests/test_figure_layout.py)",
    "scansnap.ledger": "the locked rules and verdicts (ledger/), and the claims ledger page (book/claims.md)",
    "scansnap.ledger_page": "the claims ledger as a navigable page (book/claims.md): picture, sort, filter, anchors",
    "scansnap.profiles": "the smoke / book / paper profiles of DESIGN.md",
    "scansnap.verdict_table": "a chapter's verdict section (what book.record returns): the table and its undecided",
    "scansnap.provenance": "the version and commit each chapter prints first",
    "scansnap.results": "typed configs with presets and saved results (DESIGN.md)",
    "scansnap.params": "a typed config's declared fields: each field's check and protocol wording (DESIGN.md)",
    "scansnap.stats": "the statistics the verdict rules use (paired t, trends, slopes)",
    "scansnap.verdicts": "verdict rules and evidence kinds (DESIGN.md, the claims ledger)",
}
CHAPTER_MODULE = re.compile(r"scansnap\.experiments\.ch(\d\d)_\w+")

_NUMBERS = r"(\d+)((?:\s*(?:-|–|/|,|and|to)\s*\d+)*)"
KINDS = ("Lemma", "Theorem", "Corollary", "Remark", "Assumption")
RESULT = re.compile(rf"\b({'|'.join(KINDS)})s? {_NUMBERS}")
FIGURE = re.compile(rf"\b(?:Figures?|Figs?\.) {_NUMBERS}")
ATTRIBUTION = re.compile(
    r"\b(?:(?:Lemma|Theorem|Corollary|Remark|Assumption|Eqn|Equation|Figure|Section|Appendix)s?|(?:Fig|Sec|App)s?\.)"
    r" (?:\d|[A-H]\b)"
    r"|\bChapter \d|\b[CXP]\d+[ab]?\b|\b(?:fig|thm|lemma|cor|rem|eqn|assumption|ch)-[a-z0-9]")
LABEL = re.compile(
    r"(?<![\w-])((?:fig|thm|theorem|lemma|cor|corollary|rem|eqn|assumption|ch)-[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)")
CHAPTER = re.compile(r"\bChapters? (\d+)")
CLAIM = re.compile(r"(?<![\w-])([CXP]\d+[ab]?)\b")


def _numbers(first: str, rest: str) -> set[int]:
    """The numbers of "10-12", "3/4", "11, 12 and 13": ranges expanded."""
    nums, prev = {int(first)}, int(first)
    for sep, num in re.findall(r"\s*(-|–|/|,|and|to)\s*(\d+)", rest):
        n = int(num)
        nums |= set(range(prev, n + 1)) if sep in ("-", "–", "to") and prev < n else {n}
        prev = n
    return nums


def _pages() -> str:
    pages = [p for p in (ROOT / "book").rglob("*.md") if "reference" not in p.relative_to(ROOT / "book").parts]
    return "\n".join(p.read_text() for p in pages)


def _book_labels() -> set[str]:
    text = "\n".join(p.read_text() for p in (ROOT / "book").rglob("*.md"))
    return {a or b for a, b in re.findall(r"^:(?:name|label):\s*(\S+)|^\(([^)\s]+)\)=", text, re.M)}


def _discussed() -> set[tuple[str, int]]:
    """Every (kind, number) of a paper result the book's pages mention."""
    return {(kind, n) for kind, first, rest in RESULT.findall(_pages()) for n in _numbers(first, rest)}


def _chapters() -> set[int]:
    return {int(p.name[:2]) for p in (ROOT / "book" / "chapters").glob("[0-9][0-9]-*.md")}


def _doc(obj: object) -> str:
    """The object's own docstring ("" for none, or for the signature line a dataclass makes up)."""
    doc = inspect.cleandoc(getattr(obj, "__doc__", None) or "")
    return "" if inspect.isclass(obj) and doc.startswith(f"{obj.__name__}(") else doc


def _defined(obj: object) -> bool:
    obj = inspect.unwrap(obj) if callable(obj) else obj
    return inspect.isfunction(obj) or inspect.isclass(obj)


def _api() -> Iterator[tuple[str, str, object]]:
    """(module, name, object) of every function and class in a public ``__all__``, at the public module that
    defines it (a re-export is checked where it is defined; one from a private module where it is exported)."""
    public = reference_pages.public_modules()
    seen: set[int] = set()
    for module in public:
        mod = importlib.import_module(module)
        for name in getattr(mod, "__all__", ()):
            obj = getattr(mod, name)
            home = getattr(inspect.unwrap(obj) if callable(obj) else obj, "__module__", module)
            if not _defined(obj) or id(obj) in seen or (home != module and home in public):
                continue
            seen.add(id(obj))
            yield module, name, obj


def _all_docstrings() -> Iterator[tuple[str, str]]:
    """(dotted name, docstring) of every public module and every function and class defined in it."""
    for module in reference_pages.public_modules():
        mod = importlib.import_module(module)
        yield module, _doc(mod)
        for name, obj in vars(mod).items():
            target = inspect.unwrap(obj) if callable(obj) else obj
            if not name.startswith("_") and _defined(obj) and getattr(target, "__module__", None) == module:
                yield f"{module}.{name}", _doc(obj)


def test_every_public_module_declares_its_api() -> None:
    undeclared = [m for m in reference_pages.public_modules()
                  if not hasattr(importlib.import_module(m), "__all__") and not CHAPTER_MODULE.fullmatch(m)]
    assert not undeclared, f"public modules without __all__ (rule 1 cannot see them): {undeclared}"


def test_exemptions_are_public_modules() -> None:
    assert set(EXEMPT) <= set(reference_pages.public_modules()), "EXEMPT names a module that is gone"


def test_api_is_found() -> None:
    names = {f"{m}.{n}" for m, n, _ in _api()}
    assert {"scansnap.model.YZModel", "scansnap.theory.decoder.gamma", "scansnap.metrics.freeze_rate",
            "scansnap.experiments.modules"} <= names


# Docstrings owed: public functions allowed to lack one, each with its reason (none: since the store hash covers the
# docstring-free syntax of what a run executes, scansnap.codehash, a docstring never makes a stored run stale).
OWED: dict[str, str] = {}


def test_every_public_function_names_what_it_implements() -> None:
    missing = [f"{m}.{n}" for m, n, obj in _api() if not _doc(obj) and f"{m}.{n}" not in OWED]
    assert not missing, f"public functions and classes without a docstring: {missing}"
    paid = [name for name in OWED if any(f"{m}.{n}" == name and ATTRIBUTION.search(_doc(obj)) for m, n, obj in _api())]
    assert not paid, f"these have their docstring now: remove them from OWED: {paid}"
    unattributed = [f"{m}.{n}" for m, n, obj in _api()
                    if m not in EXEMPT and f"{m}.{n}" not in OWED and not ATTRIBUTION.search(_doc(obj))]
    assert not unattributed, ("these docstrings name no result of the paper (Lemma 3, Eqn 10, Figure 6, Sec. 5,"
                              f" ...), no chapter or figure of the book and no claim: {unattributed}")


def test_chapter_modules_name_their_chapter() -> None:
    for module in reference_pages.public_modules():
        match = CHAPTER_MODULE.fullmatch(module)
        if match:
            named = {int(n) for n in CHAPTER.findall(_doc(importlib.import_module(module)))}
            assert int(match[1]) in named, f"{module}'s docstring does not name Chapter {int(match[1])}"


def test_named_places_exist() -> None:
    labels, chapters, discussed = _book_labels(), _chapters(), _discussed()
    claim_ids = {c.id for c in claims.CLAIMS}
    wrong = []
    for name, doc in _all_docstrings():
        wrong += [f"{name}: label {x}" for x in LABEL.findall(doc) if x not in labels]
        wrong += [f"{name}: Chapter {x}" for x in CHAPTER.findall(doc) if int(x) not in chapters]
        wrong += [f"{name}: claim {x}" for x in CLAIM.findall(doc) if x not in claim_ids]
        wrong += [f"{name}: {kind} {n} (not in the book)" for kind, first, rest in RESULT.findall(doc)
                  for n in _numbers(first, rest) if (kind, n) not in discussed]
        wrong += [f"{name}: Figure {n} (no fig-paper-{n})" for first, rest in FIGURE.findall(doc)
                  for n in _numbers(first, rest) if f"fig-paper-{n}" not in labels]
    assert not wrong, f"docstrings name places the book does not have: {wrong}"


def test_the_checks_catch_wrong_names() -> None:
    assert _numbers("10", "-12") == {10, 11, 12} and _numbers("3", "/4") == {3, 4}
    assert _numbers("5", ", 7 and 9") == {5, 7, 9}
    assert ("Lemma", 3) in _discussed() and ("Lemma", 99) not in _discussed()
    assert "fig-paper-6" in _book_labels() and "fig-ch99-none" not in _book_labels()
    assert LABEL.findall("see ``fig-ch9-heads`` and {prf:ref}`thm-3`.") == ["fig-ch9-heads", "thm-3"]
    for attributed in ("Theorem 1(b)'s regime", "Figs. 11-12", "Appendix G", "Chapter 8's model", "claim C22",
                       "``fig-ch7-fine-grid``"):
        assert ATTRIBUTION.search(attributed), attributed
    for plain in ("A helper.", "(C, M, M) tensors", "the chapter's figure", "lemma6_h"):
        assert not ATTRIBUTION.search(plain), plain
