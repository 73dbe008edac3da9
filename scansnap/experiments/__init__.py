"""The book's experiments: typed configurations, runs, figures and verdicts, one module per chapter.

Each module ``scansnap.experiments.chNN_<topic>`` defines ``EXPERIMENTS`` (a list of
:class:`~scansnap.experiments.base.Experiment`) and ``RULES`` (the :class:`~scansnap.verdicts.Rule`
objects its verdicts use); a new module is picked up without registration. A chapter and the command
line make a figure through the same call, :func:`make`, so the figure a reader sees and the one a citer
re-makes come from one piece of code:

>>> from scansnap import experiments
>>> made = experiments.make("fig-ch1-synsmall", profile="smoke")      # doctest: +SKIP
>>> made.result, made.figures["fig-ch1-synsmall"], made.records        # doctest: +SKIP

:func:`make` runs the experiment with the profile's preset (or a given configuration), saves the
typed result (``<out>/results/<experiment id>.npz``), plots every figure of the experiment and saves
each with its data and provenance (:func:`scansnap.figures.save`). Verdicts are not recorded here: a
chapter calls ``experiment.verdicts(made.result)`` and records them (:func:`scansnap.book.record`).
"""

from __future__ import annotations

import importlib
import pkgutil
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from matplotlib.figure import Figure

from scansnap import figures, profiles, results
from scansnap._checks import check_choice
from scansnap._io import artifacts_dir
from scansnap.experiments.base import Experiment, FigureSpec, Progress
from scansnap.verdicts import Rule

__all__ = [
    "Experiment",
    "FigureSpec",
    "Made",
    "Progress",
    "all_experiments",
    "all_rules",
    "figure_ids",
    "get",
    "load_result",
    "make",
    "publish",
    "resolve",
    "modules",
    "owner",
]


@dataclass
class Made:
    """What :func:`make` made: the configuration, the typed result, the figures and their provenance."""

    experiment: Experiment
    config: Any
    result: Any
    figures: dict[str, Figure]
    records: dict[str, figures.FigureRecord]
    wall_time_s: float


@cache
def modules() -> tuple[ModuleType, ...]:
    """Every experiment module (``scansnap.experiments.ch*``), imported, in name order."""
    import scansnap.experiments as pkg

    names = sorted(m.name for m in pkgutil.iter_modules(pkg.__path__) if m.name.startswith("ch"))
    return tuple(importlib.import_module(f"scansnap.experiments.{name}") for name in names)


@cache
def _registry() -> tuple[dict[str, Experiment], dict[str, Experiment]]:
    by_id: dict[str, Experiment] = {}
    by_figure: dict[str, Experiment] = {}
    for module in modules():
        for exp in getattr(module, "EXPERIMENTS", ()):
            if exp.id in by_id:
                raise ValueError(f"experiment id {exp.id!r} is defined twice (again in {module.__name__})")
            by_id[exp.id] = exp
            for spec in exp.figures:
                if spec.id in by_figure:
                    raise ValueError(f"figure id {spec.id!r} is defined twice (again in {module.__name__})")
                by_figure[spec.id] = exp
    return by_id, by_figure


def all_rules() -> list[Rule]:
    """Every rule of the library: the ``RULES`` of each experiment module, in module order."""
    return [rule for module in modules() for rule in getattr(module, "RULES", ())]


def all_experiments() -> dict[str, Experiment]:
    """Every experiment, by id."""
    return dict(_registry()[0])


def figure_ids() -> list[str]:
    """Every figure id of the book, sorted."""
    return sorted(_registry()[1])


def get(experiment_id: str) -> Experiment:
    """The experiment with id ``experiment_id``."""
    by_id = _registry()[0]
    check_choice("experiment id", experiment_id, sorted(by_id))
    return by_id[experiment_id]


def owner(fig_id: str) -> Experiment:
    """The experiment that makes figure ``fig_id``."""
    by_figure = _registry()[1]
    check_choice("figure id", fig_id, sorted(by_figure))
    return by_figure[fig_id]


def resolve(target: str | Experiment) -> Experiment:
    """An experiment: itself, by its id, or by the id of one of its figures."""
    if isinstance(target, Experiment):
        return target
    by_id, by_figure = _registry()
    if target in by_id:
        return by_id[target]
    check_choice("experiment or figure id", target, sorted(by_id) + sorted(by_figure))
    return by_figure[target]


def make(
    target: str | Experiment,
    config: Any = None,
    *,
    profile: str | None = None,
    out: Path | None = None,
    progress: Progress | None = None,
) -> Made:
    """Run an experiment, save its result, and make and save every one of its figures.

    Args:
        target: an :class:`Experiment`, its id, or the id of one of its figures.
        config: its configuration (default: the preset of ``profile``).
        profile: ``smoke``, ``book`` or ``paper`` (default: the active profile); recorded in the provenance.
        out: artifacts folder (default ``$SCANSNAP_ARTIFACTS`` or ``_extra``).
        progress: called once per unit of work (``experiment.work(config)`` units in all).
    """
    exp = resolve(target)
    profile = profiles.current() if profile is None else check_choice("profile", profile, profiles.PROFILES)
    config = exp.config.preset(profile) if config is None else config
    if not isinstance(config, exp.config):
        raise ValueError(f"config: must be a {exp.config.__name__} for experiment {exp.id}; "
                         f"got {type(config).__name__}")
    start = time.perf_counter()
    result = exp.run(config, progress)
    return publish(exp, config, result, time.perf_counter() - start, profile=profile, out=out)


def publish(exp: Experiment, config: Any, result: Any, wall_time_s: float, *, profile: str, out: Path | None = None,
            protocol: str | None = None) -> Made:
    """Save ``result`` (made by ``exp.run(config)`` in ``wall_time_s`` seconds) and make and save every figure of
    ``exp`` from it: what :func:`make` does after the run, and what a page does with a stored run
    (:func:`scansnap.store.load`). ``protocol``: the figures' protocol text (default ``config.protocol()``)."""
    folder = artifacts_dir() if out is None else Path(out)
    results.save(result, folder / "results" / f"{exp.id}.npz")
    made_figures, records = {}, {}
    for spec in exp.figures:
        fig = spec.plot(result)
        made_figures[spec.id] = fig
        records[spec.id] = figures.save(fig, spec.id, spec.table(result), config.to_dict(), caption=spec.caption,
                                        chapter=exp.chapter, claims=spec.claims, wall_time_s=wall_time_s,
                                        profile=profile, out=out,
                                        protocol=config.protocol() if protocol is None else protocol)
    return Made(exp, config, result, made_figures, records, wall_time_s)


def load_result(target: str | Experiment, out: Path | None = None) -> Any:
    """The result :func:`make` last saved for an experiment (or the experiment of a figure)."""
    exp = resolve(target)
    folder = artifacts_dir() if out is None else Path(out)
    return results.load(exp.result, folder / "results" / f"{exp.id}.npz")
