"""Chapter 6: how far the trained attention scans in Theorem 4's setting (``ch6-reach``).

Theorem 4 speaks about a *scanning* phase (the dominant distinct token grows, the distinct-token entropy falls)
followed by a *snap*. A training test of it means something only where the trained attention visibly scans. This
experiment searches Theorem 4's setting for such a family: over families (``K`` classes, ``num_distinct`` distinct
tokens each, one common token with squared unit attention ``S0`` at ``Z = 0``) and both learning rates, it trains the
Y/Z model from ``Y = Z = 0`` with SGD without momentum (the theory's flow) in the long-sequence limit and records,
per run, the largest ``ln chi_l0`` of the dominant distinct token, the largest fall of the distinct-token entropy
and the common token's fall ``-Delta z_c``.

**Admissible** (inside the theorem's assumptions, fixed before the search): one query and one common token
(:func:`scansnap.theory.theorem4_family`), ``Z(0) = Y(0) = 0``, ``eta_Z <= eta_Y`` (Assumption 1(c) asks for
``eta_Y >> eta_Z``; equality is the loosest reading), and a small common component ``S0 <= S0_max = 0.3`` (Eqn 13;
this chapter's validity check compares Eqn 14 with the exact Eqn 10 system up to there). This is looser than Chapter
4's :func:`scansnap.theory.overlaps.assumption2` (``||E||_2 = (K - 1) S0 <= 0.1``, ``eta_Y / eta_Z >= 10``).
Families with a larger ``S0`` are searched too and reported as outside the assumptions.

The target (fixed before the search): ``ln chi_l0 >= 1`` and an entropy fall ``>= 0.3`` nats in the
same run. Why it is hard is derived in the chapter: in the symmetric family the exact Eqn 10 flow moves
``B_n`` and the common logit in the fixed ratio ``dB_n / (-dz_c) = 1 / (K (1 - S))``
(:func:`scansnap.theory.symmetric_rates`), so the distinct tokens grow only as far as the common token falls, and
``ln chi_l0 <= 2 B_n``.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure

from scansnap import figures, metrics, theory, train
from scansnap._threads import one_thread
from scansnap.experiments.base import Experiment, FigureSpec, Progress
from scansnap.params import Each, Int, Positive, Real, listed, param
from scansnap.results import Config

_NO_RULE = ("no rule reads the search (RULES is empty): it is context for why Chapter 6's training verdicts are gated, "
            "and its figure and glued numbers say which families, rates and horizons it covers")


@dataclass(frozen=True)
class ReachConfig(Config):
    """The families, rates and horizon of the search.

    Attributes:
        Ks, num_distinct, S0s: the families (every combination).
        eta_Y, ratios: the decoder rates and ``eta_Z / eta_Y`` (every combination, one batched call per family).
        steps: the horizon; points: log-spaced snapshots.
        sampled_steps, T, batch, seed: the same runs with sampled sequences (length ``T``, ``batch`` per step).
        S0_max: the largest admissible ``S0``; log_chi_target, entropy_fall_target: what "scans" means.
    """

    Ks: tuple[int, ...] = param((2, 3, 4), Each(Int(low=2)), listed)
    num_distinct: tuple[int, ...] = param((3, 5, 10), Each(Int(low=1)), listed)
    S0s: tuple[float, ...] = param((0.1, 0.2, 0.3, 0.5, 0.9), Each(Real(0, 1, open="both")), listed)
    eta_Y: tuple[float, ...] = param((0.5, 1.0, 2.0, 4.0), Each(Positive()), listed)
    ratios: tuple[float, ...] = param((0.03, 0.1, 0.3, 1.0), Each(Positive()), listed)
    steps: int = param(20000, Int(low=10))
    points: int = param(40, Int(low=3))
    sampled_steps: int = param(4000, Int(low=10))
    T: int = param(128, Int(low=2))
    batch: int = param(128, Int(low=1))
    seed: int = param(1, Int(low=0))
    S0_max: float = param(0.3, Real(0, 1, open="both"))
    log_chi_target: float = param(theory.SCAN_LOG_CHI, Positive())
    entropy_fall_target: float = param(theory.SCAN_ENTROPY_FALL, Positive())
    PROTOCOL = ("Theorem 4's family (one query, one common token), K in {Ks}, distinct tokens per class in "
                "{num_distinct}, S0 in {S0s}; eta_Y in {eta_Y}, eta_Z / eta_Y in {ratios}; Y = Z = 0; SGD without "
                "momentum, long-sequence limit, {steps} steps, and sampled sequences (T = {T}, batch {batch}, seed "
                "{seed}), {sampled_steps} steps")
    PRESETS = {"smoke": dict(Ks=(2,), num_distinct=(3,), S0s=(0.3, 0.9), eta_Y=(1.0,), ratios=(0.1, 1.0), steps=200,
                             points=10, sampled_steps=40, batch=16),
               "book": dict(Ks=(2, 4), num_distinct=(3, 10), S0s=(0.1, 0.3, 0.9), eta_Y=(1.0, 4.0),
                            ratios=(0.1, 1.0), steps=4000, sampled_steps=1000),
               "paper": {}}
    NOT_GATED = {name: _NO_RULE for name in ("Ks", "num_distinct", "S0s", "eta_Y", "ratios", "steps", "sampled_steps")}

    def families(self) -> list[tuple[int, int, float]]:
        """``(K, num_distinct, S0)`` of every family searched, in order."""
        return list(itertools.product(self.Ks, self.num_distinct, self.S0s))


@dataclass(frozen=True)
class ReachResult:
    """One row per run ``(R,)``: the family ``K``, ``num_distinct``, ``S0``, the rates ``eta_Y``, ``eta_Z``; the
    largest ``log_chi`` (``ln chi_l0``) and ``entropy_fall`` (nats) over the run, the common token's fall
    ``common_fall`` (``-Delta z_c``) and ``B_n`` at the horizon (``B``), and ``admissible`` (1 inside the
    assumptions); ``log_chi_sampled``, ``entropy_fall_sampled``: the same run with sampled sequences;
    ``log_chi_exact``, ``entropy_fall_exact``, ``common_fall_exact``: the same three numbers of the exact
    Eqn 10 system (:func:`scansnap.theory.integrate_symmetric`) at the same rates and horizon (the theory's own
    prediction for the run)."""

    config: ReachConfig
    K: np.ndarray
    num_distinct: np.ndarray
    S0: np.ndarray
    eta_Y: np.ndarray
    eta_Z: np.ndarray
    log_chi: np.ndarray
    entropy_fall: np.ndarray
    common_fall: np.ndarray
    B: np.ndarray
    admissible: np.ndarray
    log_chi_sampled: np.ndarray
    entropy_fall_sampled: np.ndarray
    log_chi_exact: np.ndarray
    entropy_fall_exact: np.ndarray
    common_fall_exact: np.ndarray


def _entropy(P: np.ndarray, z: np.ndarray) -> np.ndarray:
    """``(S,)`` entropy (nats) of the distinct-token attention ``P_l e^{z_l}`` (renormalized), ``z`` ``(S, L)``."""
    w = P * np.exp(z)
    p = w / w.sum(axis=1, keepdims=True)
    return -(p * np.log(p)).sum(axis=1)


def _one_family(K: int, nd: int, S0: float, c: ReachConfig) -> dict[str, np.ndarray]:
    fam = theory.theorem4_family(K, nd, S0)
    eY, ratio = (np.array(v, dtype=float) for v in zip(*itertools.product(c.eta_Y, c.ratios), strict=True))
    snaps = sorted({0} | set(np.round(np.geomspace(1, c.steps, c.points)).astype(int).tolist()))
    hist = train.train(fam, torch.tensor(eY), torch.tensor(eY * ratio), steps=c.steps, limit="population",
                       momentum=0.0, snapshot_steps=snaps)
    t = np.array(snaps, dtype=float)
    Z = theory.logits_from_attention(hist.attention, fam)
    q, cmn, l0 = int(fam.query[0]), int(fam.common()[0]), int(fam.distinct(0)[-1])
    z0 = Z[:, :, q, l0].numpy()
    ft = (hist.attention[:, :, 0, l0] / torch.linalg.vector_norm(hist.attention[:, :, 0], dim=-1)).numpy()
    ent = metrics.attention_entropy(hist.attention, fam).numpy()
    ss = sorted({0} | set(np.round(np.geomspace(1, c.sampled_steps, c.points)).astype(int).tolist()))
    smp = train.train(fam, torch.tensor(eY), torch.tensor(eY * ratio), steps=c.sampled_steps, limit="sampled", T=c.T,
                      batch=c.batch, momentum=0.0, seed=c.seed, snapshot_steps=ss)
    ent_s = metrics.attention_entropy(smp.attention, fam).numpy()
    n, exact = len(eY), [theory.integrate_symmetric(fam, y, z, t) for y, z in zip(eY, eY * ratio, strict=True)]
    P = theory.symmetric_family_weights(fam)[1]
    H = [_entropy(P, run.z_distinct) for run in exact]
    return {"log_chi_sampled": 2 * theory.logits_from_attention(smp.attention, fam)[:, :, q, l0].numpy().max(axis=0),
            "entropy_fall_sampled": (ent_s[0] - ent_s).max(axis=0),
            "log_chi_exact": np.array([2 * run.z_distinct[:, -1].max() for run in exact]),
            "entropy_fall_exact": np.array([h[0] - h.min() for h in H]),
            "common_fall_exact": np.array([-run.z_common[-1] for run in exact]),
            "K": np.full(n, K), "num_distinct": np.full(n, nd), "S0": np.full(n, S0), "eta_Y": eY,
            "eta_Z": eY * ratio, "log_chi": 2 * z0.max(axis=0), "entropy_fall": (ent[0] - ent).max(axis=0),
            "common_fall": -Z[-1, :, q, cmn].numpy(), "B": theory.growth_bound_from_logits(t, z0, ft)[-1],
            "admissible": ((c.S0_max >= S0) & (ratio <= 1.0)).astype(float)}


def run_reach(config: ReachConfig, progress: Progress | None = None) -> ReachResult:
    """Train every family of the search (one batched call over the rates per family, in the long-sequence limit and
    with sampled sequences) and integrate the exact Eqn 10 system at the same rates."""
    rows = []
    with one_thread():
        for fam in config.families():
            rows.append(_one_family(*fam, config))
            if progress is not None:
                progress(1)
    return ReachResult(config, **{k: np.concatenate([r[k] for r in rows]) for k in rows[0]})


def reach_table(r: ReachResult) -> dict[str, np.ndarray]:
    """The result's rows as columns (published with the figure)."""
    return {f.name: getattr(r, f.name) for f in dataclasses.fields(r) if f.name != "config"}


def best(r: ReachResult, admissible: bool = True) -> dict[str, float]:
    """The long-sequence run with the largest ``ln chi_l0`` (and, separately, the largest entropy fall, and both of the
    sampled runs) among the admissible runs (``admissible=False``: those outside the assumptions); ``scans``: how
    many of them reach both targets in either limit; ``nan`` when there is none."""
    keep = r.admissible == (1.0 if admissible else 0.0)
    if not keep.any():
        return {"log_chi": np.nan, "entropy_fall": np.nan, "log_chi_sampled": np.nan, "entropy_fall_sampled": np.nan,
                "scans": 0.0}
    i = int(np.flatnonzero(keep)[np.argmax(r.log_chi[keep])])
    c = r.config
    scans = (((r.log_chi >= c.log_chi_target) & (r.entropy_fall >= c.entropy_fall_target))
             | ((r.log_chi_sampled >= c.log_chi_target) & (r.entropy_fall_sampled >= c.entropy_fall_target))) & keep
    return {"log_chi": float(r.log_chi[i]), "entropy_fall": float(r.entropy_fall[keep].max()),
            "log_chi_sampled": float(r.log_chi_sampled[keep].max()),
            "entropy_fall_sampled": float(r.entropy_fall_sampled[keep].max()),
            "K": float(r.K[i]), "num_distinct": float(r.num_distinct[i]), "S0": float(r.S0[i]),
            "eta_Y": float(r.eta_Y[i]), "eta_Z": float(r.eta_Z[i]), "common_fall": float(r.common_fall[i]),
            "scans": float(scans.sum())}


def ceiling(r: ReachResult) -> np.ndarray:
    """``(R,)`` :func:`scansnap.theory.growth_ceiling` at each run's measured common-token fall: the most ``B_n`` the
    exact flow allows for it (``ln chi_l0 <= 2 x`` this)."""
    return np.array([theory.growth_ceiling(-d, s0, int(k)) for d, s0, k in zip(r.common_fall, r.S0, r.K, strict=True)])


def plot_reach(r: ReachResult) -> Figure:
    """(a) The largest ``ln chi_l0`` against the largest entropy fall of every trained run, inside the assumptions
    (filled) and outside (open), with the target; (b) the trained ``ln chi_l0`` against the exact Eqn 10 system's at
    the same rates and horizon."""
    figures.set_style()
    c = r.config
    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    for k, S0 in enumerate(c.S0s):
        keep = r.S0 == S0
        inside = c.S0_max >= S0
        ax[0].scatter(r.entropy_fall[keep], r.log_chi[keep], s=18, color=f"C{k}",
                      facecolors=None if inside else "none", label=f"S0 = {S0:g}" + ("" if inside else " (outside)"))
        ax[0].scatter(r.entropy_fall_sampled[keep], r.log_chi_sampled[keep], s=22, color=f"C{k}", marker="x")
        ax[1].scatter(r.log_chi_exact[keep], r.log_chi[keep], s=18, color=f"C{k}",
                      facecolors=None if inside else "none")
    for a in ax:
        a.axhline(c.log_chi_target, color="k", lw=0.8, ls="--")
    ax[0].axvline(c.entropy_fall_target, color="k", lw=0.8, ls="--")
    ax[0].set(xlabel="largest fall of the distinct-token entropy (nats)", ylabel="largest ln chi_l0 (trained)",
              title="(a) trained runs (x: sampled sequences);\na visible scan: upper right")  # the caption's letters
    ax[0].legend(fontsize="x-small")
    lim = max(float(r.log_chi_exact.max()), c.log_chi_target) * 1.05
    ax[1].plot([0, lim], [0, lim], "k-", lw=0.8)
    ax[1].axvline(c.log_chi_target, color="k", lw=0.8, ls="--")
    ax[1].set(xlabel="ln chi_l0 of the exact Eqn 10 system", ylabel="largest ln chi_l0 (trained)",
              title="(b) trained against the theory's own flow")
    fig.tight_layout()
    return fig


REACH = Experiment(
    id="ch6-reach", config=ReachConfig, result=ReachResult, run=run_reach,
    work=lambda c: len(c.families()),
    figures=(FigureSpec(
        id="fig-ch6-reach",
        caption="How far the trained attention scans in Theorem 4's setting: for every family and pair of rates "
                "searched, the largest growth ln chi of the dominant distinct token against the largest fall of the "
                "distinct-token entropy (dashed: the target of a visible scan), and the trained ln chi against the "
                "exact Eqn 10 system's at the same rates and horizon.",
        claims=("C25", "C26", "C34"), plot=plot_reach, table=reach_table),),
)

EXPERIMENTS = [REACH]
RULES: list = []
