"""A layout check of the book's figures: no two texts overlap, no text leaves the figure, legends name their series.

:func:`problems` draws a matplotlib figure on the Agg canvas, as the book saves it, records every text the draw
actually renders (titles, axis labels, tick labels, offset texts, legend texts, annotations, colorbar labels,
the suptitle: whatever reaches the renderer's ``draw_text``, so a tick label outside the view limits or an empty or
hidden text is not counted), and reports, in words:

* ``overlap``: two texts whose boxes share more than ``tol`` pixels in both directions;
* ``cut``: a text whose box reaches more than ``tol`` pixels outside the figure;
* ``intrudes``: a text of one axes (a tick label, an axis label, a title, a legend) reaching more than ``tol``
  pixels into the plotting area of another axes that does not overlap its own (twin and inset axes apart);
* ``legend``: a legend with an empty label or the same label twice (a legend must name each series).

>>> import matplotlib.pyplot as plt
>>> fig, ax = plt.subplots()
>>> _ = ax.set_title("a title"); _ = ax.plot([0, 1], label="seed 1"); _ = ax.legend()
>>> problems(fig)
[]

``tests/test_figure_layout.py`` runs it on every figure of the book.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text

__all__ = ["TOL", "TextBox", "check", "legend_problems", "problems", "text_boxes"]

TOL = 1.0
"""Pixels two texts may share (or a text may pass the figure's edge) before :func:`problems` reports it: the
anti-aliased edge of a glyph."""


@dataclass(frozen=True)
class TextBox:
    """One rendered text: its string, its box in display pixels (origin at the figure's lower left) and the index
    in ``fig.axes`` of the axes it belongs to (-1: the figure's own, e.g. the suptitle)."""

    text: str
    x0: float
    y0: float
    x1: float
    y1: float
    axes: int = -1

    def __str__(self) -> str:
        return f"{self.text!r} at x {self.x0:.0f}-{self.x1:.0f}, y {self.y0:.0f}-{self.y1:.0f} px"


@contextlib.contextmanager
def _recording(renderer: object, drawn: list[Text]) -> Iterator[None]:
    """Record the artist of every ``draw_text`` call on ``renderer`` (a text of several lines is drawn line by
    line: its artist is recorded once)."""
    original = renderer.draw_text  # type: ignore[attr-defined]

    def draw_text(gc, x, y, s, prop, angle, ismath=False, mtext=None):  # noqa: ANN001, ANN202
        if mtext is not None and (not drawn or drawn[-1] is not mtext) and str(s).strip():
            drawn.append(mtext)
        return original(gc, x, y, s, prop, angle, ismath=ismath, mtext=mtext)

    renderer.draw_text = draw_text  # type: ignore[attr-defined]
    try:
        yield
    finally:
        del renderer.draw_text  # type: ignore[attr-defined]


def text_boxes(fig: Figure) -> list[TextBox]:
    """Draw ``fig`` on an Agg canvas (its layout engine included) and return the box of every text the draw
    rendered, in drawing order (a text drawn twice, e.g. by two canvases, counts once)."""
    canvas = FigureCanvasAgg(fig)
    renderer = canvas.get_renderer()  # the one canvas.draw() uses (cached for the figure's size and dpi)
    drawn: list[Text] = []
    with _recording(renderer, drawn):
        canvas.draw()  # a layout engine places everything before the first artist is drawn
    seen: set[int] = set()
    index: dict[int, int] = {}  # id of a text -> the axes holding it (axis labels have no .axes: walk each axes)
    for i, ax in enumerate(fig.axes):
        for t in ax.findobj(Text):
            index.setdefault(id(t), i)
    boxes = []
    for t in drawn:
        if id(t) in seen:
            continue
        seen.add(id(t))
        b = t.get_window_extent(renderer)
        boxes.append(TextBox(" ".join(t.get_text().split()), b.x0, b.y0, b.x1, b.y1, index.get(id(t), -1)))
    return boxes


def _shared(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Widths and heights ``(N, M)`` shared by boxes ``a`` ``(N, 4)`` and ``b`` ``(M, 4)`` (x0, y0, x1, y1;
    negative: apart)."""
    dx = np.minimum(a[:, None, 2], b[None, :, 2]) - np.maximum(a[:, None, 0], b[None, :, 0])
    dy = np.minimum(a[:, None, 3], b[None, :, 3]) - np.maximum(a[:, None, 1], b[None, :, 1])
    return dx, dy


def _intrusions(fig: Figure, boxes: list[TextBox], tol: float) -> list[str]:
    areas = np.array([list(ax.bbox.extents) for ax in fig.axes]).reshape(-1, 4)  # (A, 4) plotting areas
    if len(areas) < 2:
        return []
    ax_dx, ax_dy = _shared(areas, areas)
    apart = (ax_dx <= 0) | (ax_dy <= 0)  # (A, A): axes whose areas do not overlap (not twins, not insets)
    out = []
    for b in (b for b in boxes if b.axes >= 0):
        dx, dy = _shared(np.array([[b.x0, b.y0, b.x1, b.y1]]), areas)
        for k in np.flatnonzero((dx[0] > tol) & (dy[0] > tol) & apart[b.axes]):
            out.append(f"intrudes: {b} (axes {b.axes}) reaches into the plotting area of axes {k} "
                       f"(by {dx[0, k]:.0f} x {dy[0, k]:.0f} px)")
    return out


def legend_problems(fig: Figure) -> list[str]:
    """Every legend (of an axes or of the figure) with an empty label or a label given twice, in words."""
    legends = [ax.get_legend() for ax in fig.axes] + list(fig.legends)
    out = []
    for legend in (lg for lg in legends if lg is not None and lg.get_visible()):
        labels = [t.get_text().strip() for t in legend.get_texts()]
        if any(not label for label in labels):
            out.append(f"legend: an entry has no label (labels {labels})")
        twice = sorted({label for label in labels if label and labels.count(label) > 1})
        if twice:
            out.append(f"legend: the labels {twice} name more than one series (labels {labels})")
    return out


def problems(fig: Figure, tol: float = TOL) -> list[str]:
    """Every layout problem of ``fig`` in words (empty: none): texts that overlap by more than ``tol`` pixels,
    texts that leave the figure by more than ``tol`` pixels, texts of one axes in the plotting area of another,
    and legends that do not name their series
    (:func:`legend_problems`). The figure is drawn at its own size and dpi, as :func:`scansnap.figures.save`
    renders it."""
    if not isinstance(tol, int | float) or not 0 <= tol < float("inf"):
        raise ValueError(f"tol: must be a finite number of pixels >= 0; got {tol!r}")
    boxes = text_boxes(fig)
    width, height = fig.bbox.width, fig.bbox.height
    out = [f"cut: {b} leaves the figure ({width:.0f} x {height:.0f} px)" for b in boxes
           if b.x0 < -tol or b.y0 < -tol or b.x1 > width + tol or b.y1 > height + tol]
    if len(boxes) > 1:
        xy = np.array([[b.x0, b.y0, b.x1, b.y1] for b in boxes])  # (N, 4)
        dx, dy = _shared(xy, xy)  # (N, N)
        hit = np.triu((dx > tol) & (dy > tol), k=1)
        out += [f"overlap: {boxes[i]} and {boxes[j]} (by {dx[i, j]:.0f} x {dy[i, j]:.0f} px)"
                for i, j in zip(*np.nonzero(hit), strict=True)]
    return out + _intrusions(fig, boxes, tol) + legend_problems(fig)


def check(fig: Figure, name: str = "figure", tol: float = TOL) -> None:
    """Raise ``ValueError`` naming ``name`` and every problem :func:`problems` finds in ``fig``."""
    found = problems(fig, tol)
    if found:
        raise ValueError(f"{name}: {len(found)} layout problem(s):\n  " + "\n  ".join(found))
