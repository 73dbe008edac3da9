"""What the citation of one figure says besides its address: the verdicts it is the evidence of, and the command
that checks it.

:func:`scansnap.figures.bibtex` writes both into the ``note`` of a figure's BibTeX entry, and the figure gallery
shows the check beside the figure. ``python -m scansnap reproduce <id> --check`` re-makes a figure and compares
its data with the published data. A figure made from a stored run at the paper's protocol (:mod:`scansnap.store`:
an hour or more on a 2-core machine, and another machine's re-run drifts from it past the first steps) is checked
with ``python -m scansnap store verify <experiment>`` instead, which re-runs the first steps from the recorded
seeds and compares them with the store, after checking the store's digests and code hash.
"""

from __future__ import annotations

from typing import Protocol

from scansnap import claims, manifest

__all__ = ["check_command", "stored_experiment", "verdict_lines"]


class Cited(Protocol):
    """What these functions read of a figure's record (:class:`scansnap.figures.FigureRecord`)."""

    id: str
    profile: str
    claims: list[str]


def verdict_lines(record: Cited) -> list[str]:
    """The verdicts figure ``record`` is the evidence of, as the last build recorded them
    (:func:`scansnap.claims.verdicts`).

    A verdict whose rule read this figure (its ``link`` ends in ``#<figure id>``) gives its claim, kind of evidence
    and label, e.g. ``"C38 training-sampled: verified (reduced protocol: seeds: 5 (paper profile: 10))"``; a claim
    the figure bears on that no such verdict covers gives its headline verdict, e.g. ``"C40a: not reproduced (the
    claim's headline)"``. Empty for an illustration (no claims).
    """
    lines = []
    for claim in record.claims:
        own = [v for v in claims.verdicts(claim) if v.link.rsplit("#", 1)[-1] == record.id]
        lines += [f"{v.claim} {v.evidence}: {v.label()}" for v in own] or [
            f"{claim}: {claims.headline(claim)} (the claim's headline)"]
    return lines


def stored_experiment(record: Cited) -> str | None:
    """The id of the stored experiment (``Entry.stored`` in :mod:`scansnap.manifest`) whose run figure ``record``
    was published from at the ``paper`` profile (Figure 7 of Chapter 8: ``"ch8-freeze"``), else ``None`` (also for
    an id the manifest does not list)."""
    try:
        entry = manifest.owner(record.id)
    except ValueError:
        return None
    return entry.id if entry.stored and record.profile == "paper" else None


def check_command(record: Cited) -> str:
    """The command that checks figure ``record`` as published: ``python -m scansnap store verify <experiment>`` for
    a figure of a stored run (:func:`stored_experiment`; Figure 7 of Chapter 8: ``store verify ch8-freeze``), else
    ``python -m scansnap reproduce <id> --profile <profile> --check``."""
    stored = stored_experiment(record)
    if stored is not None:
        return f"python -m scansnap store verify {stored}"
    return f"python -m scansnap reproduce {record.id} --profile {record.profile} --check"
