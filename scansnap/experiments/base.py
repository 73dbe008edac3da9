"""The shape of a typed experiment: a configuration, a run, figures and verdicts.

An :class:`Experiment` ties together, for one experiment of the book:

* a frozen configuration type (a :class:`scansnap.results.Config` with a preset per profile);
* ``run(config, progress) -> result``, a typed result (a dataclass; saved and reloaded with
  :mod:`scansnap.results`);
* the figures made from one result (:class:`FigureSpec`: a pure ``plot(result)`` and the ``table(result)``
  published as the figure's data);
* ``verdicts(result)``, the verdicts of the library rules on that result (pure: no I/O).

Each module of :mod:`scansnap.manifest` lists its experiments in ``EXPERIMENTS`` and its rules in ``RULES``;
:mod:`scansnap.experiments` imports the one asked for and checks it against its manifest entry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from matplotlib.figure import Figure

from scansnap import manifest
from scansnap.verdicts import Verdict

__all__ = ["Experiment", "FigureSpec", "Progress"]

Progress = Callable[[int], None]
"""Called once per unit of work (``experiment.work(config)`` calls in all); its argument is informational (the
trainer passes its step index), so a progress bar counts calls."""

C = TypeVar("C")
R = TypeVar("R")


@dataclass(frozen=True)
class FigureSpec(Generic[R]):
    """One citable figure made from an experiment's result.

    Attributes:
        id: the stable figure id (file names and page anchor), e.g. ``"fig-paper-6"``.
        caption: what it shows, one or two sentences (no verdicts, no run-dependent numbers).
        claims: ids of the claims it bears on.
        plot: result -> matplotlib figure (pure).
        table: result -> the data published with the figure (equal-length columns are written as CSV).
    """

    id: str
    caption: str
    claims: tuple[str, ...]
    plot: Callable[[R], Figure]
    table: Callable[[R], Mapping[str, Any]]


def _no_verdicts(_result: object) -> list[Verdict]:
    return []


def _no_work(_config: object) -> int:
    return 0


@dataclass(frozen=True)
class Experiment(Generic[C, R]):
    """A typed experiment of the book.

    Attributes:
        id: the experiment id (``"ch7-sweep"``); its result is saved as ``results/<id>.npz``. Its chapter (the
            page that shows it, :attr:`chapter`) is declared in :mod:`scansnap.manifest`, not here.
        config: the configuration type (its ``preset(profile)`` gives the profile's parameters).
        result: the result type.
        run: (config, progress) -> result.
        figures: the figures made from the result.
        verdicts: result -> verdicts of the library rules (pure).
        work: config -> units of progress ``run`` reports.
        prefix: (config, steps) -> the configuration of the same run's first ``steps`` steps exactly (same seeds;
            a checkpoint at step 0 and one at ``steps`` suffice), or None when the run has no steps to cut;
            ``python -m scansnap store verify`` re-runs that prefix of a stored run, and the functions it executes
            are the ones a store's code hash covers (:mod:`scansnap.store`).
        checkpoints: result -> ``{name: (steps, values)}``: the values of each measured curve at the steps it
            was measured (``values`` with the steps on its first axis); what ``verify`` compares at the steps
            both runs have.
    """

    id: str
    config: type[C]
    result: type[R]
    run: Callable[[C, Progress | None], R]
    figures: tuple[FigureSpec[R], ...] = ()
    verdicts: Callable[[R], list[Verdict]] = _no_verdicts
    work: Callable[[C], int] = _no_work
    prefix: Callable[[C, int], C] | None = None
    checkpoints: Callable[[R], Mapping[str, tuple[Any, Any]]] | None = None

    @property
    def chapter(self) -> str:
        """The book page (docname) that shows this experiment, from :mod:`scansnap.manifest`."""
        return manifest.docname(manifest.entry(self.id).chapter)

    def link(self, anchor: str | None = None) -> str:
        """The site-relative link of a verdict's numbers: ``<chapter>.html#<anchor>`` (default anchor: the
        experiment's first figure; ``tests/test_book.py`` checks every recorded link's anchor is on its page)."""
        anchor = anchor if anchor is not None else (self.figures[0].id if self.figures else "")
        return f"{self.chapter}.html" + (f"#{anchor}" if anchor else "")

    def figure(self, fig_id: str) -> FigureSpec[R]:
        """The figure ``fig_id`` of this experiment."""
        for spec in self.figures:
            if spec.id == fig_id:
                return spec
        raise ValueError(f"fig_id: must be one of {[s.id for s in self.figures]}; got {fig_id!r}")
