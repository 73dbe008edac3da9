"""The page "What this book found" (``book/found.md``): one screen, in plain words, of what the ledger says.

What holds in the theory's model, what is seen in training and on real data (the paper's central claims first), what
is not, and what stays undecided with the run that would decide it. Every level and number on the page is read from
the verdicts this build recorded (:func:`scansnap.claims.ledger`) and checked against the locked ledger
(``ledger/verdicts-book.json``): a claim whose recorded headline differs from the lock is flagged on the page, so the
page can never say something the lock does not. Nothing on it is written by hand; each claim links to its row of the
ledger. :func:`page` returns MyST markdown (with raw HTML chips) for a notebook cell's ``Markdown`` output.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path

from scansnap import claims, ledger, tallies
from scansnap._ledger_assets import SHORT, STYLE
from scansnap.claims import Claim
from scansnap.verdict_table import reasons
from scansnap.verdicts import INCONCLUSIVE, TRAINING_KINDS, Verdict

__all__ = ["chip", "key_numbers", "page"]

_PILL = """<style>
.lp-found a.lp-pill { display: inline-block; padding: 0 .35em; margin: .1em .1em; border-radius: 4px;
  border: 1px solid #555; font-size: .85em; text-decoration: none; white-space: nowrap; }
.lp-found ul { margin-top: .2em; }
</style>"""


def chip(claim_id: str, level: str, ledger_page: str = "claims.html", words: str | None = None) -> str:
    """A claim id as a link to its ledger row, coloured by ``level`` (the ledger's palette), e.g. ``C24 · verified``
    (``words``: what follows the id, default the level; ``""``: the id alone, its level in its colour and title)."""
    slug = level.replace(" ", "-")
    text = claim_id if words == "" else f"{claim_id} · {level if words is None else words}"
    return (f'<a class="lp-pill v-{slug}" href="{html.escape(ledger_page)}#{html.escape(claim_id)}" '
            f'title="{html.escape(level)}: {html.escape(claims.get(claim_id).statement)}">{html.escape(text)}</a>')


def key_numbers(v: Verdict, limit: int = 3) -> str:
    """The numbers the verdict's rule holds against its thresholds, those that miss their ``verified`` threshold first
    (then in the criteria's order; at most ``limit``), as ``name = value``; for a rule the library no longer has, the
    first ``limit`` numbers."""
    from scansnap.experiments import all_rules

    rule = next((r for r in all_rules() if r.claim == v.claim and r.evidence == v.evidence), None)
    pairs = dict(v.number_pairs())
    found = [c for c in rule.criteria if c.name in pairs] if rule is not None else []
    names = [c.name for c in sorted(found, key=lambda c: c.score(v.numbers[c.name]) == 2)]
    return "; ".join(f"{k} = {pairs[k]}" for k in (names or list(pairs))[:limit])


def _short_label(v: Verdict) -> str:
    """The level, why it is inconclusive, and "reduced protocol" where the run cut the paper's (the cuts are in the
    ledger's row)."""
    head = v.qualification_parts()[0]
    return f"{v.level} ({head})" if head else str(v.level)


def _levels_line(t: tallies.Tally, ledger_page: str) -> str:
    parts = []
    for level, ids in t.claims.items():
        if ids:
            parts.append(f"{len(ids)} {level}: " + " ".join(chip(i, level, ledger_page, words="") for i in ids))
    return "; ".join(parts) if parts else "none judged yet"


def _central(entries: Sequence[tuple[Claim, Sequence[Verdict]]], ledger_page: str) -> list[str]:
    lines = []
    for c, found in entries:
        if tallies.claim_set(c) != "central":
            continue
        level = tallies.lens_level(c, found, "training") or claims.NOT_CHECKED
        kinds = [f"{html.escape(SHORT[v.evidence])}: <b>{html.escape(_short_label(v))}</b> "
                 f"({html.escape(key_numbers(v))})"
                 for v in found if v.evidence in TRAINING_KINDS]
        lines.append(f"- {chip(c.id, level, ledger_page)} {html.escape(c.statement)}<br>"
                     + ("; ".join(kinds) if kinds else "No run has judged it yet."))
    return lines


def _lock_note(entries: Sequence[tuple[Claim, Sequence[Verdict]]], lock_path: Path | None) -> str:
    try:
        locked = ledger.read_lock(lock_path).get("verdicts", {})
    except FileNotFoundError:
        return "No locked ledger was found: the levels are this build's own."
    differ = [c.id for c, found in entries if c.id in locked and locked[c.id].get("headline")
              != claims.headline(c.id)]
    unlocked = [c.id for c, _ in entries if c.id not in locked]
    note = "Every level above is this build's, and equals the locked ledger (`ledger/verdicts-book.json`)."
    if differ or unlocked:
        note = ("**This build differs from the locked ledger** (`ledger/verdicts-book.json`) for "
                + ", ".join(f"{i} (locked: {locked[i]['headline']})" for i in differ)
                + (("; " if differ else "") + "not locked: " + ", ".join(unlocked) if unlocked else "") + ".")
    return note


def page(ledger_page: str = "claims.html", lock_path: Path | None = None) -> str:
    """The generated part of "What this book found" (MyST markdown with raw HTML chips).

    Args:
        ledger_page: the claims ledger from the page (each claim links to ``<ledger_page>#<id>``).
        lock_path: the locked verdicts (default ``ledger/verdicts-book.json``).
    """
    entries = [(c, found) for c, _, found in claims.ledger()]
    counted = tallies.tallies(entries)

    def tally(key: str, lens: str) -> tallies.Tally:
        return next(t for t in counted if t.claim_set == key and t.lens == lens)

    model, trained = tally("paper", "model"), tally("paper", "training")
    book = tally("book", "training")
    undecided = [v for _, found in entries for v in found if v.evidence in TRAINING_KINDS and v.level == INCONCLUSIVE]
    lines = [STYLE, _PILL, '<div class="lp-root lp-found">', "",
             tallies.tally_html(counted), "",
             f"**In the theory's model.** Of the paper's claims of the theory, {model.words()} by derivation and "
             f"simulation of the model the theorems assume: {_levels_line(model, ledger_page)}.", "",
             "**The paper's central claims, on training and real data** (its abstract and introduction):", "",
             *_central(entries, ledger_page), "",
             f"**Observed in training or on real data.** Of the paper's claims with a training or real-data verdict, "
             f"{trained.words()}: {_levels_line(trained, ledger_page)}. For a claim of the theory this asks whether "
             f"the theorem describes the trained model; the ledger names the premise a miss points to. This book's own "
             f"claims: {_levels_line(book, ledger_page)}.", "",
             "**Undecided, and what would decide it:**", ""]
    for r in reasons(undecided):
        ids = " ".join(chip(v.claim, v.level, ledger_page, words=SHORT[v.evidence]) for v in r.undecided)
        decide = "; ".join(html.escape(words) + "".join(f" (<code>{html.escape(c)}</code>)" for c in cmds)
                           for words, cmds in r.decide)
        lines.append(f"- {ids}: {html.escape(r.text)}. Would decide: {decide}.")
    if not undecided:
        lines.append("- nothing: every training and real-data verdict is decided.")
    lines += ["", _lock_note(entries, lock_path), "", "</div>"]
    return "\n".join(lines) + "\n"
