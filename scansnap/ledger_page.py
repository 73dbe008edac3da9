"""The claims ledger as a page a reader can navigate (``book/claims.md``): a picture of every claim by chapter,
coloured by its verdict, with its kinds of evidence as marks; a table that sorts and filters by chapter, verdict,
evidence kind and origin, with a stable anchor per claim (``claims.html#C24``, the ids of
:data:`scansnap.claims.CLAIMS`); and, per claim, its verdicts' numbers, the history of each of its rules
(``ledger/rules.json``) and the changes of its verdicts (``ledger/verdicts-book.json``).

Everything on the page comes from the verdicts the build records and from the two locks; nothing is written by
hand. :func:`page` returns MyST markdown for a notebook cell's ``Markdown`` output: raw HTML, except each claim's
statement, which stays markdown (between blank lines, inside its table cell) so that its math is typeset like the
rest of the book. The page's stylesheet and script are inlined (:mod:`scansnap._ledger_assets`), so the page needs
no file of another page and makes no outside request. :func:`summary` is the same picture and counts for the intro.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scansnap import claims, ledger, manifest, tallies
from scansnap._io import source_checkout
from scansnap._ledger_assets import SCRIPT, SHORT, STYLE, verdict_slug
from scansnap.claims import VERDICTS, Claim
from scansnap.verdicts import EVIDENCE, TRAINING_KINDS, Level, Verdict, numbers_text

__all__ = ["LedgerRow", "chapter_titles", "link_claims", "page", "picture", "rows", "summary", "table",
           "verdict_slug"]

_SET_WORDS = {"paper": "of the paper", "central": "central claims of the paper (its abstract and introduction)",
              "book": "of this book"}
_MARKS = {"derivation": '<polygon points="5,.8 9.2,5 5,9.2 .8,5"/>', "simulation": '<circle cx="5" cy="5" r="4"/>',
          "training-population": '<polygon points="5,.8 9.3,9 .7,9"/>',
          "training-sampled": '<rect x="1" y="1" width="8" height="8"/>',
          "real-data": '<polygon points="5,.5 6.3,3.8 9.7,3.9 7,6 8,9.5 5,7.5 2,9.5 3,6 .3,3.9 3.7,3.8"/>'}


@dataclass(frozen=True)
class LedgerRow:
    """One claim as the page shows it.

    Attributes:
        claim: the claim (:class:`scansnap.claims.Claim`).
        order: its place in :data:`scansnap.claims.CLAIMS` (0-based): the default order.
        chapter: the number of the chapter that checks it (``1`` .. ``9``).
        headline: its headline, one of :data:`scansnap.claims.VERDICTS`.
        deciding: its recorded verdicts on the kinds of evidence that decide it.
        beside: its other recorded verdicts: training on a claim of the theory ("does it describe training?"), or a
            derivation or simulation beside a claim about training (which it does not decide).
        histories: ``<evidence kind> -> [{date, commit, change, reason, fingerprint}, ...]``, the history of each
            of its rules in ``ledger/rules.json`` (a retired rule's kind reads ``"<kind> (retired)"``).
        changes: its verdict changes in ``ledger/verdicts-book.json``, oldest first, each
            ``{claim, what, from, to, date, commit, reason}`` (``what``: ``"headline"`` or an evidence kind).
    """

    claim: Claim
    order: int
    chapter: int
    headline: str
    deciding: tuple[Verdict, ...] = ()
    beside: tuple[Verdict, ...] = ()
    histories: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    changes: tuple[dict[str, str], ...] = ()

    @property
    def evidence(self) -> tuple[str, ...]:
        """Every kind of evidence with a recorded verdict, deciding or beside, in the order of ``EVIDENCE``."""
        kinds = {v.evidence for v in (*self.deciding, *self.beside)}
        return tuple(k for k in EVIDENCE if k in kinds)


def rows(rules_path: Path | None = None, lock_path: Path | None = None) -> list[LedgerRow]:
    """Every claim of :func:`scansnap.claims.ledger` with its verdicts split into deciding and beside, its rules'
    histories and its verdict changes (default locks: ``ledger/rules.json``, ``ledger/verdicts-book.json``;
    a lock that does not exist gives empty histories or changes)."""
    try:
        locked = ledger.read_rules(rules_path)
        changes = ledger.read_lock(lock_path).get("changes", [])
    except FileNotFoundError:  # an installed package: no checkout, no locks
        locked, changes = {}, []
    out = []
    for i, (c, head, found) in enumerate(claims.ledger()):
        kinds = claims.admissible(c.id)
        histories = {}
        for key, entry in sorted(locked.items()):
            cid, _, kind = key.partition("/")
            if cid == c.id:
                histories[kind + (" (retired)" if entry.get("retired") else "")] = list(entry.get("history", []))
        out.append(LedgerRow(c, i, manifest.chapter_of(c.chapter), head,
                             tuple(v for v in found if v.evidence in kinds),
                             tuple(v for v in found if v.evidence not in kinds), histories,
                             tuple(ch for ch in changes if ch.get("claim") == c.id)))
    return out


def chapter_titles() -> dict[int, str]:
    """Chapter number -> its short title (the page's heading up to a colon or parenthesis: ``"6. Snap"``), read from
    ``book/chapters/NN-*.md`` of the checkout; ``"Chapter N"`` for a chapter whose page cannot be read."""
    titles = {n: f"Chapter {n}" for n in manifest.CHAPTERS}
    root = source_checkout()
    for n, doc in manifest.CHAPTERS.items() if root else ():
        path = root / f"{doc}.md"
        found = re.search(r"^# (.+)$", path.read_text(encoding="utf8"), re.M) if path.is_file() else None
        if found:
            titles[n] = re.split(r"[:(]", found.group(1))[0].strip()
    return titles


def _e(text: object) -> str:
    """Escaped for HTML, on one line (a blank line would end the raw HTML block of the markdown)."""
    return html.escape(" ".join(str(text).split()))


def _prose(text: object) -> str:
    """:func:`_e`, with ``name`` in backticks (a rule's or a reason's code words) set as code."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", _e(text))


def _mark(kind: str, beside: bool) -> str:
    cls = "lp-mk lp-beside" if beside else "lp-mk"
    return f'<svg class="{cls}" viewBox="0 0 10 10" aria-hidden="true">{_MARKS[kind]}</svg>'


def _marks(row: LedgerRow) -> str:
    return "".join(_mark(v.evidence, False) for v in row.deciding) + "".join(_mark(v.evidence, True)
                                                                           for v in row.beside)


def _chip(row: LedgerRow, ledger: str = "") -> str:
    words = [f"{row.claim.id}: {row.headline}"]
    if row.deciding:
        words.append("decided by " + ", ".join(f"{SHORT[v.evidence]} ({v.level})" for v in row.deciding))
    if row.beside:
        words.append("beside: " + ", ".join(f"{SHORT[v.evidence]} ({v.level})" for v in row.beside))
    return (f'<a class="lp-chip v-{verdict_slug(row.headline)}" href="{ledger}#{row.claim.id}" '
            f'title="{_e("; ".join(words))}"'
            f'>{row.claim.id}<span class="lp-marks">{_marks(row)}</span></a>')


def picture(found: list[LedgerRow], base: str = "", ledger: str = "", folded: bool = False) -> str:
    """The picture at the top of the ledger (HTML): the number of claims, the two tallies of each claim set
    (:mod:`scansnap.tallies`: what holds in the theory's model, what is observed in training or on real data; never
    one count of both), and per chapter a line of claim chips, each coloured by the claim's headline and marked with
    its kinds of evidence (filled: deciding; hollow: shown beside), each a link to its row.

    Args:
        found: the rows (:func:`rows`).
        base: prefix from the page to the site root (``"../"`` from ``book/claims.html``).
        ledger: the ledger page from this page (``""`` on the ledger itself, ``"book/claims.html"`` from the
            intro): each chip links to ``<ledger>#<claim id>``.
        folded: the chips by chapter in a closed ``<details>`` (the ledger page, where the table that follows holds
            the same claims), so that the tallies and the table's first rows fit one screen.
    """
    sizes = {k: sum(tallies.claim_set(r.claim) == k for r in found) for k in tallies.SETS}
    total = (f'<p class="lp-total"><b>{len(found)} claims</b>: '
             + ", ".join(f"{n} {_e(_SET_WORDS[k])}" for k, n in sizes.items())
             + '; two tallies, never one count. Each chip links to its row.</p>')
    counts = tallies.tally_html(tallies.tallies([(r.claim, (*r.deciding, *r.beside)) for r in found]),
                                verdict_slug)
    legend = "".join(f'<span><span class="lp-sw v-{verdict_slug(v)}"></span>{_e(v)}</span>' for v in VERDICTS)
    marks = "".join(f"<span>{_mark(k, False)} {_e(SHORT[k])}</span>" for k in EVIDENCE)
    titles, lines = chapter_titles(), []
    for n in sorted({r.chapter for r in found}):
        mine = [r for r in found if r.chapter == n]
        link = f"{base}{mine[0].claim.chapter}.html"
        lines.append(f'<div class="lp-chapter-name"><a href="{link}">{_e(titles.get(n, n))}</a></div>'
                     f'<div class="lp-chips">{"".join(_chip(r, ledger) for r in mine)}</div>')
    chips = (f'<div class="lp-legend"><b>chip colour (headline):</b>{legend}'
             f'<b>evidence (filled: decides; hollow: beside):</b>{marks}</div>'
             f'<div class="lp-chapters">{"".join(lines)}</div>')
    chips = (f'<details class="lp-bychapter"{"" if folded else " open"}><summary>Every claim by the chapter that '
             f'checks it</summary>{chips}</details>')
    return f'<nav class="lp-picture" aria-label="Claims by chapter, coloured by verdict">{total}{counts}{chips}</nav>'



def _controls(found: list[LedgerRow]) -> str:
    def select(name: str, label: str, options: list[tuple[str, str]]) -> str:
        opts = "".join(f'<option value="{_e(v)}">{_e(t)}</option>' for v, t in [("", "all"), *options])
        return f'<label>{label} <select data-filter="{name}">{opts}</select></label>'

    titles = chapter_titles()
    chapters = [(str(n), titles.get(n, str(n))) for n in sorted({r.chapter for r in found})]
    kinds = [(k, SHORT[k]) for k in EVIDENCE if any(k in r.evidence for r in found)]
    sorts = [("claim:asc", "claim"), ("chapter:asc", "chapter"), ("verdict:asc", "verdict (best first)"),
             ("verdict:desc", "verdict (worst first)"), ("origin:asc", "origin")]
    return ('<div class="lp-controls" role="group" aria-label="Filter and sort the ledger">'
            + select("chapter", "chapter", chapters)
            + select("verdict", "verdict", [(verdict_slug(v), v) for v in VERDICTS])
            + select("evidence", "evidence", kinds)
            + select("origin", "origin", [("paper", "the paper"), ("book", "this book")])
            + '<label>search <input type="search" data-filter="text" placeholder="id or words" size="12"></label>'
            + '<label>sort by <select data-sort-select>'
            + "".join(f'<option value="{v}">{t}</option>' for v, t in sorts) + "</select></label>"
            + '<button type="button" data-reset>show all</button>'
            + f'<output class="lp-count" aria-live="polite">{len(found)} of {len(found)} claims shown</output></div>')


def _ev(v: Verdict, beside: bool = False) -> str:
    note = " (does not decide this claim)" if beside and v.evidence not in TRAINING_KINDS else ""
    return (f'<span class="lp-ev v-{verdict_slug(v.level)}" title="{_e(v.label() + note)}">'
            f"<b>{_e(SHORT[v.evidence])}</b>: {_e(v.level)}</span>")


def _history(entries: list[dict[str, Any]]) -> str:
    items = "".join(f"<li>{_e(h.get('date', ''))} (<code>{_e(h.get('commit', ''))}</code>): "
                    f"{_prose(h.get('change', ''))}. Why: {_prose(h.get('reason', ''))}</li>" for h in entries)
    return f"<ol>{items}</ol>"


def _verdict_block(v: Verdict, row: LedgerRow, base: str) -> str:
    link = v.link or f"{row.claim.chapter}.html"
    made = ([f"profile {v.profile}"] if v.profile else []) + ([f"commit {v.commit[:12]}"] if v.commit else [])
    items = [f"rule: {_prose(v.rule)}",
             f"protocol: {_prose(v.protocol)}" + (f" ({_e(', '.join(made))})" if made else ""),
             f"numbers: {_e(numbers_text(v.numbers))}" + (f" (the criteria alone: {_e(v.criteria_level)})"
                                                          if v.criteria_level else "")]
    if v.control_level:
        items.append(f"control ({_e(v.control_level)}): {_e(numbers_text(v.control))}")
    if v.details:
        items.append(f"measured: {_prose(v.details)}")
    if v.premise and v.level is not Level.VERIFIED:
        items.append(f"premise a miss points to: {_prose(v.premise)}")
    history = row.histories.get(v.evidence)
    items.append("rule history (ledger/rules.json): " + (_history(history) if history else "not locked"))
    return (f'<p><b>{_e(SHORT[v.evidence])}</b>: <b>{_e(v.label())}</b> '
            f'(<a href="{base}{link}">{_e(_place(link))}</a>)</p>'
            "<ul>" + "".join(f"<li>{i}</li>" for i in items) + "</ul>")


def _more(row: LedgerRow, base: str) -> str:
    found = (*row.deciding, *row.beside)
    blocks = [_verdict_block(v, row, base) for v in found]
    other = {k: h for k, h in row.histories.items() if k not in {v.evidence for v in found}}
    blocks += [f"<p>rule <b>{_e(k)}</b> (no verdict recorded by this build): {_history(h)}</p>"
               for k, h in other.items()]
    changes = "".join(f"<li>{_e(c.get('date', ''))} (<code>{_e(c.get('commit', ''))}</code>), {_e(c['what'])}: "
                      f"{_e(c['from'])} → {_e(c['to'])}. Why: {_prose(c.get('reason', ''))}</li>" for c in row.changes)
    blocks.append("<p>verdict changes (ledger/verdicts-book.json): "
                  + (f"</p><ol>{changes}</ol>" if changes else "none since it was first locked</p>"))
    return (f'<details class="lp-more"><summary>numbers, rule history, verdict changes</summary>'
            f'{"".join(blocks)}</details>')


_COLUMNS = (("claim", "claim"), ("statement", ""), ("verdict", "verdict"), ("beside it (does not decide)", ""),
            ("chapter", "chapter"))


def table(found: list[LedgerRow], base: str = "") -> str:
    """The ledger's table as MyST markdown (columns: claim and where the paper makes it, statement, headline with
    the evidence that decides it, the evidence beside it, where it is checked): raw HTML rows
    (``<tr class="lp-row" id="C24">``, with ``data-chapter``, ``data-verdict``, ``data-evidence``, ``data-origin``
    to filter on and ``data-sort-*`` keys to sort by), each claim's statement as markdown between blank lines inside
    its cell, and under each claim a full-width row (``tr.lp-detail``) with a collapsed block of its verdicts' rules
    and numbers, its rules' histories and its verdict changes. Each claim's two rows are one ``<tbody
    class="lp-claim">``, which the page's script sorts and hides as a whole, so a claim's block never leaves it.

    Args:
        found: the rows (:func:`rows`).
        base: prefix from the page to the site root (``"../"`` from ``book/claims.html``).
    """
    heads = "".join(f'<th scope="col" data-sort="{key}" aria-sort="{"ascending" if key == "claim" else "none"}">'
                    f'<button type="button">{name}</button></th>' if key else f'<th scope="col">{name}</th>'
                    for name, key in _COLUMNS)
    parts = [f'<div class="lp-scroll"><table class="lp-table"><thead><tr>{heads}</tr></thead>']
    rank = {v: i for i, v in enumerate(VERDICTS)}
    for r in found:
        c = r.claim
        attrs = (f'id="{c.id}" data-chapter="{r.chapter}" data-verdict="{verdict_slug(r.headline)}" '
                 f'data-evidence="{" ".join(r.evidence)}" data-origin="{c.origin}" data-sort-claim="{r.order}" '
                 f'data-sort-chapter="{r.chapter}" data-sort-verdict="{rank[r.headline]}" '
                 f'data-sort-origin="{int(c.origin == "book")}"')
        tag = ' <span class="lp-tag">this book</span>' if c.origin == "book" else ""
        alias = f'<span id="{c.id.lower()}"></span>' if c.id.lower() != c.id else ""
        parts.append(f'<tbody class="lp-claim"><tr class="lp-row" {attrs}><td class="lp-id" data-label="claim">'
                     f'{alias}<a href="#{c.id}"><b>{c.id}</b></a>'
                     f'{tag} <div class="lp-where">{_e(c.where)}</div></td>'
                     '<td class="lp-statement" data-label="statement">')
        parts.append("\n\n" + " ".join(c.statement.split()) + "\n\n")
        training = "-" if c.kind == "theory" else "(a claim about training)"
        links = dict.fromkeys(v.link or f"{c.chapter}.html" for v in (*r.deciding, *r.beside)) or {
            f"{c.chapter}.html": None}
        where = "<br>".join(f'<a href="{base}{h}">{_e(_place(h))}</a>' for h in links)
        decides = " ".join(_ev(v) for v in r.deciding) or "no deciding evidence yet"
        cells = [("verdict", f'<span class="lp-ev v-{verdict_slug(r.headline)}"><b>{_e(r.headline)}</b></span>'
                             f'<div class="lp-decides">decided by: {decides}</div>'),
                 ("beside it (does not decide)", " ".join(_ev(v, True) for v in r.beside) or training),
                 ("chapter", where if r.deciding or r.beside else f"planned: {where}")]
        parts.append("</td>" + "".join(f'<td data-label="{k}">{v}</td>' for k, v in cells)
                     + f'</tr><tr class="lp-detail"><td colspan="{len(_COLUMNS)}">{_more(r, base)}</td></tr></tbody>')
    parts.append("</table></div>")
    return "".join(parts)


def _place(link: str) -> str:
    """``book/chapters/08-wikitext.html#fig-paper-7`` -> ``"chapter 8, fig-paper-7"``."""
    name, _, anchor = link.rpartition("/")[2].partition("#")
    number = manifest.chapter_of(name)
    text = f"chapter {number}" if number else name.removesuffix(".html")
    return f"{text}, {anchor}" if anchor else text


def page(base: str = "../", rules_path: Path | None = None, lock_path: Path | None = None) -> str:
    """The whole ledger page's generated part (MyST markdown): stylesheet, :func:`picture`, the filter and sort
    controls, :func:`table`, the script, then the verdict changes at the last lock
    (:func:`scansnap.ledger.changes_markdown`). All of it inside ``<div id="ledger">``.

    Args:
        base: prefix from the page to the site root (``"../"`` from ``book/claims.html``).
        rules_path, lock_path: the locks (default ``ledger/rules.json``, ``ledger/verdicts-book.json``).
    """
    found = rows(rules_path, lock_path)
    body = f'<div id="ledger" class="lp-root">{picture(found, base, folded=True)}{_controls(found)}{table(found, base)}'
    return "\n\n".join([STYLE, body + "\n\n</div>", SCRIPT, ledger.changes_markdown(lock_path).strip()]) + "\n"


def summary(base: str = "../", ledger: str = "claims.html") -> str:
    """The ledger's picture and counts (:func:`picture`) with their stylesheet, for another page (the intro,
    ``book/intro.html``: the same picture the ledger opens with, made from the same recorded verdicts). HTML.

    Args:
        base: prefix from that page to the site root (``"../"`` from ``book/intro.html``).
        ledger: the ledger page from that page (``"claims.html"`` beside the intro); each chip links to its
            claim's row there.
    """
    return f'{STYLE}\n<div class="lp-root lp-summary">{picture(rows(), base, ledger)}</div>'


_CLAIM_HREF = re.compile(r'(claims\.html#)([cxp]\d+[a-z]?)(")')


def link_claims(text: str) -> str:
    """Point every ``claims.html#<id in lower case>`` link in ``text`` (as :func:`scansnap.figures.gallery_markdown`
    writes them) at the claim's own anchor, ``claims.html#C24`` (ids as in :data:`scansnap.claims.CLAIMS`)."""
    ids = {c.id.lower(): c.id for c in claims.CLAIMS}
    return _CLAIM_HREF.sub(lambda m: m.group(1) + ids.get(m.group(2), m.group(2)) + m.group(3), text)

