"""LEGACY, being replaced by :mod:`scansnap.experiments`: figure recipes, one module per chapter.

Each module defines ``RECIPES``, a list of :class:`Recipe`; a new module here is picked up by
:data:`scansnap.experiments.RECIPES` without further registration. :class:`Recipe` lives here, not
in :mod:`scansnap.experiments`, so that a recipe module can be imported on its own (importing
``experiments`` imports every recipe module).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from scansnap import figures, profiles
from scansnap._checks import check_choice

__all__ = ["RECIPES", "Progress", "Recipe", "Result", "defaults", "get", "run"]

Progress = Callable[[int], None]


@dataclass(frozen=True)
class Recipe:
    """How to make one figure.

    Attributes:
        id: the stable figure id (file names and anchor).
        chapter: the book page (docname) that shows it.
        caption: what the figure shows, one or two sentences.
        claims: ids of the claims it supports.
        params: profile -> default parameters.
        work: parameters -> number of progress units (for a progress bar).
        compute: (parameters, progress) -> columns.
        plot: (columns, parameters) -> figure.
    """

    id: str
    chapter: str
    caption: str
    claims: tuple[str, ...]
    params: Callable[[str], dict]
    work: Callable[[dict], int]
    compute: Callable[[dict, Progress | None], dict[str, np.ndarray]]
    plot: Callable[[dict[str, np.ndarray], dict], Figure]



@dataclass
class Result:
    """A made figure: the matplotlib figure, its columns, and its provenance record."""

    fig: Figure
    data: dict[str, np.ndarray]
    record: figures.FigureRecord


def _collect() -> dict[str, Recipe]:
    """Every recipe of the book: the ``RECIPES`` list of each module of :mod:`scansnap.recipes`."""
    import importlib
    import pkgutil

    import scansnap.recipes as recipes

    found: dict[str, Recipe] = {}
    for info in sorted(pkgutil.iter_modules(recipes.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"scansnap.recipes.{info.name}")
        for recipe in module.RECIPES:
            if recipe.id in found:
                raise ValueError(f"figure id {recipe.id!r} is defined twice (again in {module.__name__})")
            found[recipe.id] = recipe
    return found


def get(fig_id: str) -> Recipe:
    """The recipe of figure ``fig_id``."""
    check_choice("figure id", fig_id, sorted(RECIPES))
    return RECIPES[fig_id]


def defaults(fig_id: str, profile: str | None = None) -> dict:
    """Default parameters of figure ``fig_id`` for ``profile`` (default: the active profile)."""
    return get(fig_id).params(profiles.current() if profile is None else check_choice("profile", profile,
                                                                                          profiles.PROFILES))


def run(
    fig_id: str,
    params: dict | None = None,
    *,
    profile: str | None = None,
    out: Path | None = None,
    progress: Progress | None = None,
) -> Result:
    """Compute, plot and save figure ``fig_id`` (PNG, SVG, CSV, provenance) under ``out/figures``.

    Args:
        fig_id: a key of :data:`RECIPES`.
        params: parameters (default :func:`defaults` for ``profile``).
        profile: ``smoke``, ``book`` or ``paper`` (default: the active profile).
        out: artifacts folder (default ``$SCANSNAP_ARTIFACTS`` or ``_extra``).
        progress: called once per unit of work (``recipe.work(params)`` units in all).
    """
    recipe = get(fig_id)
    profile = profiles.current() if profile is None else check_choice("profile", profile, profiles.PROFILES)
    params = defaults(fig_id, profile) if params is None else params
    start = time.perf_counter()
    columns = recipe.compute(params, progress)
    wall = time.perf_counter() - start
    fig = recipe.plot(columns, params)
    record = figures.save(fig, recipe.id, columns, params, caption=recipe.caption, chapter=recipe.chapter,
                          claims=recipe.claims, wall_time_s=wall, profile=profile, out=out)
    return Result(fig=fig, data=columns, record=record)


# Collected last: each recipe module imports :class:`Recipe` from this (then partly loaded) module.
RECIPES: dict[str, Recipe] = _collect()
