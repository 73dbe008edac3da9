"""scansnap.ledger_page: the claims ledger as a navigable page (rows, picture, table, anchors, history)."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from verdict_fixtures import Cfg, Err

from scansnap import claims, ledger_page
from scansnap.verdicts import Rule, at_least, at_most

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def artifacts(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("SCANSNAP_ARTIFACTS", str(tmp_path / "artifacts"))
    monkeypatch.setenv("SCANSNAP_PROFILE", "book")
    return tmp_path / "artifacts"



def _record(claim: str, evidence: str, err: float, control: float | None = None) -> None:
    rule = Rule(claim, evidence, Err, (at_most("err", "error", 1e-10, 1e-6),), "errors of order one")
    made = rule.judge(Err(err), Cfg(), **({} if control is None else {"control": Err(control)}))
    claims.record(made)


def _locks(tmp_path: Path) -> tuple[Path, Path]:
    rules = {"rules": {"C1/derivation": {"claim": "C1", "history": [
        {"date": "2026-01-01", "commit": "abc", "change": "locked: err <= 1e-10", "reason": "first",
         "fingerprint": "f"},
        {"date": "2026-01-02", "commit": "def", "change": "err: verified 1e-12 -> 1e-10", "reason": "float32 <b>",
         "fingerprint": "g"}]},
        "C1/simulation": {"claim": "C1", "retired": True, "history": [
            {"date": "2026-01-01", "commit": "abc", "change": "retired", "reason": "gone", "fingerprint": "retired"}]},
        "C10/derivation": {"claim": "C10", "history": []}}}
    lock = {"profile": "book", "verdicts": {}, "changes": [
        {"claim": "C1", "what": "headline", "from": "partly verified", "to": "verified", "date": "2026-01-03",
         "commit": "123", "reason": "measured again"},
        {"claim": "C2", "what": "derivation", "from": "absent", "to": "verified", "date": "2026-01-03",
         "commit": "123", "reason": "measured again"}]}
    (tmp_path / "rules.json").write_text(json.dumps(rules))
    (tmp_path / "lock.json").write_text(json.dumps(lock))
    return tmp_path / "rules.json", tmp_path / "lock.json"


def test_rows_split_verdicts_and_carry_history_and_changes(tmp_path: Path) -> None:
    _record("C1", "derivation", 0.0)
    _record("C1", "training-population", 1e-8, control=1.0)  # a theory claim: training is shown beside
    _record("C38", "simulation", 0.0)  # a claim about training: a simulation does not decide it
    rows = {r.claim.id: r for r in ledger_page.rows(*_locks(tmp_path))}
    assert list(rows) == [c.id for c in claims.CLAIMS]
    c1 = rows["C1"]
    assert c1.order == 0 and c1.chapter == 1 and c1.headline == "verified"
    assert [v.evidence for v in c1.deciding] == ["derivation"]
    assert [v.evidence for v in c1.beside] == ["training-population"]
    assert c1.evidence == ("derivation", "training-population")
    assert [h["reason"] for h in c1.histories["derivation"]] == ["first", "float32 <b>"]
    assert "simulation (retired)" in c1.histories
    assert [c["to"] for c in c1.changes] == ["verified"]
    assert rows["C38"].headline == claims.NOT_CHECKED and rows["C38"].deciding == ()
    assert rows["C38"].chapter == 7 and [v.evidence for v in rows["C38"].beside] == ["simulation"]
    assert rows["X1"].claim.origin == "book" and rows["X1"].chapter == 9


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.rows: list[dict[str, str | None]] = []
        self.ids: list[str] = []
        self.chips: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.append(a["id"])
        if tag == "tr" and a.get("data-chapter"):
            self.rows.append(a)
        if tag == "a" and "lp-chip" in (a.get("class") or ""):
            self.chips.append(a["href"])


def test_page_has_an_anchor_row_and_a_chip_per_claim(tmp_path: Path) -> None:
    _record("C1", "derivation", 0.0)
    _record("C2", "derivation", 1e-8)
    text = ledger_page.page("../", *_locks(tmp_path))
    tags = _Tags()
    tags.feed(text)
    ids = [c.id for c in claims.CLAIMS]
    assert [r["id"] for r in tags.rows] == ids
    assert sorted(tags.chips) == sorted(f"#{i}" for i in ids)
    assert "c1" in tags.ids and "C33a" in tags.ids and "c33a" in tags.ids  # the old lower-case anchors stay
    assert len(tags.ids) == len(set(tags.ids))
    first, second = tags.rows[0], tags.rows[1]
    assert first["data-verdict"] == "verified" and second["data-verdict"] == "partly-verified"
    assert first["data-evidence"] == "derivation" and first["data-origin"] == "paper"
    assert first["data-sort-verdict"] == "0" and second["data-sort-verdict"] == "1"
    x9 = next(r for r in tags.rows if r["id"] == "X9")
    assert x9["data-origin"] == "book" and x9["data-sort-origin"] == "1"
    assert tags.rows[-1]["id"] == claims.CENTRAL[-1].id and tags.rows[-1]["data-origin"] == "paper"
    assert '<a href="../book/chapters/01-setting.html">' in text
    # per claim: the rule's history (escaped) and the verdict changes of the lock
    assert "float32 &lt;b&gt;" in text and "partly verified → verified. Why: measured again" in text
    assert "none since it was first locked" in text
    assert "**Verdicts changed at the last lock** (2026-01-03" in text


def test_page_is_markdown_that_myst_reads_as_html_with_markdown_statements(tmp_path: Path) -> None:
    """Raw HTML blocks never hold a blank line (it would end the block and the rest would be read as markdown);
    each statement stands alone between blank lines (so its math is typeset); no "{{" (a MyST substitution)."""
    text = ledger_page.page("../", *_locks(tmp_path))
    assert "{{" not in text
    blocks = text.split("\n\n")
    statements = {" ".join(c.statement.split()) for c in claims.CLAIMS}
    found = [b for b in blocks if b in statements]
    assert len(found) == len(claims.CLAIMS)
    for b in blocks:
        if b in statements or b.startswith(("<style>", "<script>")) or not b.startswith("<"):
            continue
        assert re.match(r"</?(div|details|td|tr|table)\b", b), b[:80]  # a CommonMark HTML block of type 6
    table = text[text.index('<table class="lp-table"'):]
    n = len(claims.CLAIMS)  # per claim one group: its row and the full-width row of its details
    assert table.count('<tbody class="lp-claim"><tr class="lp-row" ') == n and table.count("</tbody>") == n
    assert table.count('<tr class="lp-detail"><td colspan="5"><details class="lp-more">') == n
    assert table.count("<tr") == 2 * n + 1 and table.count("</tr>") == 2 * n + 1


def test_controls_offer_every_filter_and_sort() -> None:
    text = ledger_page.page()
    for name in ("chapter", "verdict", "evidence", "origin", "text"):
        assert f'data-filter="{name}"' in text
    for key in ("claim", "chapter", "verdict", "origin"):
        assert f'data-sort="{key}"' in text or f'value="{key}:asc"' in text
    assert all(f'value="{v.replace(" ", "-")}"' in text for v in claims.VERDICTS)


def test_link_claims_points_gallery_links_at_the_claims_own_anchor() -> None:
    text = '<a href="../book/claims.html#c24">C24</a> <a href="../book/claims.html#c33a">C33a</a> x#c1"'
    out = ledger_page.link_claims(text)
    assert 'claims.html#C24"' in out and 'claims.html#C33a"' in out and out.endswith('x#c1"')


def test_chapter_titles_are_short() -> None:
    titles = ledger_page.chapter_titles()
    assert titles[6] == "6. Snap" and titles[1] == "1. The setting and Lemma 1" and set(titles) == set(range(1, 10))


def test_a_chapter_verdict_table_links_each_claim_to_its_row() -> None:
    from scansnap import book

    assert book.claim_link("C24") == '<a href="../claims.html#C24">C24</a>'
    rule = Rule("C35", "training-sampled", Err, (at_least("err", "error", 1.0, 0.5),), "none")
    made = rule.judge(Err(2.0), Cfg(), control=Err(2.0))  # the control passes too: inconclusive
    assert book.claim_link("C35") in book.VerdictTable.of([made], {})._repr_html_()


def test_the_page_opens_with_the_picture_and_counts_then_the_table(tmp_path: Path) -> None:
    _record("C1", "derivation", 0.0)
    text = ledger_page.page("../", *_locks(tmp_path))
    n, central = len(claims.CLAIMS), len(claims.CENTRAL)
    book = sum(c.origin == "book" for c in claims.CLAIMS)
    total = f"<b>{n} claims</b>: {n - book - central} of the paper, {central} central claims"
    assert text.index(total) < text.index('<table class="lp-tally"') < text.index('class="lp-legend"') \
        < text.index('<table class="lp-table"')
    # two tallies, never one count: C1's derivation counts in the theory's model only
    tally = text[text.index('<table class="lp-tally"'):text.index('class="lp-legend"')]
    assert tally.count("verified: <b>1</b>") == 1 and "holds in the theory&#x27;s model" in tally
    assert tally.index("verified: <b>1</b>") < tally.index("none judged")


def test_summary_is_the_ledgers_picture_linking_to_its_rows(tmp_path: Path) -> None:
    """The intro's picture: the ledger's own (same chips, same counts), each chip linking to the ledger page's row;
    no table and no element the ledger's script would drive."""
    _record("C1", "derivation", 0.0)
    _record("C2", "derivation", 1e-8)
    text = ledger_page.summary()
    tags = _Tags()
    tags.feed(text)
    assert sorted(tags.chips) == sorted(f"claims.html#{c.id}" for c in claims.CLAIMS)
    assert "<style>" in text and '<table class="lp-tally"' in text and '<table class="lp-table"' not in text
    assert 'id="ledger"' not in text and "<script" not in text
    picture = ledger_page.picture(ledger_page.rows(), "../")
    assert re.sub(r'href="claims\.html#', 'href="#', text.split("</style>")[1]).count("lp-chip v-verified") == \
        picture.count("lp-chip v-verified") == 1
    assert "verified: <b>1</b>" in text and "partly verified: <b>1</b>" in text
    assert '<a href="../book/chapters/01-setting.html">' in text


def test_code_words_in_rule_texts_are_set_as_code() -> None:
    """A rule's or a reason's word in backticks (e.g. a configuration's field) reads as code, never with its
    backticks; the rest stays escaped."""
    assert ledger_page._prose("the last `dense` steps <= 0.01") == "the last <code>dense</code> steps &lt;= 0.01"
    assert ledger_page._prose("no code here") == "no code here"


def test_no_claim_source_holds_math() -> None:
    """A claim's ``where`` is shown as plain text under its id (the statement is Markdown and typeset; ``where`` is
    not), so it must hold no TeX."""
    assert not [c.id for c in claims.CLAIMS if "$" in c.where or "\\" in c.where]
