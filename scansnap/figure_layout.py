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
    """One rendered text: its string, the corners of its box in display pixels (origin at the figure's lower left;
    ``(4, 2)``, in order around the box: a rotated text, e.g. a tick label at 45 degrees, has a rotated box) and the
    index in ``fig.axes`` of the axes it belongs to (-1: the figure's own, e.g. the suptitle)."""

    text: str
    corners: tuple[tuple[float, float], ...]
    axes: int = -1

    def __str__(self) -> str:
        (x0, y0), (x1, y1) = np.min(self.corners, axis=0), np.max(self.corners, axis=0)
        return f"{self.text!r} at x {x0:.0f}-{x1:.0f}, y {y0:.0f}-{y1:.0f} px"


def _rect(x0: float, y0: float, x1: float, y1: float) -> tuple[tuple[float, float], ...]:
    return ((x0, y0), (x1, y0), (x1, y1), (x0, y1))


def _corners(t: Text, renderer: object) -> tuple[tuple[float, float], ...]:
    """The box of ``t`` as drawn: its window extent, or for a text turned by other than a multiple of 90 degrees
    the unturned box of the same size turned about the extent's centre (the centre of a rectangle's extent)."""
    box = t.get_window_extent(renderer)
    angle = t.get_rotation()
    if angle % 90 == 0:
        return _rect(box.x0, box.y0, box.x1, box.y1)
    t.set_rotation(0)
    flat = t.get_window_extent(renderer)
    t.set_rotation(angle)
    c, th = np.array([(box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2]), np.radians(angle)
    u = np.array([np.cos(th), np.sin(th)]) * flat.width / 2
    v = np.array([-np.sin(th), np.cos(th)]) * flat.height / 2
    return tuple(tuple(float(z) for z in p) for p in (c - u - v, c + u - v, c + u + v, c - u + v))


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
    index: dict[int, int] = {}  # id of a text -> the axes holding it (axis labels have no .axes: walk each axes)
    for i, ax in enumerate(fig.axes):
        for t in ax.findobj(Text):
            index.setdefault(id(t), i)
    unique = list({id(t): t for t in drawn}.values())
    return [TextBox(" ".join(t.get_text().split()), _corners(t, renderer), index.get(id(t), -1)) for t in unique]


def _depth(a: np.ndarray, b: np.ndarray) -> float:
    """How far two boxes ``(4, 2)`` (rectangles, corners in order) overlap: the least overlap of their projections
    on the sides of either (the separating-axis test; negative: apart by that much). Upright boxes: the smaller of
    the shared width and height."""
    depth = np.inf
    for box in (a, b):
        for side in (box[1] - box[0], box[3] - box[0]):
            n = side / np.hypot(*side)
            pa, pb = a @ n, b @ n
            depth = min(depth, min(pa.max(), pb.max()) - max(pa.min(), pb.min()))
    return float(depth)


def _overlaps(boxes: list[TextBox], others: list[np.ndarray], tol: float) -> list[tuple[int, int, float]]:
    """``(i, k, depth)`` for every box ``i`` and box ``k`` of ``others`` that overlap by more than ``tol``
    (candidates first by their upright extents)."""
    if not boxes or not others:
        return []
    mine = [np.asarray(b.corners) for b in boxes]
    lo_a, hi_a = np.array([c.min(0) for c in mine]), np.array([c.max(0) for c in mine])  # (N, 2)
    lo_b, hi_b = np.array([c.min(0) for c in others]), np.array([c.max(0) for c in others])  # (M, 2)
    shared = np.minimum(hi_a[:, None], hi_b[None]) - np.maximum(lo_a[:, None], lo_b[None])  # (N, M, 2)
    out = []
    for i, k in zip(*np.nonzero((shared > tol).all(-1)), strict=True):
        d = _depth(mine[i], others[k])
        if d > tol:
            out.append((int(i), int(k), d))
    return out


def _intrusions(fig: Figure, boxes: list[TextBox], tol: float) -> list[str]:
    areas = [np.asarray(_rect(*ax.bbox.extents)) for ax in fig.axes]  # the plotting areas
    if len(areas) < 2:
        return []
    lo, hi = np.array([a[0] for a in areas]), np.array([a[2] for a in areas])  # (A, 2)
    apart = ((np.minimum(hi[:, None], hi[None]) - np.maximum(lo[:, None], lo[None])) <= 0).any(-1)  # (A, A)
    owned = [b for b in boxes if b.axes >= 0]  # not twin or inset axes: their areas overlap
    return [f"intrudes: {owned[i]} (axes {owned[i].axes}) reaches into the plotting area of axes {k} (by {d:.0f} px)"
            for i, k, d in _overlaps(owned, areas, tol) if apart[owned[i].axes, k]]


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
    and legends that do not name their series (:func:`legend_problems`). The figure is drawn at its own size and
    dpi, as :func:`scansnap.figures.save` renders it."""
    if not isinstance(tol, int | float) or not 0 <= tol < float("inf"):
        raise ValueError(f"tol: must be a finite number of pixels >= 0; got {tol!r}")
    boxes = text_boxes(fig)
    width, height = fig.bbox.width, fig.bbox.height
    out = [f"cut: {b} leaves the figure ({width:.0f} x {height:.0f} px)" for b in boxes
           if (np.min(b.corners, 0) < -tol).any() or (np.max(b.corners, 0) > (width + tol, height + tol)).any()]
    out += [f"overlap: {boxes[i]} and {boxes[k]} (by {d:.0f} px)"
            for i, k, d in _overlaps(boxes, [np.asarray(b.corners) for b in boxes], tol) if i < k]
    return out + _intrusions(fig, boxes, tol) + legend_problems(fig)


def check(fig: Figure, name: str = "figure", tol: float = TOL) -> None:
    """Raise ``ValueError`` naming ``name`` and every problem :func:`problems` finds in ``fig``."""
    found = problems(fig, tol)
    if found:
        raise ValueError(f"{name}: {len(found)} layout problem(s):\n  " + "\n  ".join(found))
