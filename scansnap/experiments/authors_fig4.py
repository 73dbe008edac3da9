"""The authors' own Figure 4 run beside the book's (Chapter 5; C35, X8).

The authors' public repository (facebookresearch/luckmatters, ``ssl/real-dataset/scan_snap/``) holds the log of the
run behind the paper's Figure 4 (``figure_4.log``: SGD, momentum 0.9, batch 128, ``T = 128``, zero initialization,
``eta_Y = eta_Z = 1``, 100 iterations, seed 2) and the plotting script (``figure_4_create.py``). The log holds the
configuration, the two classes' ``P(l|n)`` and the training loss every second iteration; it holds **no attention**:
the script reads checkpoints (``iter-*.pth``, ``facts.pth``) that are not in the repository, and its "Final" row is
iteration 48 (``iters = range(0, 50, 2)``), not 100. So what can be compared is the start (common mass and effective
number of distinct tokens from their ``P``; the attention at ``Z = 0`` is ``P``) and the loss curve.

:func:`parse_figure4_log` extracts those numbers from the log's text; they are stored once, with the source's
address, path and commit, in ``book/data/luckmatters-figure4.json`` (:data:`DATA_FILE`), read by
:func:`load_authors_fig4`; :func:`comparison` lays the book's 95% intervals over seeds beside the authors' numbers.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from scansnap import stats
from scansnap._checks import check_array
from scansnap._io import source_checkout
from scansnap.experiments.sparsity_rules import shares
from scansnap.verdicts import number_text as num

__all__ = ["DATA_FILE", "AuthorsFig4", "ComparisonRow", "comparison", "comparison_markdown", "load_authors_fig4",
           "parse_figure4_log"]

DATA_FILE = "book/data/luckmatters-figure4.json"
"""Where the extracted numbers are kept, relative to the book's source checkout."""

_OVERRIDE = re.compile(r"^\s+([\w.]+)=(\S+)\s*\\?\s*$", re.M)
_LOSS = re.compile(r"\[(\d+)\] loss: ([0-9.eE+-]+)")
_PROBS = re.compile(r"'probs': tensor\(\[([^\]]*)\]\)")


def parse_figure4_log(text: str) -> dict:
    """The numbers of the authors' Figure 4 log (``figure_4.log``): ``{"overrides": {key: value}`` (the command
    line's ``key=value`` settings, as strings), ``"momentum"`` (from the printed configuration), ``"probs"``
    (``(classes, 20)`` the logged ``P(l|n)`` of each class over its 20 contextual tokens, 4 decimals as logged),
    ``"loss_steps"``, ``"loss"`` (the logged training loss, every second iteration)}``."""
    overrides = dict(_OVERRIDE.findall(text))
    momentum = re.search(r"^\s+momentum: (\S+)$", text, re.M)
    probs = [[float(v) for v in m.replace("\n", " ").split(",")] for m in _PROBS.findall(text)]
    loss = [(int(t), float(v)) for t, v in _LOSS.findall(text)]
    if not (overrides and momentum and probs and loss):
        raise ValueError("text: not the authors' Figure 4 log (needs the command line's overrides, the momentum, "
                         "the classes' probs and the loss lines)")
    return {"overrides": overrides, "momentum": float(momentum.group(1)), "probs": probs,
            "loss_steps": [t for t, _ in loss], "loss": [v for _, v in loss]}


@dataclass(frozen=True)
class AuthorsFig4:
    """The authors' Figure 4 run, as their log holds it.

    Attributes:
        source: where it comes from (``repository``, ``path``, ``commit``, ``url``, ``plotting_script``) and what
            the log holds and does not (``holds``, ``missing``).
        overrides: the command line's settings; momentum: SGD's momentum.
        probs: ``(classes, 20)`` the logged ``P(l|n)``; loss_steps, loss: ``(N,)`` the logged training loss.
    """

    source: dict
    overrides: dict
    momentum: float
    probs: np.ndarray
    loss_steps: np.ndarray
    loss: np.ndarray


def load_authors_fig4(path: Path | str | None = None) -> AuthorsFig4:
    """Read the stored numbers of the authors' Figure 4 run (default: :data:`DATA_FILE` in the book's source
    checkout)."""
    if path is None:
        root = source_checkout()
        if root is None:
            raise FileNotFoundError(f"path: no source checkout to read {DATA_FILE} from; pass the file's path")
        path = root / DATA_FILE
    raw = json.loads(Path(path).read_text())
    data = raw["numbers"]
    return AuthorsFig4(raw["source"], data["overrides"], float(data["momentum"]), np.asarray(data["probs"], float),
                       np.asarray(data["loss_steps"], int), np.asarray(data["loss"], float))


@dataclass(frozen=True)
class ComparisonRow:
    """One number of Figure 4's run: the book's mean and 95% t interval over seeds (of the mean), its range over seeds
    (where one run falls), the book's run with the authors' seed (nan when it is not among the seeds), and the
    authors' (nan when their log does not hold it)."""

    quantity: str
    mean: float
    low: float
    high: float
    least: float
    most: float
    book_seed: float
    authors: float

    def inside(self, rtol: float = 1e-6) -> bool:
        """Whether the authors' number lies in the range over the book's seeds, up to ``rtol`` (their log writes
        float32 numbers); False when their log does not hold it."""
        return bool(self.least * (1 - rtol) <= self.authors <= self.most * (1 + rtol))


def comparison(attention: object, loss: object, seeds: object, authors: AuthorsFig4,
               loss_at: tuple[int, ...] | None = None) -> list[ComparisonRow]:
    """The book's Figure 4 runs at ``eta_Y = eta_Z`` beside the authors' (class 1, the class the figure shows).

    Args:
        attention: ``(S, steps + 1, 20)`` class 1's attention per seed; loss: ``(S, steps)`` the training loss
            before each update; seeds: ``(S,)`` the seeds.
        authors: :func:`load_authors_fig4`.
        loss_at: steps at which the losses are compared, each logged by the authors and run by the book (default:
            those of 0, 10, 20, 48 (the plotting script's "Final") and 98 that the book ran).
    """
    f, ls = check_array("attention", attention, ndim=3), check_array("loss", loss, ndim=2)
    seeds = [int(s) for s in np.asarray(seeds).ravel()]
    theirs = int(authors.overrides.get("seed", -1))
    pick = seeds.index(theirs) if theirs in seeds else None
    common, effective = shares(f[:, [0, -1]])  # (S, 2)
    start_common, start_effective = shares(authors.probs[0] / authors.probs[0].sum())
    end = f.shape[1] - 1
    values = [("class 1's common mass, step 0", common[:, 0], float(start_common)),
              ("effective distinct tokens, step 0", effective[:, 0], float(start_effective)),
              (f"class 1's common mass, step {end}", common[:, 1], math.nan),
              (f"effective distinct tokens, step {end}", effective[:, 1], math.nan)]
    logged = dict(zip(authors.loss_steps.tolist(), authors.loss.tolist(), strict=True))
    if loss_at is None:
        loss_at = tuple(t for t in (0, 10, 20, 48, 98) if t < ls.shape[1])
    for t in loss_at:
        if t not in logged or t >= ls.shape[1]:
            raise ValueError(f"loss_at: step {t} must be logged by the authors and run by the book")
        values.append((f"training loss, step {t}", ls[:, t], logged[t]))
    rows = []
    for name, x, auth in values:
        mean, low, high = stats.t_interval(x)
        rows.append(ComparisonRow(name, mean, low, high, float(x.min()), float(x.max()),
                                  float(x[pick]) if pick is not None else math.nan, auth))
    return rows


def comparison_markdown(rows: list[ComparisonRow], seed: int) -> str:
    """``rows`` as a Markdown table for Chapter 5 (the authors' missing numbers read "not in the log")."""

    lines = [f"| quantity | book: mean [95% interval] over seeds | book: range over seeds | book, seed {seed} | "
             f"authors, seed {seed} |", "|---|---|---|---|---|"]
    for r in rows:
        authors = "not in the log" if math.isnan(r.authors) else num(r.authors)
        interval = f"[{num(r.low)}, {num(r.high)}]" if not math.isnan(r.low) else "(one seed: no interval)"
        mine = "not run" if math.isnan(r.book_seed) else num(r.book_seed)
        lines.append(f"| {r.quantity} | {num(r.mean)} {interval} | {num(r.least)} to {num(r.most)} | {mine} | "
                     f"{authors} |")
    return "\n".join(lines)
