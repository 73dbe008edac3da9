"""One plot style for the whole book, and citable figures.

:func:`save` writes a figure as PNG and SVG, the data behind it (CSV for a table of equal-length
columns, JSON otherwise) and a provenance record, under ``<artifacts>/figures/<name>.*``. The
artifacts folder (``_extra`` by default) is published with the site, so a figure has a stable
address ``figures/<name>.png`` that never changes between builds, next to its anchor
``book/chapters/<chapter>.html#<name>``. Every file is written to a temporary file and renamed.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import matplotlib as mpl
import numpy as np
import seaborn as sns
from matplotlib.figure import Figure

from scansnap import claims, profiles, provenance
from scansnap._checks import check_choice
from scansnap._io import artifacts_dir, atomic_write, dump_json

__all__ = ["PALETTE", "FigureRecord", "gallery_markdown", "load_record", "records", "save", "set_style"]

PALETTE = "colorblind"
_KINDS = ("png", "svg", "data", "provenance")
_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789-")


def set_style() -> None:
    """Apply the book's seaborn style (white grid, colorblind palette, 150 dpi figures)."""
    sns.set_theme(context="notebook", style="whitegrid", palette=PALETTE)
    mpl.rcParams.update({"figure.dpi": 150, "savefig.dpi": 150, "figure.figsize": (8, 3.4),
                         "axes.titlesize": "medium"})


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
        out: artifacts folder (default :func:`scansnap.claims.artifacts_dir`).
    """
    if not name or set(name) - _NAME_CHARS:
        raise ValueError(f"name: must be lowercase letters, digits and dashes; got {name!r}")
    profile = profiles.current() if profile is None else check_choice("profile", profile, profiles.PROFILES)
    folder = (artifacts_dir() if out is None else Path(out)) / "figures"
    table = _as_table(data)
    files = {"png": f"{name}.png", "svg": f"{name}.svg", "data": f"{name}.{'csv' if table else 'json'}",
             "provenance": f"{name}.json"}
    if files["data"] == files["provenance"]:
        files["data"] = f"{name}.data.json"
    atomic_write(folder / files["png"], _render(fig, "png"))
    atomic_write(folder / files["svg"], _render(fig, "svg"))
    atomic_write(folder / files["data"], _csv(table) if table else dump_json(_jsonable(data)))
    record = FigureRecord(
        id=name, caption=caption, chapter=chapter, claims=list(claims), params=_jsonable(dict(params)),
        profile=profile, version=provenance.version(), commit=provenance.git_commit(),
        wall_time_s=round(float(wall_time_s), 3), date=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        command=f"python -m scansnap reproduce {name} --profile {profile}", files=files,
    )
    atomic_write(folder / files["provenance"], dump_json(asdict(record)))
    return record


def load_record(name: str, out: Path | None = None) -> FigureRecord:
    """The provenance record of figure ``name``."""
    path = (artifacts_dir() if out is None else Path(out)) / "figures" / f"{name}.json"
    if not path.exists():
        raise ValueError(f"name: no saved figure {name!r} under {path.parent}")
    return FigureRecord(**json.loads(path.read_text()))


def records(out: Path | None = None) -> list[FigureRecord]:
    """Every saved figure's record, sorted by id (provenance files are ``<id>.json``; data ``.csv``
    or ``<id>.data.json``)."""
    folder = (artifacts_dir() if out is None else Path(out)) / "figures"
    return [load_record(p.stem, out) for p in sorted(folder.glob("*.json")) if not p.name.endswith(".data.json")]


def gallery_markdown(base: str = "", out: Path | None = None) -> str:
    """Every saved figure as Markdown: image, caption, claims and verdicts, downloads, provenance, command.

    Args:
        base: prefix from the page showing the gallery to the site root (``"../"`` from ``book/``).
        out: artifacts folder (default :func:`scansnap._io.artifacts_dir`).
    """
    blocks = []
    for r in records(out):
        verdicts = ", ".join(f"{c} ({claims.headline(c)})" for c in r.claims) or "none (an illustration)"
        files = " · ".join(f'<a href="{base}figures/{r.files[k]}">{k}</a>' for k in _KINDS if k in r.files)
        params = ", ".join(f"{k}={v}" for k, v in sorted(r.params.items()))
        blocks.append("\n".join([
            f'<p><a href="{base}{r.anchor}"><strong>{r.id}</strong></a></p>',
            "",
            f'<a href="{base}{r.anchor}"><img src="{base}figures/{r.files["png"]}" alt="{r.id}" width="640"></a>',
            "",
            f"{r.caption}",
            "",
            f"- **claims**: {verdicts}",
            f"- **files**: {files}",
            f"- **made by**: scansnap {r.version}, commit `{r.commit}`, profile `{r.profile}`, "
            f"{r.wall_time_s:.1f} s, {r.date}",
            f"- **parameters**: {params}",
            f"- **re-make**: `{r.command} --out DIR`",
        ]))
    return "\n\n---\n\n".join(blocks) if blocks else "No figure has been saved yet."


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


def _jsonable(obj: object) -> object:
    if isinstance(obj, Mapping):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, np.ndarray | list | tuple):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if hasattr(obj, "tolist"):  # torch tensors
        return obj.tolist()
    return obj
