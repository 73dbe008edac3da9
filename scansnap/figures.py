"""One plot style for the whole book, and citable figures.

:func:`save` writes a figure as PNG and SVG, the data behind it (CSV for a table of equal-length
columns, JSON otherwise) and a provenance record, under ``<artifacts>/figures/<name>.*``. The
artifacts folder (``_extra`` by default) is published with the site, so a figure has a stable
address ``figures/<name>.png`` that never changes between builds, next to its anchor
``book/chapters/<chapter>.html#<name>``. Every file is written to a temporary file and renamed.
"""

from __future__ import annotations

import csv
import html
import io
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import matplotlib as mpl
import numpy as np
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, LogFormatterSciNotation, LogLocator, NullFormatter, StrMethodFormatter

from scansnap import figure_cite, profiles, provenance
from scansnap._checks import check_choice
from scansnap._io import artifacts_dir, atomic_write, dump_json, jsonable, source_checkout

__all__ = [
    "ATOL",
    "PALETTE",
    "RTOL",
    "Comparison",
    "FigureRecord",
    "bibtex",
    "citation",
    "compare_data",
    "gallery_markdown",
    "load_record",
    "log_axis",
    "paper_figure",
    "records",
    "save",
    "set_style",
]

PALETTE = "colorblind"
_KINDS = ("png", "svg", "data", "provenance")
_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789-")


def set_style() -> None:
    """Apply the book's seaborn style (white grid, colorblind palette, 150 dpi figures)."""
    sns.set_theme(context="notebook", style="whitegrid", palette=PALETTE)
    mpl.rcParams.update({"figure.dpi": 150, "savefig.dpi": 150, "figure.figsize": (8, 3.4),
                         "axes.titlesize": "medium"})


def log_axis(ax: Axes, which: str = "x", at: Sequence[float] | None = None) -> None:
    """Put a log scale on ``ax``'s ``which`` axis (``"x"`` or ``"y"``) with ticks that never crowd: at ``at`` (the
    values of a grid, e.g. learning rates) labelled as plain numbers; else at most 6 labelled powers of ten, plus
    labels at 2 and 5 times a power of ten when the view spans under one and a half decades (never at 3, 4, 6...,
    whose labels collide on a short axis)."""
    axis = {"x": ax.xaxis, "y": ax.yaxis}[check_choice("which", which, ("x", "y"))]
    getattr(ax, f"set_{which}scale")("log")
    if at is not None:
        axis.set_major_locator(FixedLocator(np.asarray(at, dtype=float)))
        axis.set_major_formatter(StrMethodFormatter("{x:g}"))
        axis.set_minor_formatter(NullFormatter())
        return
    axis.set_major_locator(LogLocator(base=10, numticks=6))
    axis.set_major_formatter(LogFormatterSciNotation())
    axis.set_minor_locator(LogLocator(base=10, subs=(2.0, 5.0), numticks=12))
    axis.set_minor_formatter(LogFormatterSciNotation(labelOnlyBase=False, minor_thresholds=(1.5, 1.5)))


@dataclass
class FigureRecord:
    """Provenance of one saved figure (written as ``<name>.json``)."""

    id: str
    caption: str
    chapter: str
    claims: list[str]
    params: dict
    profile: str
    version: str
    commit: str
    wall_time_s: float
    date: str
    command: str
    files: dict[str, str] = field(default_factory=dict)
    protocol: str = ""

    @property
    def anchor(self) -> str:
        """The figure's anchor in the built site, e.g. ``book/chapters/01-setting.html#fig-ch1-synsmall``."""
        return f"{self.chapter}.html#{self.id}"


def save(
    fig: Figure,
    name: str,
    data: Mapping[str, Sequence | np.ndarray] | Mapping[str, object],
    params: Mapping[str, object],
    *,
    caption: str,
    chapter: str,
    claims: Sequence[str] = (),
    wall_time_s: float = 0.0,
    profile: str | None = None,
    protocol: str = "",
    out: Path | None = None,
) -> FigureRecord:
    """Write ``fig`` (PNG, SVG), its ``data`` (CSV or JSON) and its provenance under ``out/figures``.

    Args:
        fig: the matplotlib figure.
        name: stable id, lowercase letters, digits and dashes (e.g. ``"fig-ch1-synsmall"``).
        data: the numbers plotted; a mapping of equal-length 1-D columns is written as CSV,
            anything else JSON-serializable as JSON.
        params: every parameter of the run, seeds included (JSON-serializable).
        caption: one-sentence caption; chapter: the book page (docname) showing the figure.
        claims: ids of the claims (``"C35"``...) the figure supports.
        wall_time_s: seconds the computation took.
        profile: the profile whose parameters made it (default: the active profile).
        protocol: how the run was made, in words (the configuration's ``protocol()``; the caption states no
            run parameters).
        out: artifacts folder (default :func:`scansnap._io.artifacts_dir`).
    """
    _check_name(name)
    profile = profiles.current() if profile is None else check_choice("profile", profile, profiles.PROFILES)
    folder = (artifacts_dir() if out is None else Path(out)) / "figures"
    table = _as_table(data)
    files = {"png": f"{name}.png", "svg": f"{name}.svg", "data": f"{name}.{'csv' if table else 'json'}",
             "provenance": f"{name}.json"}
    if files["data"] == files["provenance"]:
        files["data"] = f"{name}.data.json"
    atomic_write(folder / files["png"], _render(fig, "png"))
    atomic_write(folder / files["svg"], _render(fig, "svg"))
    atomic_write(folder / files["data"], _csv(table) if table else dump_json(jsonable(data)))
    record = FigureRecord(
        id=name, caption=caption, chapter=chapter, claims=list(claims), params=jsonable(dict(params)),
        profile=profile, version=provenance.version(), commit=provenance.git_commit(),
        wall_time_s=round(float(wall_time_s), 3), date=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        command=f"python -m scansnap reproduce {name} --profile {profile}", files=files, protocol=protocol,
    )
    atomic_write(folder / files["provenance"], dump_json(asdict(record)))
    return record


def _check_name(name: str) -> None:
    """A figure id is a file name under ``figures/``: lowercase letters, digits and dashes (no path)."""
    if not isinstance(name, str) or not name or set(name) - _NAME_CHARS:
        raise ValueError(f"name: must be lowercase letters, digits and dashes; got {name!r}")


def load_record(name: str, out: Path | None = None) -> FigureRecord:
    """The provenance record of figure ``name`` (lowercase letters, digits and dashes)."""
    _check_name(name)
    path = (artifacts_dir() if out is None else Path(out)) / "figures" / f"{name}.json"
    if not path.exists():
        raise ValueError(f"name: no saved figure {name!r} under {path.parent}")
    return FigureRecord(**json.loads(path.read_text()))


def records(out: Path | None = None) -> list[FigureRecord]:
    """Every saved figure's record, sorted by id (provenance files are ``<id>.json``; data ``.csv``
    or ``<id>.data.json``)."""
    folder = (artifacts_dir() if out is None else Path(out)) / "figures"
    return [load_record(p.stem, out) for p in sorted(folder.glob("*.json")) if not p.name.endswith(".data.json")]


def paper_figure(record: FigureRecord) -> str:
    """The paper's figure a book figure re-makes, from its caption (``"Figure 6"``, ``"Figures 11-12"``),
    or ``""`` for a figure of the book's own. Captions of re-made figures start with "Figure N of the
    paper"; the caption is the record's, else the one of the figure's block in its chapter, else the figure's
    id (``fig-paper-6`` re-makes Figure 6)."""
    for text in (record.caption, _chapter_caption(record)):
        found = _PAPER_FIGURE.match(text or "")
        if found:
            return found.group(1)
    by_id = re.fullmatch(r"fig-paper-(\d+)", record.id)
    return f"Figure {by_id.group(1)}" if by_id else ""


_PAPER_FIGURE = re.compile(r"\s*(Figures? \d+(?:\s*(?:-|–|,|and)\s*\d+)*) of the paper\b")


def _chapter_caption(record: FigureRecord) -> str:
    checkout = source_checkout()
    page = checkout / f"{record.chapter}.md" if checkout is not None else None
    if page is None or not page.is_file():
        return ""
    found = re.search(r"```\{glue:figure\} " + re.escape(record.id) + r"\n(?::[^\n]*\n)*\s*(.*?)```",
                      page.read_text(), re.S)
    return " ".join(found.group(1).split()) if found else ""


def citation() -> dict[str, str]:
    """The book's citation metadata from ``CITATION.cff``: its top-level ``title``, ``version``, ``url`` (the
    site) and ``repository-code``, and the first author's ``name``; the package's own values outside the
    source checkout."""
    meta = {"title": "Scan and Snap, executed: an executable companion", "version": provenance.version(),
            "url": "", "repository-code": "", "name": "The scansnap contributors"}
    checkout = source_checkout()
    cff = checkout / "CITATION.cff" if checkout is not None else None
    if cff is not None and cff.is_file():
        text = cff.read_text()
        top = dict(re.findall(r"^(title|version|url|repository-code): *(.+)$", text, re.M))
        author = re.search(r"^authors:\n\s*- name: *(.+)$", text, re.M)
        meta.update({k: v.strip().strip("\"'") for k, v in top.items()})
        meta["name"] = author.group(1).strip().strip("\"'") if author else meta["name"]
    return meta


def bibtex(record: FigureRecord) -> str:
    """A ready BibTeX entry for citing one figure of the book: version, commit, profile and the anchor URL (the site
    address is ``url`` of ``CITATION.cff``); its note names the verdicts the figure is the evidence of, each with its
    kind of evidence and protocol label (:func:`scansnap.figure_cite.verdict_lines`), the command that re-makes it
    and the one that checks it (:func:`scansnap.figure_cite.check_command`)."""
    meta = citation()
    paper = paper_figure(record)
    what = f"{paper} of the paper, re-made" if paper else "Figure"
    site = meta["url"].rstrip("/") + "/" if meta["url"] else ""
    commit = record.commit if re.fullmatch(r"[0-9a-f]{40}", record.commit) else f"{record.commit} (not a clean commit)"
    fields = {
        "author": f"{{{meta['name']}}}",
        "title": f"{what} ({record.id}), in: {meta['title']}",
        "year": record.date[:4],
        "version": record.version,
        "url": f"{site}{record.anchor}",
        "note": f"scansnap {record.version}, commit {commit}, profile {record.profile}; verdicts: "
                + (", ".join(f"[{line}]" for line in figure_cite.verdict_lines(record)) or "none (an illustration)")
                + f"; re-make: {record.command}; check: {figure_cite.check_command(record)}",
    }
    width = max(map(len, fields))
    body = ",\n".join(f"  {k:<{width}} = {{{v}}}" for k, v in fields.items())
    return f"@misc{{scansnap-{record.id},\n{body}\n}}"


GALLERY_COLUMNS = ("paper", "book figure", "files", "claims: verdict", "re-make", "cite")
"""The gallery's columns, in order (``_static/scansnap-layout.css`` names a narrow screen's card fields so)."""


def gallery_markdown(headlines: Mapping[str, str], base: str = "", out: Path | None = None) -> str:
    """Every saved figure as one row of a Markdown table (the page's stylesheet shows each row as a card): the
    paper's figure it re-makes, the book's figure (thumbnail and anchor), its files, its claims with their headline
    verdicts, the command that re-makes and checks it, and a BibTeX entry (:func:`bibtex`). Re-made paper figures
    come first, in the paper's order.

    Args:
        headlines: claim id -> its headline verdict (:func:`scansnap.claims.headline`; a claim not in it reads
            "not yet checked").
        base: prefix from the page showing the gallery to the site root (``"../"`` from ``book/``).
        out: artifacts folder (default :func:`scansnap._io.artifacts_dir`).
    """
    rows = ["| " + " | ".join(GALLERY_COLUMNS) + " |", "|---" * len(GALLERY_COLUMNS) + "|"]
    for r in sorted(records(out), key=_paper_order):
        paper = paper_figure(r) or "the book's own"
        figure = (f'<a href="{base}{r.anchor}"><img src="{base}figures/{r.files["png"]}" alt="{r.id}" width="160">'
                  f'<br><code>{r.id}</code></a><br>{r.chapter.rsplit("/", 1)[-1]}')
        files = " · ".join(f'<a href="{base}figures/{r.files[k]}">{k}</a>' for k in _KINDS if k in r.files)
        verdicts = "<br>".join(f'<a href="{base}book/claims.html#{c.lower()}">{c}</a>: '
                               f'**{headlines.get(c, "not yet checked")}**' for c in r.claims)
        verdicts = verdicts or "none (an illustration)"
        remake = (f"<code>python -m scansnap reproduce {r.id} --profile {r.profile}</code><br>"
                  f"check it: <code>{figure_cite.check_command(r)}</code>"
                  + (f"<br>protocol ({r.profile} profile): {html.escape(r.protocol)}" if r.protocol else ""))
        # braces as entities: MyST's substitution extension would read "{{" in the page as a template
        entry = html.escape(bibtex(r)).replace("{", "&#123;").replace("}", "&#125;")
        cite = f'<details><summary>BibTeX</summary><pre class="sg-bibtex">{entry}</pre></details>'
        rows.append("| " + " | ".join(c.replace("|", "\\|").replace("\n", "&#10;")
                                      for c in (paper, figure, files, verdicts, remake, cite)) + " |")
    if len(rows) == 2:
        return "No figure has been saved yet."
    return "\n".join(rows)


def _paper_order(record: FigureRecord) -> tuple[int, str]:
    found = re.search(r"\d+", paper_figure(record))
    return (int(found.group()) if found else 10**6, record.id)


RTOL, ATOL = 1e-6, 1e-9
"""The tolerance of :func:`compare_data` when a re-made figure's data are not byte-equal to the published
ones: every number within ``ATOL + RTOL * |published|``. Seeded runs are deterministic on CPU, but the
last bits of a sum can depend on the thread count and the BLAS build of the machine that runs them."""


@dataclass(frozen=True)
class Comparison:
    """What :func:`compare_data` found: ``identical`` (byte-equal), ``equal`` (identical, or the same text and
    every number within the tolerance) and the detail in words."""

    identical: bool
    equal: bool
    detail: str


def compare_data(published: Path, made: Path, rtol: float = RTOL, atol: float = ATOL) -> Comparison:
    """Compare a figure's re-made data file (CSV or JSON) with the published one: byte-equal, else the same
    columns and text with every number within ``atol + rtol * |published|`` (``rtol``, ``atol``: finite, ``>= 0``)."""
    for name, tol in (("rtol", rtol), ("atol", atol)):
        if isinstance(tol, bool) or not isinstance(tol, int | float) or not 0 <= tol < math.inf:
            raise ValueError(f"{name}: must be a finite number >= 0; got {tol!r}")
    old, new = Path(published).read_bytes(), Path(made).read_bytes()
    if old == new:
        return Comparison(True, True, f"byte-equal ({len(old)} bytes)")
    try:
        if Path(published).suffix == ".csv":
            a, b = (list(csv.DictReader(io.StringIO(x.decode()))) for x in (old, new))  # row i: {column: value}
        else:
            a, b = json.loads(old), json.loads(new)
    except (UnicodeDecodeError, ValueError, csv.Error) as err:
        return Comparison(False, False, f"the published file does not parse ({err})")
    worst: list[float] = [0.0]
    problem = _differ(a, b, rtol, atol, "", worst)
    if problem:
        return Comparison(False, False, f"differ at {problem}")
    return Comparison(False, True, f"not byte-equal, but every number within rtol {rtol:g}, atol {atol:g} "
                                   f"(largest difference {worst[0]:.3g})")


def _number(x: object) -> float | None:
    if isinstance(x, bool):
        return None
    if isinstance(x, int | float):
        return float(x)
    try:
        return float(x) if isinstance(x, str) else None
    except ValueError:
        return None


def _differ(a: object, b: object, rtol: float, atol: float, where: str, worst: list[float]) -> str:
    """Where ``b`` differs from ``a`` beyond the tolerance (``""``: nowhere); tracks the largest difference."""
    if isinstance(a, list | dict) or isinstance(b, list | dict):
        if type(a) is not type(b) or len(a) != len(b):
            return f"{where or 'top'}: published {_short(a)}, re-made {_short(b)}"
        keys = list(a) if isinstance(a, dict) else range(len(a))
        if isinstance(a, dict) and set(a) != set(b):
            return f"{where or 'top'}: keys {sorted(set(a) ^ set(b))} differ"
        for k in keys:
            found = _differ(a[k], b[k], rtol, atol, f"{where}[{k!r}]", worst)
            if found:
                return found
        return ""
    x, y = _number(a), _number(b)
    if x is None or y is None:
        return "" if a == b else f"{where}: published {a!r}, re-made {b!r}"
    if x == y or (x != x and y != y):  # equal, infinities included, or both NaN
        return ""
    worst[0] = max(worst[0], abs(x - y))
    return "" if abs(x - y) <= atol + rtol * abs(x) else f"{where}: published {a}, re-made {b}"


def _short(x: object) -> str:
    return f"{type(x).__name__} of {len(x)}" if isinstance(x, list | dict) else repr(x)


def _render(fig: Figure, fmt: str) -> bytes:
    buf = io.BytesIO()
    metadata = {"Date": None} if fmt == "svg" else {"Software": None}
    with mpl.rc_context({"svg.hashsalt": "scansnap"}):  # stable SVG ids: same figure, same bytes
        fig.savefig(buf, format=fmt, bbox_inches="tight", metadata=metadata)
    return buf.getvalue()


def _as_table(data: Mapping[str, object]) -> dict[str, np.ndarray] | None:
    cols = {}
    for key, value in data.items():
        arr = np.asarray(value)
        if arr.ndim != 1:
            return None
        cols[key] = arr
    lengths = {len(c) for c in cols.values()}
    return cols if cols and len(lengths) == 1 else None


def _csv(table: dict[str, np.ndarray]) -> bytes:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(list(table))
    for row in zip(*table.values(), strict=True):
        writer.writerow([repr(float(v)) if isinstance(v, float | np.floating) else v for v in row])
    return buf.getvalue().encode()
