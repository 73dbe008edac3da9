"""Two tallies, never one: what holds in the theory's model, and what is observed in training or on real data.

A claim of the theory is decided by derivation and simulation of the model the theorems assume; whether the same
statement is seen in a trained model is a different finding, shown beside it. A count that adds the two ("38 of 43
claims verified") tells a reader that training confirms what only the model does. So every summary of the ledger
(its picture, the intro, the figure gallery, "What this book found") counts each claim set twice, apart:

- **holds in the theory's model**: the claims of the theory, by their headline (the weakest of their derivation and
  simulation verdicts);
- **observed in training / on real data**: every claim with a verdict on training or real-data evidence, by the
  weakest of those verdicts (for a claim of the theory: "does it describe the trained model?").

A claim can be counted in both; no count mixes them. Claim sets: the paper's claims (``C*``), the paper's central
claims (:data:`scansnap.claims.CENTRAL`, ``P*``) and this book's own (``X*``).
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from scansnap._ledger_assets import STYLE
from scansnap.claims import CENTRAL, NOT_CHECKED, Claim
from scansnap.verdicts import LEVELS, THEORY_KINDS, TRAINING_KINDS, Verdict, worst

__all__ = ["LENSES", "SETS", "Tally", "block", "claim_set", "lens_level", "level_words", "tallies", "tally_html",
           "two_levels"]

LENSES = {"model": "holds in the theory's model", "training": "observed in training / on real data"}
"""The two lenses, by key, in words."""

SETS = {"paper": "the paper's claims", "central": "the paper's central claims", "book": "this book's claims"}
"""The claim sets, by key, in words."""

_CENTRAL = {c.id for c in CENTRAL}


def claim_set(claim: Claim) -> str:
    """The set a claim belongs to: ``"central"`` (the paper's abstract and introduction), ``"paper"`` or ``"book"``."""
    return "central" if claim.id in _CENTRAL else claim.origin


def lens_level(claim: Claim, found: Iterable[Verdict], lens: str) -> str | None:
    """The claim's level through ``lens``: ``"model"``, the weakest of its derivation and simulation verdicts (claims
    of the theory only); ``"training"``, the weakest of its training and real-data verdicts. ``None`` where it has
    no such verdict."""
    if lens not in LENSES:
        raise ValueError(f"lens: must be one of {', '.join(LENSES)}; got {lens!r}")
    if lens == "model" and claim.kind != "theory":
        return None
    kinds = THEORY_KINDS if lens == "model" else TRAINING_KINDS
    levels = [v.level for v in found if v.evidence in kinds]
    return worst(levels) if levels else None


def two_levels(claim: Claim, found: Iterable[Verdict]) -> dict[str, str]:
    """``{lens: level}`` for the lenses through which the claim has a verdict (``{}`` when none)."""
    found = list(found)
    return {lens: lv for lens in LENSES if (lv := lens_level(claim, found, lens)) is not None}


def level_words(claim: Claim, found: Iterable[Verdict]) -> str:
    """The claim's levels through both lenses in words, e.g. ``"in the model: verified; in training: not
    reproduced"`` (``"not yet checked"`` when it has no verdict): what a figure's card in the gallery says."""
    short = {"model": "in the model", "training": "in training"}
    levels = two_levels(claim, found)
    return "; ".join(f"{short[k]}: {lv}" for k, lv in levels.items()) or NOT_CHECKED


@dataclass(frozen=True)
class Tally:
    """How many claims of one set reach each level through one lens.

    Attributes:
        claim_set: a key of :data:`SETS`.
        lens: a key of :data:`LENSES`.
        counts: level -> number of claims, in the order of :data:`scansnap.verdicts.LEVELS` (zeros kept).
        claims: level -> the ids of those claims.
        size: the number of claims in the set (some have no verdict through this lens).
    """

    claim_set: str
    lens: str
    counts: dict[str, int]
    claims: dict[str, tuple[str, ...]]
    size: int

    @property
    def judged(self) -> int:
        """The number of claims of the set with a verdict through this lens."""
        return sum(self.counts.values())

    def words(self) -> str:
        """E.g. ``"28 verified, 3 partly verified of the 34 judged"`` (levels with no claim left out)."""
        parts = [f"{n} {lv}" for lv, n in self.counts.items() if n]
        return (", ".join(parts) + f" of the {self.judged} judged") if parts else "none judged"


def tallies(entries: Sequence[tuple[Claim, Sequence[Verdict]]]) -> list[Tally]:
    """One :class:`Tally` per claim set and lens (sets in the order of :data:`SETS`, then lenses), from
    ``(claim, its recorded verdicts)`` pairs (:func:`scansnap.claims.ledger` gives them)."""
    out = []
    for key in SETS:
        mine = [(c, found) for c, found in entries if claim_set(c) == key]
        for lens in LENSES:
            claims: dict[str, list[str]] = {lv: [] for lv in LEVELS}
            for c, found in mine:
                lv = lens_level(c, found, lens)
                if lv is not None:
                    claims[lv].append(c.id)
            out.append(Tally(key, lens, {lv: len(ids) for lv, ids in claims.items()},
                             {lv: tuple(ids) for lv, ids in claims.items()}, len(mine)))
    return out


def tally_html(found: Sequence[Tally], slug=lambda level: level.replace(" ", "-")) -> str:
    """The tallies as an HTML table (class ``lp-tally``): a row per claim set, a column per lens, each cell the
    counts with the ledger's colour swatches (``lp-sw v-<level>``) and how many claims of the set were judged."""
    heads = "".join(f'<th scope="col">{html.escape(words)}</th>' for words in LENSES.values())
    body = []
    for key, words in SETS.items():
        cells = []
        for lens in LENSES:
            t = next(t for t in found if t.claim_set == key and t.lens == lens)
            chips = "".join(f'<span class="lp-count-chip" title="{html.escape(", ".join(t.claims[lv]))}">'
                            f'<span class="lp-sw v-{slug(lv)}"></span>{html.escape(lv)}: <b>{n}</b></span>'
                            for lv, n in t.counts.items() if n)
            cells.append(f"<td>{chips or 'none judged'} "
                         f'<span class="lp-of">({t.judged} of {t.size} judged)</span></td>')
        size = next(t.size for t in found if t.claim_set == key)
        body.append(f'<tr><th scope="row">{html.escape(words)} ({size})</th>{"".join(cells)}</tr>')
    return (f'<table class="lp-tally"><thead><tr><th scope="col">claims</th>{heads}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table>')


def block(entries: Sequence[tuple[Claim, Sequence[Verdict]]]) -> str:
    """:func:`tally_html` of ``entries`` with the ledger's stylesheet, for a page other than the ledger (HTML)."""
    return f'{STYLE}\n<div class="lp-root">{tally_html(tallies(entries))}</div>'
