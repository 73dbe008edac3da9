"""Chapter 4's check of Eqn 10 along training (C15 on training evidence).

:data:`EQN10` (``fig-ch4-eqn10``): along long-sequence training (the original decoder dynamics, for which Theorem 1
is an approximation), the exact velocity of ``Z`` (:func:`scansnap.theory.fates.population_zdot`) against Eqn 10
(:func:`scansnap.theory.fates.eqn10_zdot`) with ``gamma(t)`` of Lemma 6, and three disjoint classes trained to see
that ``Z`` never moves: C15 on **training-population** evidence, judged on the families that meet Assumption 2 (weak
overlap, ``eta_Y >> eta_Z``; :func:`scansnap.theory.overlaps.assumption2`) up to this book's horizon ``t = 2000``
(twenty times the authors' 100 SGD steps) in every profile but smoke. Its control is a velocity with the overlap
structure removed: the exact velocity with its key columns permuted within each query row (one seeded permutation
per family and checkpoint), compared with Eqn 10 the same way, and the least-moving judged family in place of the
disjoint classes. Families outside the assumption
("one common token", Syn-Small) are run and shown beside, not judged. The speed of Eqn 10 (exact / Eqn 10 with
Theorem 1's ``gamma`` and ``beta``) is a criterion that keeps C15 below verified when it is off by more than 1.25x
(not required: it carries Theorem 1's ``beta``, which C9 judges). The statements against the exact gradient (derivation
evidence for C15-C18) are in :mod:`scansnap.experiments.ch04_identities`.
"""

from __future__ import annotations

from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure

from scansnap import data, figures, train
from scansnap._checks import check_choice
from scansnap.experiments.base import Experiment, FigureSpec, Progress
from scansnap.params import Each, Int, Positive, param
from scansnap.results import Config
from scansnap.theory.decoder import gamma, gram, theorem1_coefficients
from scansnap.theory.families import example_families
from scansnap.theory.fates import class_gradients, eqn10_zdot, population_zdot, span_coefficients, unit_scores
from scansnap.theory.overlaps import ASSUMPTION2_MAX_NORM, ASSUMPTION2_MIN_RATE_RATIO, assumption2
from scansnap.verdicts import Rule, Verdict, at_least, at_most


@dataclass(frozen=True)
class Eqn10Config(Config):
    """Attributes:
        families: families of :func:`~scansnap.theory.families.example_families` trained in the limit (those that
            meet Assumption 2 at these rates are judged, the others shown beside).
        checkpoints: steps ``t`` at which the exact velocity is compared with Eqn 10 (one run per checkpoint).
        eta_Y, eta_Z: learning rates (gradient descent, zero initialization: the theorem's setting).
        disjoint_steps: steps of the disjoint-classes run; decomposition_step: the step at which the measured
            ``g_n`` of "weak overlap" is decomposed on ``F``.
    """

    families: tuple[str, ...] = ("weak overlap", "weak overlap, asymmetric", "one common token", "Syn-Small")
    checkpoints: tuple[int, ...] = param((1, 2, 3, 5, 10, 20, 30, 50, 100, 200, 300, 500, 1000, 2000),
                                         Each(Int(low=1), increasing=True))
    eta_Y: float = param(1.0, Positive())
    eta_Z: float = param(0.1, Positive())
    disjoint_steps: int = param(200, Int(low=1))
    decomposition_step: int = param(10, Int(low=1))
    PRESETS = {"smoke": dict(checkpoints=(1, 3, 10), disjoint_steps=20), "book": {}, "paper": {}}
    GATED = ("checkpoints",)  # the horizon: the measured error grows with t (C15's worst number is at the last step)

    def validate(self) -> None:
        for fam in self.families:
            check_choice("families", fam, tuple(example_families()))

    def judged(self) -> tuple[str, ...]:
        """The families that meet Assumption 2 at ``eta_Y``, ``eta_Z`` (:func:`~scansnap.theory.overlaps.assumption2`):
        C15 is judged on them."""
        fams = example_families()
        return tuple(f for f in self.families if assumption2(fams[f], self.eta_Y, self.eta_Z).meets)

    def protocol(self) -> str:
        return (f"{', '.join(self.families)} (judged: {', '.join(self.judged()) or 'none'}): gradient descent in "
                f"the long-sequence limit, eta_Y = {self.eta_Y:g}, "
                f"eta_Z = {self.eta_Z:g}, zero initialization; exact velocity (population_zdot) vs Eqn 10 with "
                f"gamma(t) of Lemma 6 at steps {', '.join(map(str, self.checkpoints))}; 'disjoint' trained "
                f"{self.disjoint_steps} steps")


@dataclass(frozen=True)
class Decomposition:
    """The measured ``g_0`` of "weak overlap" at one step, on ``f~_0`` and ``f~_1``, against Theorem 1."""

    step: int
    E01: float
    off_span: float
    gamma: float
    measured_self: float
    theorem_self: float
    measured_cross: float
    theorem_cross: float
    beta01: float


@dataclass(frozen=True)
class Eqn10Training:
    """C15 on training evidence, over the checkpoints of the families that meet Assumption 2 (nan where there is no
    velocity, or no such family).

    Attributes:
        min_cosine: smallest cosine between the exact velocity of ``Z`` and Eqn 10's.
        max_measured_error: largest relative error of Eqn 10's form with the measured ``g_n``'s coefficients.
        disjoint_relative_z: largest ``|z|`` of the disjoint classes over the largest ``|z|`` the judged families
            reached (0/0 = nan: nothing moved).
        magnitude_factor: largest factor between the exact speed and Eqn 10's with Theorem 1's ``gamma(t)`` and
            ``beta`` (the larger of exact / Eqn 10 and its inverse).
        judged_families: how many families were judged (context); max_overlap: their largest ``||E||_2`` at the
            start (context).
    """

    min_cosine: float
    max_measured_error: float
    disjoint_relative_z: float
    magnitude_factor: float
    judged_families: int
    max_overlap: float


@dataclass(frozen=True)
class Eqn10Result:
    """Eqn 10 against the exact velocity; arrays are ``(families, checkpoints)`` unless stated.

    Attributes:
        cosine: cosine between the exact velocity of ``Z`` (query rows) and Eqn 10's.
        scale: exact / Eqn 10 (the projection ``<exact, eqn10> / |eqn10|^2``): the speed, which carries
            Theorem 1's ``beta`` (C9's part).
        rel_err_theorem1, rel_err_measured: relative error of Eqn 10 with Theorem 1's ``beta``, and with the
            coefficients of the measured ``g_n`` on ``F``; g_off_span: the part of ``g_n`` outside ``span F``.
        overlap_max, overlap_norm: ``(families,)`` largest ``E_nn'`` and ``||E||_2`` at ``Z = 0`` (Assumption 2's
            test); overlap_norm_end: ``(families,)`` ``||E||_2`` at the last checkpoint.
        max_abs_z: ``(families,)`` the largest ``|z|`` each family reached at the checkpoints.
        disjoint_max_abs_z, disjoint_final_loss: the disjoint-classes run.
        decomposition: :class:`Decomposition`.
        control: :class:`Eqn10Training` of the rule's control (the velocity with its key columns permuted within each
            query row; the least-moving judged family in place of the disjoint classes).
    """

    config: Eqn10Config
    cosine: np.ndarray
    scale: np.ndarray
    rel_err_theorem1: np.ndarray
    rel_err_measured: np.ndarray
    g_off_span: np.ndarray
    overlap_max: np.ndarray
    overlap_norm: np.ndarray
    overlap_norm_end: np.ndarray
    max_abs_z: np.ndarray
    disjoint_max_abs_z: float
    disjoint_final_loss: float
    decomposition: Decomposition
    control: Eqn10Training


def _trained(classes: data.SequenceClasses, c: Eqn10Config, steps: int, progress: Progress | None):
    h = train.train(classes, c.eta_Y, c.eta_Z, steps=steps, momentum=0.0, init="zero", seed=0, limit="population",
                    snapshot_steps=[steps], progress=progress)
    return h.Y[0], h.Z[0], h


def _compare(classes: data.SequenceClasses, Y: torch.Tensor, Z: torch.Tensor, t: int, c: Eqn10Config,
             perm: torch.Tensor | None = None) -> list[float]:
    """cosine, exact / Eqn 10, relative errors with Theorem 1's and the measured coefficients, g off span F;
    ``perm`` ``(M,)``: the exact velocity's key columns permuted first (the control)."""
    rows = torch.unique(classes.query)
    actual = population_zdot(classes, Y, Z, c.eta_Z)[rows]
    actual = (actual if perm is None else actual[:, perm]).flatten()
    pred = eqn10_zdot(classes, Z, gamma(float(t), classes.M, classes.K, c.eta_Y), c.eta_Z)[rows].flatten()
    A, off = span_coefficients(unit_scores(classes, Z), class_gradients(classes, Y, Z))
    fit = eqn10_zdot(classes, Z, 1.0, c.eta_Z, beta=-A)[rows].flatten()
    norm = actual.norm()
    return [float(x) for x in (actual @ pred / (norm * pred.norm()), actual @ pred / (pred @ pred),
                               (actual - pred).norm() / norm, (actual - fit).norm() / norm, off)]


def _factor(scale: np.ndarray) -> float:
    """The largest factor between two speeds, ``max(|s|, 1 / |s|)`` over ``scale``."""
    s = np.abs(scale)
    with np.errstate(divide="ignore"):
        return float(np.maximum(s, 1 / s).max())


def _training(c: Eqn10Config, cosine: np.ndarray, scale: np.ndarray, err: np.ndarray, still: float,
              max_abs_z: np.ndarray, overlap: np.ndarray) -> Eqn10Training:
    """:class:`Eqn10Training` over the judged families (:meth:`Eqn10Config.judged`) of ``(families, checkpoints)``
    arrays; ``still``: the largest ``|z|`` of the classes that should not move."""
    judged = [c.families.index(f) for f in c.judged()]
    if not judged:
        return Eqn10Training(*(float("nan"),) * 4, 0, float("nan"))
    moving = float(max_abs_z[judged].max())
    return Eqn10Training(float(cosine[judged].min()), float(err[judged].max()),
                         still / moving if moving > 0 else float("nan"), _factor(scale[judged]), len(judged),
                         float(overlap[judged].max()))


def eqn10_measures(r: Eqn10Result) -> Eqn10Training:
    """:class:`Eqn10Training` over the families of ``r`` that meet Assumption 2 (:meth:`Eqn10Config.judged`)."""
    return _training(r.config, r.cosine, r.scale, r.rel_err_measured, r.disjoint_max_abs_z, r.max_abs_z,
                     r.overlap_norm)


def run_eqn10(config: Eqn10Config, progress: Progress | None = None) -> Eqn10Result:
    c, fams = config, example_families()
    cols = np.zeros((5, len(c.families), len(c.checkpoints)))  # cosine, scale, theorem-1 err, measured err, off
    overlaps = np.zeros((4, len(c.families)))  # E_max, ||E|| at the start, ||E|| at the last checkpoint, max |z|
    null = np.zeros_like(cols)  # the control: the exact velocity's key columns permuted
    for i, name in enumerate(c.families):
        classes = fams[name]
        a2 = assumption2(classes, c.eta_Y, c.eta_Z)
        for j, t in enumerate(c.checkpoints):
            Y, Z, _ = _trained(classes, c, t, progress)
            cols[:, i, j] = _compare(classes, Y, Z, t, c)
            perm = torch.randperm(classes.M, generator=torch.Generator().manual_seed(1000 * i + j))
            null[:, i, j] = _compare(classes, Y, Z, t, c, perm)
            overlaps[3, i] = max(overlaps[3, i], float(Z.abs().max()))
        overlaps[:3, i] = a2.E_max, a2.E_norm, float(np.linalg.norm(gram(unit_scores(classes, Z).mT).numpy(), 2))
    _, Zd, hd = _trained(fams["disjoint"], c, c.disjoint_steps, progress)
    weak, t = fams["weak overlap"], c.decomposition_step
    Y, Z, _ = _trained(weak, c, t, progress)
    ft = unit_scores(weak, Z)
    A, off = span_coefficients(ft, class_gradients(weak, Y, Z))
    iota, beta = theorem1_coefficients(gram(ft.mT), weak.M)
    gam = float(gamma(float(t), weak.M, weak.K, c.eta_Y))
    dec = Decomposition(t, float(gram(ft.mT)[0, 1]), float(off), gam, float(A[0, 0]), gam * float(iota[0]),
                        float(A[0, 1]), -gam * float(beta[0, 1]), float(beta[0, 1]))
    judged = [c.families.index(f) for f in c.judged()]
    still = float(overlaps[3, judged].min()) if judged else float("nan")  # an overlapping family: it moves
    control = _training(c, null[0], null[1], null[3], still, overlaps[3], overlaps[1])
    return Eqn10Result(c, *cols, *overlaps, float(Zd.abs().max()), float(hd.loss[0, -1]), dec, control)


RULE_C15_TRAINING = Rule("C15", "training-population", Eqn10Training, (
    at_least("min_cosine", "smallest cosine between the exact velocity of Z and Eqn 10's along training, over the "
             "families that meet Assumption 2", 0.99, 0.9),
    at_most("max_measured_error", "largest relative error of Eqn 10's form with the coefficients of the measured "
            "g_n on F (the attention moves only through the overlaps), same families", 0.05, 0.25),
    at_most("disjoint_relative_z", "largest |z| after training disjoint classes over the largest |z| the judged "
            "families reached (no overlap, no motion)", 1e-10, 1e-7),
    at_most("magnitude_factor", "largest factor between the exact speed and Eqn 10's with Theorem 1's gamma(t) and "
            "beta (max of ratio and its inverse), same families", 1.25, 2.0, required=False),
), alternative="a velocity of Z off Eqn 10's direction and form (cosine and the measured-coefficient fit far from "
               "1 and 0), or logits that move without overlap (disjoint classes moving like overlapping ones)",
    control="a velocity with the overlap structure removed: the exact velocity of Z with its key columns permuted "
            "within each query row (one seeded permutation per family and checkpoint), compared with Eqn 10 the same "
            "way; for the no-motion criterion, the least-moving judged family (which overlaps) in place of the "
            "disjoint classes",
    premise="Theorem 1's decoder: training runs the original decoder update (Eqn 7), which Theorem 1 (exact for "
            "Lemma 3's modified update) describes only up to O(||E||) and on which g_n can leave span F",
    note=f"Judged only on the families that meet Assumption 2 as scansnap.theory.overlaps.assumption2 tests it "
         f"(||E||_2 <= {ASSUMPTION2_MAX_NORM:g} at Z = 0, eta_Y / eta_Z >= {ASSUMPTION2_MIN_RATE_RATIO:g}); families "
         "outside it are shown beside, not judged. Direction (cosine), Eqn 10's structure (any g_n in span F, "
         "measured coefficients) and no motion without overlap (relative to the motion of the judged families: "
         "1e-10 is round-off, 1e-7 a trace) are required. The speed of Eqn 10 carries Theorem 1's beta, which C9 "
         "judges (its rules report beta_error): off by more than 1.25x it keeps C15 below verified without "
         "refuting its structure (not required). Judged up to this book's horizon t = 2000 (twenty times the "
         "authors' 100 SGD steps).")


def eqn10_verdicts(r: Eqn10Result) -> list[Verdict]:
    c, judged = r.config, r.config.judged()
    factor = np.maximum(r.scale, 1 / r.scale)

    def family(i: int, f: str) -> str:
        where = "meets Assumption 2, judged" if f in judged else "outside Assumption 2, not judged"
        return (f"{f} (||E||_2 = {r.overlap_norm[i]:.3f} at the start, {r.overlap_norm_end[i]:.3f} at the end; "
                f"{where}): cosine >= {r.cosine[i].min():.4f}, measured error <= {r.rel_err_measured[i].max():.3f}")

    speed = "; ".join(f"{f} {r.scale[i].min():.3f}..{r.scale[i].max():.3f} (factor <= {factor[i].max():.2f})"
                      for i, f in enumerate(c.families))
    return [RULE_C15_TRAINING.judge(
        eqn10_measures(r), c, control=r.control, link=EQN10.link(),
        details=f"by family: {'; '.join(family(i, f) for i, f in enumerate(c.families))}; g_n off span F up to "
                f"{r.g_off_span.max():.1e}. Speed, exact / Eqn 10 with Theorem 1's gamma(t) and beta (C9's beta; "
                f"magnitude_factor above): {speed}")]


def eqn10_table(r: Eqn10Result) -> dict[str, np.ndarray]:
    c = r.config
    F, C = r.cosine.shape
    judged = np.array([f in c.judged() for f in c.families])
    return {"family": np.repeat(c.families, C), "step": np.tile(c.checkpoints, F), "cosine": r.cosine.ravel(),
            "scale": r.scale.ravel(), "rel_err_theorem1": r.rel_err_theorem1.ravel(),
            "rel_err_measured_coeffs": r.rel_err_measured.ravel(), "g_off_span": r.g_off_span.ravel(),
            "E_norm_start": np.repeat(r.overlap_norm, C), "meets_assumption2": np.repeat(judged, C)}


def plot_eqn10(r: Eqn10Result) -> Figure:
    figures.set_style()
    fig, axes = plt.subplots(1, 3, figsize=(11, 4.2), layout="constrained")
    steps, judged = r.config.checkpoints, r.config.judged()
    for i, name in enumerate(r.config.families):
        inside = name in judged
        kw = dict(marker="o", ms=3, color=f"C{i}", ls="-" if inside else "--",
                  label=f"{name}, $\\|E\\|_2$ = {r.overlap_norm[i]:.2f}" + ("" if inside else " (outside A2)"))
        axes[0].plot(steps, r.cosine[i], **kw)
        axes[1].plot(steps, r.scale[i], **kw)
        axes[2].plot(steps, r.rel_err_measured[i], **kw)
    axes[0].set(xscale="log", xlabel="step", ylabel="cosine", title="direction: exact vs Eqn 10")
    axes[1].axhline(1, color="0.5", lw=0.6)
    axes[1].set(xscale="log", yscale="log", xlabel="step", ylabel="exact / Eqn 10", title="magnitude (projection)")
    axes[2].set(xscale="log", yscale="log", xlabel="step", ylabel="relative error",
                title="Eqn 10 with the measured\n$g_n$ coefficients")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=2, fontsize="small")
    return fig


EQN10 = Experiment(
    id="ch4-eqn10", config=Eqn10Config, result=Eqn10Result, run=run_eqn10, verdicts=eqn10_verdicts,
    work=lambda c: len(c.families) * sum(c.checkpoints) + c.disjoint_steps + c.decomposition_step,
    figures=(FigureSpec(
        id="fig-ch4-eqn10",
        caption="Eqn 10 against the exact population gradient of Z along long-sequence training (gradient descent, "
                "eta_Y = 1, eta_Z = 0.1): cosine and magnitude ratio with Theorem 1's coefficients, and the relative "
                "error of Eqn 10 with the coefficients of the measured back-propagated gradient. Solid: families that "
                "meet Assumption 2 (judged under C15); dashed: outside it (shown, not judged).",
        claims=("C15",), plot=plot_eqn10, table=eqn10_table),),
)

EXPERIMENTS = [EQN10]
RULES = [RULE_C15_TRAINING]
