"""A chapter's verdicts as its reader sees them: what :func:`scansnap.book.record` returns to display.

:class:`VerdictTable` shows the verdicts a chapter recorded as a table, one row per claim and kind of evidence, the
rows of a claim together under its id and headline (the weakest verdict on the evidence that decides it, as in the
ledger); each level a coloured chip linking to the claim's row of the claims ledger (``claims.html#C24``), the
numbers the rule used and its control's numbers in their own columns. Under the table each reason once
(:func:`reasons`): why verdicts are inconclusive, naming the claims it leaves undecided and what would decide them,
or the reduced protocol a verdict was reached under; a row says only which reason is its own and links to it.

The site shows its ``text/html`` (myst-nb prefers it for the HTML builder; JupyterLab renders it too), with its
stylesheet inlined so that a notebook shows the same chips; ``text/markdown`` and ``text/plain`` carry the same
content as a pipe table and a list, for a front end that renders neither. Every text from a verdict is escaped.
The chips take the ledger's colours (:data:`scansnap._ledger_assets.LEVEL_COLOURS`).
"""

from __future__ import annotations

import hashlib
import html
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from scansnap import claims
from scansnap._ledger_assets import SHORT, level_rules, verdict_slug
from scansnap.verdicts import EVIDENCE, INCONCLUSIVE, Outcome, Verdict

__all__ = ["LEDGER", "STYLE", "Reason", "VerdictTable", "claim_link", "reasons"]

LEDGER = "../claims.html"
"""The claims ledger (``book/claims.html``) as a chapter page (``book/chapters/*.html``) links to it."""

_BOX = ".sv-verdicts"
STYLE = ("<style>\n" + f"""{_BOX} {{ container-type: inline-size; margin: .5em 0 1em; }}
{_BOX} table.sv-table {{ width: 100%; border-collapse: collapse; font-size: .85em; margin: 0 0 .6em; }}
{_BOX} .sv-table th, {_BOX} .sv-table td {{ border: 0; border-bottom: 1px solid var(--pst-color-border, #ccc);
  padding: .35em .45em; vertical-align: top; text-align: left; overflow-wrap: anywhere; background: none; }}
{_BOX} .sv-table thead th {{ border-bottom: 2px solid var(--pst-color-text-muted, #888); font-weight: 600; }}
{_BOX} .sv-table tbody {{ border-top: 2px solid var(--pst-color-text-muted, #888); }}
{_BOX} .sv-table th.sv-id {{ font-weight: 400; width: 5.5em; }}
{_BOX} .sv-table td.sv-ev {{ width: 7em; overflow-wrap: normal; }}
{_BOX} .sv-table td.sv-level {{ width: 8.5em; overflow-wrap: normal; }}
{_BOX} .sv-v {{ white-space: nowrap; }}
{_BOX} .sv-id > a {{ font-weight: 700; }}
{_BOX} .sv-head {{ display: block; margin-top: .3em; font-size: .85em; color: var(--pst-color-text-muted, #555); }}
{_BOX} .sv-chip {{ display: inline-block; padding: 0 .4em; border: 1px solid #555; border-radius: 4px;
  line-height: 1.45; text-decoration: none; white-space: nowrap; }}
{_BOX} a.sv-chip:hover, {_BOX} a.sv-chip:focus {{ outline: 2px solid #0969da; text-decoration: none; }}
{_BOX} .sv-control .sv-chip {{ font-size: .9em; }}
{_BOX} .sv-why, {_BOX} .sv-beside, {_BOX} .sv-crit {{ display: block; margin-top: .25em; font-size: .85em;
  color: var(--pst-color-text-muted, #555); }}
{_BOX} ul.sv-nums {{ list-style: none; margin: .2em 0 0; padding: 0; }}
{_BOX} ul.sv-nums li {{ margin: 0; padding-left: 1.2em; text-indent: -1.2em; }}
{_BOX} .sv-k {{ font-family: var(--pst-font-family-monospace, monospace); font-size: .9em; }}
{_BOX} .sv-none {{ color: var(--pst-color-text-muted, #777); }}
{_BOX} .sv-reasons ul {{ margin: .2em 0 0; padding-left: 1.2em; }}
{_BOX} .sv-reasons li {{ margin-bottom: .35em; }}
{_BOX} .sv-reasons {{ font-size: .92em; }}
{_BOX} .sv-reasons .sv-tok {{ white-space: nowrap; }}
{level_rules(_BOX)}@container (max-width: 40em) {{
  {_BOX} .sv-table thead {{ position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }}
  {_BOX} .sv-table, {_BOX} .sv-table tbody, {_BOX} .sv-table th.sv-id {{ display: block; width: 100%;
    box-sizing: border-box; }}
  {_BOX} .sv-table tbody {{ border: 1px solid var(--pst-color-border, #bbb); border-radius: 6px;
    margin-bottom: .6em; }}
  {_BOX} .sv-table tr {{ display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); }}
  {_BOX} .sv-table tr + tr {{ border-top: 1px dashed var(--pst-color-border, #ccc); }}
  {_BOX} .sv-table th.sv-id {{ grid-column: 1 / -1; min-width: 0; padding: .3em .6em;
    border-bottom: 1px solid var(--pst-color-border, #ccc); }}
  {_BOX} .sv-table th.sv-id .sv-head {{ display: inline; margin: 0 0 0 .6em; }}
  {_BOX} .sv-table td {{ display: block; min-width: 0; border: 0; padding: .25em .6em; }}
  {_BOX} .sv-table td.sv-nums::before, {_BOX} .sv-table td.sv-control::before {{ content: attr(data-label);
    display: block; font-size: .85em; font-weight: 600; color: var(--pst-color-text-muted, #555); }}
  {_BOX} .sv-table td.sv-empty {{ display: none; }}
  {_BOX} .sv-table tr:has(> td.sv-empty) > td.sv-nums {{ grid-column: 1 / -1; }}
}}
</style>""")
"""The verdict table's stylesheet (inlined into each table: a notebook has no site stylesheet). Below a box of
40em the table becomes cards, one per claim, so that nothing is wider than the page's column at 400 px."""


def _command(command: str) -> str:
    """A shell command as HTML code that breaks only between its words."""
    return "<code>" + " ".join(f'<span class="sv-tok">{_e(w)}</span>' for w in command.split()) + "</code>"


def _kind(evidence: str) -> str:
    """The short name of a kind of evidence (as the ledger writes it), escaped, breaking only before its
    parenthesis: ``training (T = ∞)`` on two lines at most."""
    name, paren, rest = _e(SHORT[evidence]).partition(" (")
    return name + (" (" + rest.replace(" ", "\u00a0") if paren else "")


def _e(text: object) -> str:
    """Escaped for HTML, on one line (a blank line would end a raw HTML block of the page's markdown)."""
    return html.escape(" ".join(str(text).split()))


def claim_link(claim_id: str, ledger: str = LEDGER, text: str | None = None, cls: str = "") -> str:
    """The claim id (or ``text``) as an HTML link to its row of the claims ledger (``claims.html#C38``), for a
    chapter's verdict table or prose (raw HTML: a Markdown link to an ``.html`` file would be read as a
    cross-reference); ``cls``: its CSS class."""
    attr = f' class="{_e(cls)}"' if cls else ""
    return f'<a{attr} href="{_e(ledger)}#{_e(claim_id)}">{_e(claim_id if text is None else text)}</a>'


@dataclass(frozen=True)
class Reason:
    """Verdicts that share one qualification (:meth:`scansnap.verdicts.Verdict.qualification`): why they are
    inconclusive, or the reduced protocol they were reached under.

    Attributes:
        text: the qualification, e.g. ``"the control passes too"``, ``"reduced protocol: steps 10 (paper profile:
            100)"``.
        undecided: the inconclusive verdicts it covers, in the table's order.
        decided: the verdicts reached under it all the same (a reduced protocol labels a verdict in both directions;
            it makes one inconclusive only where the rule depends on what was cut).
        decide: what would decide the undecided ones: ``(words, commands)`` pairs, each a kind of run and the
            commands that make it (empty when there is no command to give).
    """

    text: str
    undecided: tuple[Verdict, ...]
    decided: tuple[Verdict, ...] = ()
    decide: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def anchor(self) -> str:
        """A page id for the reason (stable: a hash of its words), which the table's rows link to."""
        return "sv-reason-" + hashlib.sha1(self.text.encode()).hexdigest()[:8]

    @property
    def head(self) -> str:
        """The reason's kind in words (``"reduced protocol"``, ``"effect too small to judge"``: the
        :class:`~scansnap.outcomes.Outcome` of its verdicts)."""
        return self._parts()[0]

    def _parts(self) -> tuple[str, str]:
        return (self.undecided + self.decided)[0].qualification_parts()

    def line(self, text: Callable[[str], str], link: Callable[[str], str], code: Callable[[str], str]) -> str:
        """The reason's line after its head: its details, the claims it leaves undecided and what would decide them,
        the claims decided under it; ``text`` escapes words, ``link`` writes a claim id, ``code`` a command."""

        def covers(found: tuple[Verdict, ...]) -> str:
            kinds = dict.fromkeys(v.evidence for v in found)
            return "; ".join(f"{', '.join(link(v.claim) for v in found if v.evidence == k)} on {text(SHORT[k])}"
                             for k in kinds)

        detail = self._parts()[1]
        out = f": {text(detail)}." if detail else "."
        if self.undecided:
            decide = "; ".join(text(words) + (": " + ", ".join(map(code, cmds)) if cmds else "")
                               for words, cmds in self.decide)
            them = "it" if len(self.undecided) == 1 else "them"
            out += f" Undecided: {covers(self.undecided)}; what would decide {them}: {decide}."
        if self.decided:
            out += (f" Decided all the same (the rule does not depend on what this run cut; the label stays with "
                    f"the verdict either way): {covers(self.decided)}.")
        return out


def _head(v: Verdict) -> str:
    return v.qualification_parts()[0]


def _decision(v: Verdict) -> tuple[str, str]:
    """What would decide the inconclusive ``v``: a kind of run in words, and a command that makes it (or "")."""
    if v.outcome is Outcome.REDUCED_PROTOCOL:
        whose = "the book's full protocol" if claims.get(v.claim).origin == "book" else "the paper's protocol"
        anchor = v.link.partition("#")[2]
        figure = anchor if anchor.startswith("fig-") else "<figure-id>"
        return (f"a run of the paper profile, at {whose}, e.g. a stored run",
                f"python -m scansnap reproduce {figure} --profile paper --store")
    if v.outcome is Outcome.TOO_SMALL:
        return ("a run in which the effect the rule tests happens at a visible size (the page shows how far the "
                "runs searched get)", "")
    if v.outcome is Outcome.TOO_FEW:
        return ("a run with as many valid points as the rule needs (the reason says how many), e.g. more learning "
                "rates outside the degenerate regime", "")
    if v.outcome is Outcome.PREMISE_NOT_MET:
        return ("a run inside the claim's premise (the page says which premise the run missed)", "")
    return (f"a run in which the measured effect exceeds what the control ({v.control_level} on the same rule) "
            "already shows, e.g. a longer horizon or a larger effect size", "")


def reasons(made: Iterable[Verdict]) -> list[Reason]:
    """The qualified verdicts of ``made`` grouped by their qualification, in the order the qualifications first
    appear: each reason once, with the verdicts it leaves undecided, what would decide them (each kind of run once,
    with the commands that make it) and the verdicts decided under it."""
    groups: dict[str, list[Verdict]] = {}
    for v in made:
        if v.qualification():
            groups.setdefault(v.qualification(), []).append(v)
    out = []
    for text, found in groups.items():
        undecided = tuple(v for v in found if v.level == INCONCLUSIVE)
        decide: dict[str, list[str]] = {}
        for words, command in map(_decision, undecided):
            decide.setdefault(words, [])
            if command and command not in decide[words]:
                decide[words].append(command)
        out.append(Reason(text, undecided, tuple(v for v in found if v.level != INCONCLUSIVE),
                          tuple((w, tuple(c)) for w, c in decide.items())))
    return out


def _title(found: list[Reason]) -> str:
    undecided, decided = any(r.undecided for r in found), any(r.decided for r in found)
    if undecided and decided:
        return "Undecided or under a reduced protocol here"
    return "Undecided here" if undecided else "Under a reduced protocol here"


def _ordered(made: Iterable[Verdict]) -> tuple[Verdict, ...]:
    """One verdict per claim and kind of evidence (the last one made, as :func:`scansnap.claims.record` keeps it),
    in the ledger's order of claims, each claim's kinds in the order of :data:`scansnap.verdicts.EVIDENCE`."""
    last = {(v.claim, v.evidence): v for v in made}
    order = {c.id: i for i, c in enumerate(claims.CLAIMS)}
    kinds = list(EVIDENCE)
    return tuple(sorted(last.values(), key=lambda v: (order.get(v.claim, len(order)), kinds.index(v.evidence))))


@dataclass(frozen=True)
class VerdictTable:
    """Recorded verdicts to display (what :func:`scansnap.book.record` returns).

    Attributes:
        verdicts: the verdicts, one per claim and kind of evidence (the last made of each), in the ledger's order of
            claims, each claim's kinds in the order of :data:`scansnap.verdicts.EVIDENCE`.
        headlines: claim id -> its headline (:func:`scansnap.claims.headline`) after these were recorded.
        ledger: the claims ledger as the page links to it (:data:`LEDGER`).
    """

    verdicts: tuple[Verdict, ...]
    headlines: dict[str, str]
    ledger: str = LEDGER

    @classmethod
    def of(cls, made: Iterable[Verdict], headlines: dict[str, str] | None = None,
           ledger: str = LEDGER) -> VerdictTable:
        """The table of ``made`` (default headlines: :func:`scansnap.claims.headline` of each claim)."""
        found = _ordered(made)
        if headlines is None:
            headlines = {v.claim: claims.headline(v.claim) for v in found}
        return cls(found, headlines, ledger)

    @property
    def has_control(self) -> bool:
        """Whether any verdict was judged on a control (else the table has no control column)."""
        return any(v.control_level for v in self.verdicts)

    def reasons(self) -> list[Reason]:
        """The qualified verdicts grouped by reason (:func:`reasons`)."""
        return reasons(self.verdicts)

    def _chip(self, level: str, claim_id: str | None = None) -> str:
        cls = f"sv-chip v-{verdict_slug(level)}"
        if claim_id is None:
            return f'<span class="{cls}">{_e(level)}</span>'
        return claim_link(claim_id, self.ledger, text=level, cls=cls)

    @staticmethod
    def _numbers(pairs: tuple[tuple[str, str], ...]) -> str:
        items = "".join(f'<li><span class="sv-k">{_e(k).replace("_", "_<wbr>")}</span> <span class="sv-v">= {_e(v)}'
                        "</span></li>" for k, v in pairs)
        return f'<ul class="sv-nums">{items}</ul>'

    def _row(self, v: Verdict, anchors: dict[str, str]) -> str:
        beside = v.evidence not in claims.admissible(v.claim)
        ev = (f'<span class="sv-kind" title="{_e(EVIDENCE[v.evidence])}">{_kind(v.evidence)}</span>'
              + ('<span class="sv-beside">beside the headline</span>' if beside else ""))
        q = v.qualification()
        why = f'<a class="sv-why" href="#{anchors[q]}">{_e(_head(v))} (below)</a>' if q else ""
        if v.criteria_level:
            why += f'<span class="sv-crit">the criteria alone: {_e(v.criteria_level)}</span>'
        cells = [("evidence", "sv-ev", ev),
                 ("verdict", "sv-level", self._chip(v.level, v.claim) + why),
                 ("numbers", "sv-nums", self._numbers(v.number_pairs()))]
        if self.has_control:
            control = (f"{self._chip(v.control_level)}{self._numbers(v.number_pairs(control=True))}"
                       if v.control_level else '<span class="sv-none">none</span>')
            cells.append(("control", "sv-control" if v.control_level else "sv-control sv-empty", control))
        return "".join(f'<td class="{cls}" data-label="{label}">{body}</td>' for label, cls, body in cells)

    def _reasons_html(self, found: list[Reason]) -> str:
        items = "".join(f'<li id="{r.anchor}"><b>{_e(r.head)}</b>'
                        f'{r.line(_e, lambda c: claim_link(c, self.ledger), _command)}</li>'
                        for r in found)
        return f'<div class="sv-reasons"><p><b>{_title(found)}</b>, by reason:</p><ul>{items}</ul></div>' if found \
            else ""

    def _repr_html_(self) -> str:
        found = self.reasons()
        anchors = {r.text: r.anchor for r in found}
        heads = ["claim", "evidence", "verdict", "numbers"] + (["control"] if self.has_control else [])
        parts = [f'<div class="sv-verdicts">{STYLE}<table class="sv-table"><thead><tr>'
                 + "".join(f'<th scope="col">{h}</th>' for h in heads) + "</tr></thead>"]
        for cid in dict.fromkeys(v.claim for v in self.verdicts):
            mine = [v for v in self.verdicts if v.claim == cid]
            head = self.headlines.get(cid, claims.NOT_CHECKED)
            claim = (f'<th scope="rowgroup" class="sv-id" rowspan="{len(mine)}">{claim_link(cid, self.ledger)}'
                     f'<span class="sv-head">headline {self._chip(head)}</span></th>')
            rows = [f"<tr>{claim if i == 0 else ''}{self._row(v, anchors)}</tr>" for i, v in enumerate(mine)]
            parts.append(f'<tbody class="sv-claim">{"".join(rows)}</tbody>')
        parts.append("</table>" + self._reasons_html(found) + "</div>")
        return "".join(parts)

    def _repr_markdown_(self) -> str:
        cols = "| claim | evidence | verdict | numbers |" + (" control |" if self.has_control else "")
        lines = [cols, "|---" * cols.count(" |") + "|"]
        for v in self.verdicts:
            why = f" ({_head(v)}, below)" if v.qualification() else ""
            why += f"; the criteria alone: {v.criteria_level}" if v.criteria_level else ""
            cells = [f"{v.claim} (headline: {self.headlines.get(v.claim, claims.NOT_CHECKED)})", SHORT[v.evidence],
                     f"**{v.level}**{why}", _md(v.number_pairs())]
            if self.has_control:
                cells.append(f"{v.control_level}: {_md(v.number_pairs(control=True))}" if v.control_level else "none")
            lines.append("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
        found = self.reasons()
        if found:
            lines += ["", f"**{_title(found)}**, by reason:", ""]
            lines += [f"- **{r.head}**{r.line(str, str, lambda c: f'`{c}`')}" for r in found]
        return "\n".join(lines) + "\n"

    def _repr_pretty_(self, p, cycle: bool) -> None:
        p.text(self._repr_markdown_())


def _md(pairs: tuple[tuple[str, str], ...]) -> str:
    return "; ".join(f"{k} = {v}" for k, v in pairs)
