"""What a chapter does with a made experiment: show its figures and its tables of numbers, and record its verdicts.

These helpers keep chapter cells short and make every run-dependent word of a page come from the run:
:func:`show` glues an experiment's figures (``glue:figure`` shows them with the page's caption) and
:func:`record` records verdicts made by library rules, glues, for each claim, its headline as
``verdict-<claim>`` and each verdict as ``verdict-<claim>-<evidence>`` (use ``{glue:md}`verdict-C38```
in prose and captions: never write a verdict word by hand), and returns the page's verdict table
(:mod:`scansnap.verdict_table`; :func:`claim_link` and :data:`LEDGER` come from there).
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from dataclasses import dataclass

from scansnap import claims
from scansnap._checks import check_int
from scansnap.verdict_table import LEDGER, VerdictTable, claim_link
from scansnap.verdicts import Verdict

__all__ = ["LEDGER", "NumberTable", "VerdictTable", "claim_link", "glue_value", "numbers", "record", "show", "stored"]


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


def stored(target, profile: str = "paper", made=None):
    """Show a stored run (:mod:`scansnap.store`): load the store of ``target`` (an experiment, its id or one
    of its figures' ids) after checking it, make its figures from the stored result (published like a live run's,
    with the store's provenance in their protocol), print when, where and in how long it was made and the command
    that re-makes it, and return it as :class:`scansnap.experiments.Made` (for :func:`show` and the verdicts).
    ``made``: ``(config, functions) ->`` the configuration as the stored run was made, from the functions its run
    executed (:attr:`scansnap.store.Provenance.functions`), whose protocol the figures carry (e.g.
    :func:`scansnap.experiments.wikitext_as_run.as_stored`: the training text a Chapter 8 run had); default: the
    stored configuration. A stale or altered store raises (:class:`scansnap.store.StaleStoreError`,
    :class:`~scansnap.store.TamperedStoreError`): the strict build fails rather than show it."""
    from scansnap import experiments, store

    exp = experiments.resolve(target)
    found = store.load(exp, profile)
    config, prov = store.config_of(exp, found), found.provenance
    as_made = config if made is None else made(config, prov.functions)
    shown = experiments.publish(exp, config, found.result, prov.wall_s, profile=profile,
                                protocol=f"{as_made.protocol()}; stored run made {prov.date} on {prov.device} "
                                         f"({prov.cpu}) in {prov.wall_s / 60:.1f} min")
    print(prov.describe())
    return shown


@dataclass(frozen=True)
class NumberTable:
    """A table of a run's numbers to display (what :func:`numbers` returns): in the page an HTML table, which
    scrolls inside its own box where it is wider than the column (a printed table wrapped on a narrow screen and
    lost its alignment), in a terminal aligned text.

    Attributes:
        frame: the numbers, a ``pandas.DataFrame`` (rows x columns).
        digits: significant digits of each float (1 to 17).
        index: whether the frame's index is the table's first column.
    """

    frame: object
    digits: int = 3
    index: bool = True

    def _format(self, value: float) -> str:
        return f"{value:.{self.digits}g}"

    def _text(self, value: object) -> str:
        return html.escape(self._format(value) if isinstance(value, float) else str(value))

    def _repr_html_(self) -> str:
        """One row per row of the frame; a numeric column's cells right-aligned and kept whole (class ``sn-num``),
        a column's name breakable after ``_`` and ``/`` (``_static/scansnap-layout.css`` styles them)."""
        frame = self.frame.reset_index() if self.index else self.frame
        kinds = ["sn-num" if frame[c].dtype.kind in "biuf" else "sn-text" for c in frame.columns]
        names = [html.escape(str(c)).replace("_", "_<wbr>").replace("/", "/<wbr>") for c in frame.columns]
        head = "".join(f'<th scope="col" class="{k}">{n}</th>' for n, k in zip(names, kinds, strict=True))
        rows = "".join("<tr>" + "".join(f'<td class="{k}">{self._text(v)}</td>'
                                        for v, k in zip(row, kinds, strict=True)) + "</tr>"
                       for row in frame.itertuples(index=False))
        return f'<table class="table scansnap-numbers"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'

    def __str__(self) -> str:
        return self.frame.to_string(index=self.index, float_format=self._format)

    def _repr_pretty_(self, p, cycle: bool) -> None:
        p.text(str(self))


def numbers(frame, digits: int = 3, index: bool = True) -> NumberTable:
    """``frame`` (a ``pandas.DataFrame``, rows x columns) as a table to display, floats to ``digits`` significant
    digits (1 to 17); ``index``: show the frame's index as the first column."""
    check_int("digits", digits, 1, 17)
    return NumberTable(frame, digits, index)


def glue_value(key: str, value: object) -> None:
    """Glue a run-dependent number or string for prose (``{glue:text}`key:.3f```); numpy scalars are glued as
    Python numbers (numpy 2 writes ``np.float64(...)``, which a format spec cannot read)."""
    _glue(key, value.item() if hasattr(value, "item") and getattr(value, "ndim", None) == 0 else value)


def record(verdicts: Iterable[Verdict]) -> VerdictTable:
    """Record ``verdicts`` (:func:`scansnap.claims.record`), glue them, and return them to display
    (:class:`scansnap.verdict_table.VerdictTable`): a table with one row per claim and kind of evidence, each level a
    chip linking to the claim's row of the ledger, the numbers and the control's numbers in their own columns; under
    it the inconclusive verdicts grouped by reason, with what would decide them."""
    from IPython.display import Markdown

    made = claims.record(*verdicts)
    for v in made:
        _glue(f"verdict-{v.claim}-{v.evidence}", Markdown(f"**{v.level}**"))
    headlines = {cid: claims.headline(cid) for cid in dict.fromkeys(v.claim for v in made)}
    for cid, head in headlines.items():
        _glue(f"verdict-{cid}", Markdown(f"**{head}**"))
    return VerdictTable.of(made, headlines)
