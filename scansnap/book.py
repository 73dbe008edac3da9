"""What a chapter does with a made experiment: show its figures and record its verdicts.

These helpers keep chapter cells short and make every run-dependent word of a page come from the run:
:func:`show` glues an experiment's figures (``glue:figure`` shows them with the page's caption) and
:func:`record` records verdicts made by library rules and glues, for each claim, its headline as
``verdict-<claim>`` and each verdict as ``verdict-<claim>-<evidence>`` (use ``{glue:md}`verdict-C38```
in prose and captions: never write a verdict word by hand).
"""

from __future__ import annotations

from collections.abc import Iterable

from scansnap import claims
from scansnap.verdicts import EVIDENCE, INCONCLUSIVE, Verdict

__all__ = ["LEDGER", "claim_link", "evidence", "glue_value", "record", "show", "undecided"]

LEDGER = "../claims.html"
"""The claims ledger (``book/claims.html``) as a chapter page (``book/chapters/*.html``) links to it."""


def claim_link(claim_id: str, ledger: str = LEDGER) -> str:
    """The claim id as an HTML link to its row of the claims ledger (``claims.html#C38``), for a chapter's verdict
    table or prose (raw HTML: a Markdown link to an ``.html`` file would be read as a cross-reference)."""
    return f'<a href="{ledger}#{claim_id}">{claim_id}</a>'


def _glue(key: str, value: object) -> None:
    from myst_nb import glue

    glue(key, value, display=False)


def show(made, *fig_ids: str) -> None:
    """Glue the figures of ``made`` (:class:`scansnap.experiments.Made`; default: all of them) under their
    ids, close them, and print how to re-make each."""
    import matplotlib.pyplot as plt

    for fig_id in fig_ids or tuple(made.figures):
        _glue(fig_id, made.figures[fig_id])
        plt.close(made.figures[fig_id])
        print(f"{fig_id}: {made.wall_time_s:.1f} s; re-make it: {made.records[fig_id].command}\n"
              f"  protocol ({made.records[fig_id].profile} profile): {made.records[fig_id].protocol}")


def evidence(target, profile: str = "paper"):
    """Show stored evidence (:mod:`scansnap.evidence`): load the store of ``target`` (an experiment, its id or one
    of its figures' ids) after checking it, make its figures from the stored result (published like a live run's,
    with the store's provenance in their protocol), print when, where and in how long it was made and the command
    that re-makes it, and return it as :class:`scansnap.experiments.Made` (for :func:`show` and the verdicts).
    A stale or altered store raises (:class:`scansnap.evidence.StaleEvidenceError`,
    :class:`~scansnap.evidence.TamperedEvidenceError`): the strict build fails rather than show it."""
    from scansnap import evidence as ev
    from scansnap import experiments

    exp = experiments.resolve(target)
    stored = ev.load(exp, profile)
    config, prov = ev.config_of(exp, stored), stored.provenance
    made = experiments.publish(exp, config, stored.result, prov.wall_s, profile=profile,
                               protocol=f"{config.protocol()}; stored evidence made {prov.date} on {prov.device} "
                                        f"({prov.cpu}) in {prov.wall_s / 60:.1f} min")
    print(prov.describe())
    return made


def glue_value(key: str, value: object) -> None:
    """Glue a run-dependent number or string for prose (``{glue:text}`key:.3f```); numpy scalars are glued as
    Python numbers (numpy 2 writes ``np.float64(...)``, which a format spec cannot read)."""
    _glue(key, value.item() if hasattr(value, "item") and getattr(value, "ndim", None) == 0 else value)


def record(verdicts: Iterable[Verdict]):
    """Record ``verdicts`` (:func:`scansnap.claims.record`), glue them, and return a table of them to display:
    each verdict with its evidence kind, its numbers and its control's, then, in words, which claims are
    inconclusive here and what would decide them."""
    from IPython.display import Markdown

    made = claims.record(*verdicts)
    rows = ["| claim | evidence | verdict | numbers (and the control's) |", "|---|---|---|---|"]
    for v in made:
        _glue(f"verdict-{v.claim}-{v.evidence}", Markdown(f"**{v.level}**"))
        rows.append(f"| {claim_link(v.claim)} | {EVIDENCE[v.evidence]} | **{v.label()}** | "
                    f"{v.summary().replace('|', '/')} |")
    for cid in dict.fromkeys(v.claim for v in made):
        _glue(f"verdict-{cid}", Markdown(f"**{claims.headline(cid)}**"))
    return Markdown("\n".join(rows) + "\n\n" + undecided(made))


def undecided(made: Iterable[Verdict]) -> str:
    """In words: which of ``made`` are inconclusive, why, and what would decide each (empty when none is)."""
    lines = []
    for v in made:
        if v.level != INCONCLUSIVE:
            continue
        if v.reason.startswith("reduced protocol"):
            whose = "the book's full protocol" if v.claim.startswith("X") else "the paper's protocol"
            anchor = v.link.partition("#")[2]
            figure = anchor if anchor.startswith("fig-") else "<figure-id>"
            decide = (f"a run of the `paper` profile, {whose}, e.g. stored as evidence: `python -m scansnap "
                      f"reproduce {figure} --profile paper --store`")
        elif v.reason.startswith("effect too small"):
            decide = "a run in which the effect the rule tests happens at a visible size (the page shows how far " \
                     "the runs searched get)"
        else:
            decide = (f"a run in which the measured effect exceeds what the control ({v.control_level} on the same "
                      "rule) already shows, e.g. a longer horizon or a larger effect size")
        lines.append(f"- **{claim_link(v.claim)}** ({v.evidence}) is inconclusive here: {v.reason}. What would "
                     f"decide it: {decide}.")
    return ("**Undecided here**\n\n" + "\n".join(lines)) if lines else ""
