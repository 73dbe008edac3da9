"""scansnap.verdict_table (and scansnap.book.record, which returns it): a chapter's verdicts as an HTML table, one row
per claim and kind of evidence, each level a chip linking to the ledger, the numbers and the control's numbers in
their own columns, every text escaped; the inconclusive verdicts grouped by reason, each reason said once."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from verdict_fixtures import Cfg, Err

from scansnap import book, claims, verdict_table
from scansnap._ledger_assets import LEVEL_COLOURS
from scansnap._ledger_assets import STYLE as LEDGER_STYLE
from scansnap.verdict_table import STYLE, VerdictTable, reasons
from scansnap.verdicts import INCONCLUSIVE, LEVELS, Outcome, Rule, Verdict, at_most


@pytest.fixture(autouse=True)
def artifacts(tmp_path, monkeypatch):
    monkeypatch.setenv("SCANSNAP_ARTIFACTS", str(tmp_path / "artifacts"))
    monkeypatch.setenv("SCANSNAP_PROFILE", "book")


class Short(Cfg):
    """A run below its paper protocol (1 step of 100)."""

    GATED = ("steps",)
    PRESETS = {"paper": dict(steps=100)}


NEEDS = "the effect needs the paper's 100 steps"


def _judge(claim: str, evidence: str, err: float, control: float | None = None, config=None, link: str = "",
           too_small: str = "", needs: bool = False) -> Verdict:
    """A verdict of a one-criterion rule; ``needs``: the rule depends on ``steps`` (a cut of it is inconclusive)."""
    rule = Rule(claim, evidence, Err, (at_most("err", "error", 1e-10, 1e-6),), "errors of order one",
                depends_on={"steps": NEEDS} if needs else {})
    extra = {} if control is None else {"control": Err(control), "too_small": too_small}
    return rule.judge(Err(err), config or Cfg(), link=link, **extra)


class _Tags(HTMLParser):
    """Every start tag with its attributes, and the text of the page."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)

    def find(self, tag: str, **attrs: str) -> list[dict[str, str]]:
        return [a for t, a in self.tags if t == tag and all(k in a and v in a[k].split() for k, v in attrs.items())]


def _mixed() -> list[Verdict]:
    """C1 on derivation (verified) and training (partly, its control fails), C2 on derivation (not reproduced),
    C38 on training with a control that passes too (inconclusive)."""
    return [_judge("C1", "derivation", 0.0), _judge("C1", "training-population", 1e-8, control=1.0),
            _judge("C2", "derivation", 1.0), _judge("C38", "training-sampled", 0.0, control=0.0)]


def test_the_table_is_html_with_one_row_per_verdict_and_a_header() -> None:
    table = VerdictTable.of(claims.record(*_mixed()))
    page = _Tags(table._repr_html_())
    assert len(page.find("table")) == 1
    assert len(page.find("tr")) == 4 + 1
    assert len(page.find("th", scope="col")) == 5
    assert len(page.find("tbody")) == 3, "one group of rows per claim"
    assert page.find("th", scope="rowgroup", rowspan="2"), "C1's id spans its two rows"
    assert len(page.find("td", **{"class": "sv-nums"})) == len(page.find("td", **{"class": "sv-control"})) == 4
    text = "".join(page.text)
    assert "err = 1.0e-08" in text and "err = 1" in text


@pytest.mark.parametrize("level", LEVELS)
def test_each_level_is_a_chip_of_its_class_linking_to_the_ledger_row(level: str) -> None:
    made = {"verified": _judge("C1", "derivation", 0.0), "partly verified": _judge("C1", "derivation", 1e-8),
            "not reproduced": _judge("C1", "derivation", 1.0),
            INCONCLUSIVE: _judge("C1", "training-population", 0.0, control=0.0)}[level]
    assert made.level == level
    page = _Tags(VerdictTable.of([made], {"C1": "verified"})._repr_html_())
    slug = level.replace(" ", "-")
    chips = page.find("a", **{"class": f"v-{slug}"})
    assert chips and chips[0]["href"] == "../claims.html#C1" and "sv-chip" in chips[0]["class"]
    assert f".sv-verdicts .v-{slug} {{ {LEVEL_COLOURS[slug]} }}" in STYLE


def test_the_chips_take_the_ledgers_colours() -> None:
    for slug, rule in LEVEL_COLOURS.items():
        assert f".lp-root .v-{slug} {{ {rule} }}" in LEDGER_STYLE
        assert f".sv-verdicts .v-{slug} {{ {rule} }}" in STYLE


def test_headline_control_and_beside() -> None:
    made = claims.record(*_mixed())
    page = _Tags(VerdictTable.of(made)._repr_html_())
    heads = {a.get("class") for a in page.find("span", **{"class": "sv-chip"})}
    assert "sv-chip v-verified" in heads  # C1's headline: its derivation (training does not decide a theory claim)
    assert "sv-chip v-not-reproduced" in heads  # C2's headline, and C1's training control
    text = "".join(page.text)
    assert text.count("beside the headline") == 1  # C1's training row
    assert "none" in text  # C1's derivation has no control
    assert [t for t, a in page.tags if t == "a" and a.get("href") == "../claims.html#C38"]


def test_no_control_column_when_nothing_has_a_control() -> None:
    page = _Tags(VerdictTable.of([_judge("C1", "derivation", 0.0)])._repr_html_())
    assert len(page.find("th", scope="col")) == 4 and not page.find("td", **{"class": "sv-control"})


def test_rows_follow_the_ledger_and_keep_the_last_verdict_of_a_kind() -> None:
    made = [_judge("C38", "training-sampled", 0.0, control=1.0), _judge("C2", "derivation", 1.0),
            _judge("C1", "training-population", 0.0, control=1.0), _judge("C1", "derivation", 1.0),
            _judge("C1", "derivation", 0.0)]
    table = VerdictTable.of(made, {})
    assert [(v.claim, v.evidence, v.level) for v in table.verdicts] == [
        ("C1", "derivation", "verified"), ("C1", "training-population", "verified"),
        ("C2", "derivation", "not reproduced"), ("C38", "training-sampled", "verified")]


def test_every_text_is_escaped() -> None:
    evil = Verdict("C1", INCONCLUSIVE, "training-population", "rule", {"a<b": 1.0}, control={"a<b": 1.0},
                   control_level="verified", reason="effect too small to judge: <script>alert(1)</script> & more",
                   outcome=Outcome.TOO_SMALL)
    out = VerdictTable.of([evil], {"C1": "verified"}, ledger='x"y.html')._repr_html_()
    assert "<script>" not in out and "&lt;script&gt;alert(1)&lt;/script&gt; &amp; more" in out
    assert "a&lt;b" in out and "a<b" not in out
    assert 'href="x&quot;y.html#C1"' in out


def test_two_claims_with_one_reason_give_one_line_naming_both() -> None:
    made = [_judge("C38", "training-sampled", 0.0, control=0.0), _judge("C39", "training-sampled", 0.0, control=0.0),
            _judge("C42", "training-sampled", 1.0, control=1.0, config=Short(), needs=True,
                   link="book/chapters/07-syn-medium.html#fig-paper-12")]
    found = reasons(made)
    assert [r.head for r in found] == ["the control passes too", "reduced protocol"]
    assert [[v.claim for v in r.undecided] for r in found] == [["C38", "C39"], ["C42"]]
    out = VerdictTable.of(made, {})._repr_html_()
    page = _Tags(out)
    assert [a["id"] for a in page.find("li") if "id" in a] == [r.anchor for r in found]
    line = re.search(rf'<li id="{found[0].anchor}">(.*?)</li>', out).group(1)
    assert "#C38" in line and "#C39" in line and "on training (sampled)" in line and "what would decide them" in line
    assert out.count("the control passes too") == 1 + 2  # the line, and each row's link to it
    assert out.count("steps 1 (paper profile: 100)") == 1  # the line only: C42's row links to it
    assert [a["href"] for a in page.find("a", **{"class": "sv-why"})] == [f"#{found[0].anchor}"] * 2 + [
        f"#{found[1].anchor}"]
    assert "<b>Undecided here</b>, by reason" in out


def test_a_reduced_protocol_labels_passes_and_fails_alike_and_leaves_undecided_only_what_the_rule_depends_on() -> None:
    cut = dict(config=Short(), link="book/chapters/07-syn-medium.html#fig-paper-6")
    made = [_judge("C38", "training-sampled", 1.0, control=1.0, needs=True, **cut),
            _judge("C39", "training-sampled", 0.0, control=1.0, **cut),
            _judge("C42", "training-sampled", 1.0, control=1.0, **cut)]
    assert [v.level for v in made] == [INCONCLUSIVE, "verified", "not reproduced"]
    assert [v.label().startswith(f"{v.level} (reduced protocol: steps 1") for v in made] == [True] * 3
    needed, labelled = reasons(made)
    assert [v.claim for v in needed.undecided] == ["C38"] and not needed.decided and NEEDS in needed.text
    assert not labelled.undecided and [v.claim for v in labelled.decided] == ["C39", "C42"]
    out = VerdictTable.of(made, {})._repr_html_()
    assert out.count(f'href="#{labelled.anchor}"') == 2 and out.count(f'href="#{needed.anchor}"') == 1
    assert "Undecided or under a reduced protocol here" in out and "Decided all the same" in out
    only = VerdictTable.of(made[1:], {})._repr_html_()
    assert "Under a reduced protocol here" in only and "Undecided:" not in only and "would decide" not in only
    assert reasons([_judge("C38", "training-sampled", 0.0, control=1.0)]) == []
    assert out.count("the criteria alone: ") == 1  # C38's: the only undecided verdict
    assert "the criteria alone: " in VerdictTable.of(made, {})._repr_markdown_()


def test_what_would_decide_names_the_cuts_once_and_the_command_for_its_figure() -> None:
    """The reduced protocol names its cuts once and the command for each figure once; a control that passes is
    named with its level; an effect too small says what the run must show."""
    short = [_judge(c, "training-sampled", 1.0, control=1.0, config=Short(), needs=True,
                    link=f"book/chapters/07-syn-medium.html#{fig}") for c, fig in (("C38", "fig-paper-6"),
                                                                               ("C39", "fig-paper-6"),
                                                                               ("X4", "fig-heads"))]
    (reason,) = reasons(short)
    text = VerdictTable.of(short, {})._repr_markdown_()
    assert text.count("steps 1 (paper profile: 100)") == 1
    assert text.count("`python -m scansnap reproduce fig-paper-6 --profile paper --store`") == 1
    assert "`python -m scansnap reproduce fig-heads --profile paper --store`" in text
    assert "the paper's protocol" in text and "the book's full protocol" in text
    assert [len(cmds) for _, cmds in reason.decide] == [1, 1]
    both = _judge("C38", "training-sampled", 0.0, control=0.0)
    assert "(verified on the same rule)" in VerdictTable.of([both], {})._repr_html_()
    tiny = VerdictTable.of([_judge("C38", "training-sampled", 0.0, control=1.0, too_small="ln chi 0.02")], {})
    assert "<b>effect too small to judge</b>: ln chi 0.02. Undecided: " in tiny._repr_html_()
    assert "happens at a visible size" in tiny._repr_markdown_()


def test_markdown_and_plain_fallbacks_carry_the_same_rows() -> None:
    table = VerdictTable.of(claims.record(*_mixed()))
    md = table._repr_markdown_()
    rows = [line for line in md.splitlines() if line.startswith("|")]
    assert len(rows) == 2 + 4 and rows[0].count("|") == 6
    assert "**inconclusive** (the control passes too, below)" in md and "**Undecided here**, by reason:" in md
    assert md.count("the control passes too") == 2

    class Printer:
        def __init__(self) -> None:
            self.out = ""

        def text(self, s: str) -> None:
            self.out += s

    p = Printer()
    table._repr_pretty_(p, False)
    assert p.out == md


def test_record_glues_every_key_and_returns_the_table(monkeypatch) -> None:
    glued = {}
    monkeypatch.setattr(book, "_glue", lambda key, value: glued.__setitem__(key, value))
    table = book.record(_mixed())
    assert isinstance(table, VerdictTable) and len(table.verdicts) == 4
    assert set(glued) == {"verdict-C1", "verdict-C2", "verdict-C38", "verdict-C1-derivation",
                          "verdict-C1-training-population", "verdict-C2-derivation", "verdict-C38-training-sampled"}
    assert glued["verdict-C1"].data == "**verified**" and glued["verdict-C2-derivation"].data == "**not reproduced**"
    assert table.headlines == {"C1": "verified", "C2": "not reproduced", "C38": INCONCLUSIVE}


def test_claim_link() -> None:
    assert book.claim_link("C38") == '<a href="../claims.html#C38">C38</a>' == verdict_table.claim_link("C38")
    assert book.claim_link("C1", "claims.html", text="ok", cls="c") == '<a class="c" href="claims.html#C1">ok</a>'


def test_a_notebook_gets_html_markdown_and_plain_text() -> None:
    """What IPython sends to a front end: text/html (the site and JupyterLab), with text/markdown and text/plain
    carrying the same table for a front end that renders no HTML."""
    from IPython.core.formatters import DisplayFormatter

    table = VerdictTable.of(claims.record(*_mixed()))
    bundle, _ = DisplayFormatter().format(table)
    assert {"text/html", "text/markdown", "text/plain"} <= set(bundle)
    assert bundle["text/html"] == table._repr_html_() and bundle["text/plain"] == table._repr_markdown_()
