"""The book's experiments: typed configurations, runs, figures and verdicts, one module per chapter.

Each module listed in :mod:`scansnap.manifest` (the one registry: nothing is found by file name) defines
``EXPERIMENTS`` (a list of :class:`~scansnap.experiments.base.Experiment`) and ``RULES`` (the
:class:`~scansnap.verdicts.Rule` objects its verdicts use); a module is imported only when one of its experiments
is asked for, and checked against its manifest entry (a new module is added to the manifest). A chapter and the command
line make a figure through the same call, :func:`make`, so the figure a reader sees and the one a citer
re-makes come from one piece of code:

>>> from scansnap import experiments
>>> made = experiments.make("fig-ch1-synsmall", profile="smoke")      # doctest: +SKIP
>>> made.result, made.figures["fig-ch1-synsmall"], made.records        # doctest: +SKIP

:func:`make` runs the experiment with the profile's preset (or a given configuration), saves the
typed result (``<out>/results/<experiment id>.npz``), plots every figure of the experiment and saves
each with its data and provenance (:func:`scansnap.figures.save`). Verdicts are not recorded here: a
chapter calls ``experiment.verdicts(made.result)`` and records them (:func:`scansnap.book.record`).

:func:`make` publishes only the experiments of :mod:`scansnap.manifest` (their figures belong to a chapter). An
:class:`Experiment` of your own (its configuration a :class:`scansnap.results.Config`, its rules
:class:`~scansnap.verdicts.Rule` objects) needs no registration to be run and judged: ``result =
experiment.run(config, None)``, ``experiment.verdicts(result)``, ``spec.plot(result)`` for each of its figures and
:func:`scansnap.results.save`; adding it to the book means a module under ``scansnap/experiments/`` and an entry in
:mod:`scansnap.manifest`.
"""

from __future__ import annotations

import importlib
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from scansnap import figures, manifest, profiles, results
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


def _import(module: manifest.Module) -> ModuleType:
    """Import one module of the manifest and check it defines what its entry declares."""
    mod = importlib.import_module(manifest.module_name(module))
    defined = {e.id: e for e in getattr(mod, "EXPERIMENTS", ())}
    declared = {e.id for e in module.experiments}
    if set(defined) != declared:
        raise ValueError(f"{mod.__name__}: EXPERIMENTS define {sorted(defined)}; scansnap.manifest lists "
                         f"{sorted(declared)}")
    for e in module.experiments:
        exp = defined[e.id]
        found = (exp.run.__name__, exp.config.__name__, tuple(f.id for f in exp.figures))
        if found != (e.run, e.config, e.figures) or getattr(mod, e.run) is not exp.run:
            raise ValueError(f"{mod.__name__}: experiment {e.id} has run, config and figures {found}; "
                             f"scansnap.manifest lists {(e.run, e.config, e.figures)}")
    keys = [r.key for r in getattr(mod, "RULES", ())]
    if sorted(keys) != sorted(module.rules):
        raise ValueError(f"{mod.__name__}: RULES are {keys}; scansnap.manifest lists {list(module.rules)}")
    return mod


@cache
def _module(name: str) -> ModuleType:
    return _import(next(m for m in manifest.MODULES if m.name == name))


def modules() -> tuple[ModuleType, ...]:
    """Every experiment module of :mod:`scansnap.manifest`, imported and checked against it, in manifest order."""
    return tuple(_module(m.name) for m in manifest.MODULES)


def all_rules() -> list[Rule]:
    """Every rule of the library, in manifest order (imports every experiment module)."""
    by_key = {r.key: r for mod in modules() for r in mod.RULES}
    return [by_key[key] for key in manifest.rule_keys()]


def all_experiments() -> dict[str, Experiment]:
    """Every experiment, by id (imports every experiment module)."""
    return {eid: get(eid) for eid in manifest.entries()}


def figure_ids() -> list[str]:
    """Every figure id of the book, sorted (read from the manifest: imports nothing)."""
    return manifest.figure_ids()


def get(experiment_id: str) -> Experiment:
    """The experiment with id ``experiment_id`` (imports its module only)."""
    entry = manifest.entry(experiment_id)
    mod = _module(entry.module.rpartition(".")[2])
    return next(e for e in mod.EXPERIMENTS if e.id == experiment_id)


def owner(fig_id: str) -> Experiment:
    """The experiment that makes figure ``fig_id`` (imports its module only)."""
    return get(manifest.owner(fig_id).id)


def resolve(target: str | Experiment) -> Experiment:
    """An experiment: itself, by its id, or by the id of one of its figures."""
    if isinstance(target, Experiment):
        return target
    if target in manifest.entries():
        return get(target)
    if target in manifest.figure_ids():
        return owner(target)
    check_choice("experiment or figure id", target, sorted(manifest.entries()) + manifest.figure_ids())
    raise AssertionError("unreachable")


def _registered(exp: Experiment) -> Experiment:
    """``exp``, refused unless :mod:`scansnap.manifest` lists it: its figures are published to the chapter the
    manifest gives it, with the ``reproduce`` command that re-makes them."""
    if exp.id not in manifest.entries():
        raise ValueError(f"target: experiment {exp.id!r} is not in scansnap.manifest, so make() and publish() cannot "
                         f"publish it (its chapter and its figures' reproduce command come from there). Outside the "
                         f"book, call it directly: result = experiment.run(config, None); experiment.verdicts(result); "
                         f"scansnap.results.save(result, path); spec.plot(result) for each FigureSpec")
    return exp


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
        target: an :class:`Experiment` of :mod:`scansnap.manifest`, its id, or the id of one of its figures (an
            experiment of your own, outside the manifest, is refused before it runs: call its ``run``,
            ``verdicts`` and figures' ``plot`` directly, and :func:`scansnap.results.save` its result).
        config: its configuration (default: the preset of ``profile``; a custom one:
            ``experiment.config.preset("smoke").replace(seeds=(3, 4), steps=12)``).
        profile: ``smoke``, ``book`` or ``paper`` (default: the active profile); recorded in the provenance.
        out: artifacts folder (default ``$SCANSNAP_ARTIFACTS`` or ``_extra``).
        progress: called once per unit of work (``experiment.work(config)`` units in all).
    """
    exp = _registered(resolve(target))
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
    _registered(exp)
    folder = artifacts_dir() if out is None else Path(out)
    results.save(result, folder / "results" / f"{exp.id}.npz")
    made_figures, records = {}, {}
    for spec in exp.figures:
        fig = spec.plot(result)
        plt.close(fig)  # kept as an object, out of pyplot: a page shows it where it glues it, not at the cell's end
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
