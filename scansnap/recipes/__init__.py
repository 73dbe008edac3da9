"""The book's figure recipes, one module per chapter (``chNN_<topic>.py``).

Each module defines ``RECIPES``, a list of :class:`Recipe`; a new module here is picked up by
:data:`scansnap.experiments.RECIPES` without further registration. :class:`Recipe` lives here, not
in :mod:`scansnap.experiments`, so that a recipe module can be imported on its own (importing
``experiments`` imports every recipe module).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from matplotlib.figure import Figure

__all__ = ["Progress", "Recipe"]

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

