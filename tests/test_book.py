"""The book: every chapter is in the table of contents, follows the chapter template, and executes
top to bottom in the ``smoke`` profile (the strict ``book``-profile build runs in CI, and CI checks each chapter as
that build executed it: ``test_built_chapter``)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import jupytext
import pytest
from conftest import wikitext_skip_reason
from nbclient import NotebookClient

from scansnap import claims, cli, experiments, figures
from scansnap.verdicts import TRAINING_KINDS

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "book" / "chapters").glob("*.md"))
READS_WIKITEXT = {"08-wikitext"}  # skipped (naming SCANSNAP_WIKITEXT) where the data are neither here nor downloadable


def _toc_files() -> set[str]:
    toc = (ROOT / "_toc.yml").read_text()
    return set(re.findall(r"(?:file|root):\s*(\S+)", toc))


def test_there_are_chapters() -> None:
    assert CHAPTERS, "book/chapters/ holds no chapter"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_is_in_toc(chapter: Path) -> None:
    assert str(chapter.relative_to(ROOT).with_suffix("")) in _toc_files()


def test_toc_pages_exist() -> None:
    for page in _toc_files():
        assert (ROOT / f"{page}.md").exists(), f"_toc.yml lists {page}, which does not exist"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_template(chapter: Path) -> None:
    """A parameters cell, a labelled statement, an assert in a sympy cell, provenance first."""
    nb = jupytext.read(chapter)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert "scansnap.provenance" in code[0].source, "the first cell must print version and commit"
    assert any("parameters" in c.metadata.get("tags", []) for c in code), "no cell tagged parameters"
    text = chapter.read_text()
    assert re.search(r"```\{prf:(lemma|theorem|corollary)\}.*\n:label: \S+", text), "no labelled statement"
    assert any("sympy" in c.source or "sp." in c.source for c in code), "no sympy derivation"
    assert any(re.search(r"^assert ", c.source, re.M) for c in code), "no assert"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_statements_carry_the_papers_numbers(chapter: Path) -> None:
    """Every statement box is unnumbered and every reference to one names it in words: sphinx-proof's running count
    would print the paper's Lemma 18 as "Lemma 3" (``proof_title_format`` puts the title, which holds the paper's
    number, right after the kind)."""
    text = chapter.read_text()
    boxes = re.findall(r"```\{prf:\w+\} (.*)\n:label: (\S+)\n(:nonumber:)?", text)
    assert all(nonumber for _, _, nonumber in boxes), f"boxes without :nonumber: {[b[1] for b in boxes if not b[2]]}"
    assert all(re.match(r"(\d+ \(|\(|of this book: )", title) for title, _, _ in boxes), (
        f"a box title starts with the paper's number, '(Eqn ...)' or 'of this book:': {[b[0] for b in boxes]}")
    bare = re.findall(r"\{prf:ref\}`([^`<]+)`", text)
    assert not bare, f"references without their text (they would print the kind alone): {bare}"
    assert " %t" in (ROOT / "_config.yml").read_text().split("proof_title_format:")[1].split("\n")[0]


@pytest.mark.book_stage
@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_executes_in_smoke_profile(chapter: Path, tmp_path: Path, monkeypatch) -> None:
    """The chapter runs top to bottom; its figures are re-made bit for bit by the command line
    (same seed, same numbers); the verdicts it records are about claims assigned to it. (CI's test stage leaves
    this out: its book stage executes every chapter once, and :func:`test_built_chapter` checks the same.)"""
    if chapter.stem in READS_WIKITEXT and wikitext_skip_reason():
        pytest.skip(wikitext_skip_reason())
    build = tmp_path / "build"
    monkeypatch.setenv("SCANSNAP_PROFILE", "smoke")
    monkeypatch.setenv("SCANSNAP_ARTIFACTS", str(build))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = jupytext.read(chapter)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    _check_executed(chapter, nb, build, "smoke", recheck=tmp_path / "cli")


BUILT = "SCANSNAP_BUILT"
"""Environment variable: the build folder of a book just built in this checkout (``_build`` after ``make book``;
``_build/smoke/_build`` after ``make smoke``, with ``SCANSNAP_PROFILE=smoke``): CI sets it after its book stage, and
:func:`test_built_chapter` checks each chapter as executed there instead of executing it again."""


@pytest.mark.built
@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_built_chapter(chapter: Path, monkeypatch) -> None:
    """The checks of :func:`test_chapter_executes_in_smoke_profile` on the chapter as the book build executed it
    (its execution cache, ``<build>/.jupyter_cache``, and the figures and verdicts it wrote to ``_extra``), at its
    profile; the figures' bit-for-bit re-make is the smoke test's (at the book profile it would execute the
    chapter's runs again)."""
    import importlib.util
    import os

    from jupyter_cache import get_cache

    build = os.environ.get(BUILT)
    if not build:
        pytest.skip(f"no built book: set {BUILT} to the build folder after `make book`")
    monkeypatch.setenv("SCANSNAP_ARTIFACTS", str(ROOT / "_extra"))
    spec = importlib.util.spec_from_file_location("execute_pages", ROOT / ".ci" / "execute_pages.py")
    pages = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pages)
    cache = get_cache(str(Path(build) / ".jupyter_cache"))
    nb = cache.get_cache_bundle(cache.match_cache_notebook(pages.notebook(chapter)).pk).nb  # KeyError: not built
    _check_executed(chapter, nb, ROOT / "_extra", os.environ.get("SCANSNAP_PROFILE", "book"), recheck=None)


def _check_executed(chapter: Path, nb, build: Path, profile: str, recheck: Path | None) -> None:
    """An executed chapter ``nb`` whose figures and verdicts were written to ``build`` under ``profile``: no error,
    provenance first, every figure shown saved with its data (and, given ``recheck``, re-made bit for bit by the
    command line into that folder), every rule of its experiments judged, each verdict about a claim of the chapter,
    linking to an anchor of it, with its control's numbers where it rests on training (verdicts are read from
    ``$SCANSNAP_ARTIFACTS``, which the caller points at ``build``)."""
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    first = "".join(o.get("text", "") for o in next(c for c in nb.cells if c.cell_type == "code").outputs)
    assert re.match(r"scansnap \S+, commit \S+", first), first
    assert f"profile {profile}" in "".join(o.get("text", "") for o in outputs)

    docname = str(chapter.relative_to(ROOT).with_suffix(""))
    records = [r for r in figures.records(build) if r.chapter == docname]
    glued = set(re.findall(r"```\{glue:figure\} (\S+)", chapter.read_text()))
    assert glued <= {r.id for r in records}, "every figure shown must be saved with its data"
    for record in records:
        if record.profile != profile:  # shown from a store (book.stored): `store verify` re-runs it, not this
            assert "stored run made" in record.protocol and record.profile == "paper", record.id
            continue
        if recheck is not None:
            # `reproduce --check` against what the chapter published (tests/test_cli.py: it fails on tampered data)
            assert cli.main(["reproduce", record.id, "--check", "--against", str(build), "--out", str(recheck),
                             "--quiet"]) == 0
            made = (recheck / "figures" / record.files["data"]).read_bytes()
            assert made == (build / "figures" / record.files["data"]).read_bytes(), f"{record.id}: data differ"
    # the verdicts this chapter made: all of them in a folder of its own (recheck), else those linking to its page (a
    # central claim, P1-P3, is decided on several kinds of evidence, each in the chapter that has the runs)
    ids = {c.id for c in claims.CLAIMS}
    found = [v for path in (build / "verdicts").glob("*.json") if path.stem in ids for v in claims.verdicts(path.stem)]
    assert all(v.link for v in found), [v.claim for v in found if not v.link]
    mine = [v for v in found if recheck is not None or v.link.partition("#")[0] == f"{docname}.html"]
    judged = {f"{v.claim}/{v.evidence}" for v in mine}
    owned = {r.key for m in experiments.modules() for r in m.RULES
             if any(e.chapter == docname for e in m.EXPERIMENTS)}
    assert owned <= judged, f"rules of {docname}'s experiments that its run never judged: {owned - judged}"
    anchors = page_anchors(chapter.read_text())
    central = {c.id for c in claims.CENTRAL}
    for v in mine:
        assert v.claim in central or claims.get(v.claim).chapter == docname, f"{v.claim} is not a claim of {docname}"
        assert v.profile == profile
        if v.evidence in TRAINING_KINDS:  # every training verdict carries its control's numbers and level
            assert v.control_level and set(v.control) == set(v.numbers), (v.claim, v.evidence)
        else:
            assert not v.control_level and not v.control
        page, _, anchor = v.link.partition("#")
        assert page == f"{docname}.html", v.link
        assert not anchor or anchor in anchors, f"{v.claim}: no anchor #{anchor} on {docname}"


def page_anchors(text: str) -> set[str]:
    """The ids a chapter page has: labels ``(x)=``, ``:name:`` and ``:label:`` options, and section ids made from
    headings (docutils' ``make_id``)."""
    from docutils.nodes import make_id

    found = set(re.findall(r"^\(([\w-]+)\)=", text, re.M)) | set(re.findall(r"^:(?:name|label): (\S+)", text, re.M))
    return found | {make_id(h) for h in re.findall(r"^#{1,6} (.+)$", text, re.M)}


def test_every_figure_names_claims_that_exist_and_every_module_has_rules() -> None:
    for exp in experiments.all_experiments().values():
        for spec in exp.figures:
            for cid in spec.claims:
                assert claims.get(cid).id == cid, (spec.id, cid)
    for module in experiments.modules():
        rules = module.RULES
        assert all(r.claim for r in rules) and len({r.key for r in rules}) == len(rules), module.__name__


def test_every_figure_is_shown_by_its_chapter() -> None:
    """Every figure the command line can re-make is glued by the chapter that owns it, so the chapter's smoke
    run above checks it with ``reproduce --check``."""
    shown = {m for c in CHAPTERS for m in re.findall(r"```\{glue:figure\} (\S+)", c.read_text())}
    missing = sorted(set(experiments.figure_ids()) - shown)
    assert not missing, f"figures no chapter shows: {missing}"


LEVEL = re.compile(r"\b(partly verified|verified|not reproduced|inconclusive)\b", re.I)
GLUED = re.compile(r"\{glue:[a-z]+\}`[^`]*`")


def _literal_verdicts_in_code(source: str) -> list[str]:
    """String constants that are a verdict word, and ``claims.record`` calls given a string."""
    found = []
    tree = ast.parse("\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value.strip().strip("*").strip().lower()
            if text in ("verified", "partly verified", "not reproduced", "inconclusive") or re.search(
                    r"\*\*(partly verified|verified|not reproduced|inconclusive)", node.value, re.I):
                found.append(node.value)
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "record":
            found += [ast.unparse(a) for a in node.args if isinstance(a, ast.Constant | ast.JoinedStr)]
    return found


def _captions(text: str) -> list[str]:
    return re.findall(r"```\{(?:glue:figure|figure)\}[^\n]*\n(.*?)```", text, re.S)


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_no_literal_verdicts(chapter: Path) -> None:
    """Verdicts reach a page only from a rule: no verdict word in code as a literal, in a caption, or next to
    a claim id in prose (a glued ``{glue:md}`verdict-...``` is the way)."""
    nb = jupytext.read(chapter)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not _literal_verdicts_in_code(cell.source), cell.source[:200]
    text = chapter.read_text()
    for caption in _captions(text):
        assert not LEVEL.search(GLUED.sub("", caption)), caption
    prose = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    for paragraph in re.split(r"\n\s*\n", prose):
        bare = GLUED.sub("", paragraph)
        if re.search(r"\b[CX]\d{1,2}[ab]?\b", bare):
            assert not LEVEL.search(bare), paragraph


def test_the_literal_verdict_check_catches_literals() -> None:
    assert _literal_verdicts_in_code('claims.record("C1", "verified", "x")')
    assert _literal_verdicts_in_code('v = "partly verified" if ok else "not reproduced"')
    assert _literal_verdicts_in_code('glue("v", Markdown("**verified**"))')
    assert not _literal_verdicts_in_code("book.record(ch1.LEMMA1.verdicts(check))")
    assert LEVEL.search("C38 is verified here") and not LEVEL.search(GLUED.sub("", "C38 ({glue:md}`verdict-C38`)"))
    assert _captions("```{glue:figure} fig-x\n:name: fig-x\n\nSupports C1 (verified).\n```")
