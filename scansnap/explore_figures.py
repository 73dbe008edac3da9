"""The book's four explorable figures (:class:`scansnap.explore.Explorable`), each made from the result its chapter
already computes for the static figure (no new training):

* :func:`phase_explorable` (Chapter 6, Theorem 4, Figures 3 and 9): sliders for ``eta_Y`` and ``eta_Z`` (log
  scale, half-octave steps spanning the chapter's grids): Eqn 14's growth-factor bound ``exp(2 B_n)`` in Figure 3's
  family and ``B_n`` in the trained model's family, with ``t0 = K ln M / eta_Y`` marked and, where the trained grid
  has the pair, the trained model's ``B_n`` beside the prediction.
* :func:`synsmall_explorable` (Chapter 5, Figure 4): a training-step slider and a choice of ``eta_Y / eta_Z``:
  the attention of class 1 over its common and distinct tokens at that step.
* :func:`synmedium_explorable` (Chapter 7, Figure 6): a choice of the number of queries and of ``eta_Z``: the
  entropy against ``eta_Y / eta_Z``, every seed's value on hover, the mean with its 95% t interval.
* :func:`freeze_explorable` (Chapter 8, Figure 7): a checkpoint slider over the stored attention maps of the first
  layer (held-out or training window).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from scansnap import data, stats, theory
from scansnap.explore import Control, Explorable, rounded

if TYPE_CHECKING:  # the result types only: a page that shows one chapter's explorable runs no other chapter's code
    from scansnap.experiments.ch05_synsmall import Fig4Result
    from scansnap.experiments.ch06_figures import Fig3Result, Fig9Result
    from scansnap.experiments.ch06_trained import TrainedResult
    from scansnap.experiments.ch07_syn_medium import SweepResult
    from scansnap.experiments.ch08_wikitext import FreezeResult

__all__ = ["freeze_explorable", "log_rates", "phase_explorable", "synmedium_explorable", "synsmall_explorable"]

_GREY = "rgba(120, 120, 120, 0.35)"


def log_rates(values: np.ndarray, per_octave: int = 2, anchor: float | None = None) -> np.ndarray:
    """The slider positions of Figures 3 and 9's explorable: the log-spaced grid ``anchor 2^(k / per_octave)``
    (integer ``k``) from the last point at or below the smallest of ``values`` to the first at or above the
    largest, so that equal steps of the slider are equal factors (half an octave: 1.41) and its labels say what
    they are. ``anchor`` (default: the smallest value) is a position: the trained grid's rate, so every rate of
    that grid (``anchor`` times a power of 2) is one. Shape ``(P,)``, increasing."""
    v = np.asarray(values, dtype=float).ravel()
    if v.size == 0 or not (v > 0).all() or not np.isfinite(v).all():
        raise ValueError(f"values: must be positive, finite and not empty; got {v}")
    a = float(v.min() if anchor is None else anchor)
    if not (math.isfinite(a) and a > 0):
        raise ValueError(f"anchor: must be a finite rate > 0; got {anchor!r}")
    lo = math.floor(per_octave * math.log2(v.min() / a) + 1e-9)
    hi = math.ceil(per_octave * math.log2(v.max() / a) - 1e-9)
    return a * 2.0 ** (np.arange(lo, hi + 1) / per_octave)


def _match(eta_Y: np.ndarray, eta_Z: np.ndarray, y: float, z: float) -> int | None:
    hit = np.flatnonzero(np.isclose(eta_Y, y, rtol=1e-9) & np.isclose(eta_Z, z, rtol=1e-9))
    return int(hit[0]) if hit.size else None


def phase_explorable(fig3: Fig3Result, fig9: Fig9Result, trained: TrainedResult, *, points: int = 80,
                     per_octave: int = 2) -> Explorable:
    """Theorem 4's explorable (Figures 3 and 9, Chapter 6), anchor ``explore-fig3``.

    Two sliders, ``eta_Y`` and ``eta_Z`` (:func:`log_rates` over the rates of ``fig3``, ``fig9`` and the trained
    grid: equal half-octave steps through every rate of the trained grid), first at the positions nearest Figure
    3's first pair. Left: Eqn 14's
    ``chi-bar = exp(2 B_n)`` against ``t`` in Figure 3's family (derived constants ``a``, ``b``; ``points``
    log-spaced steps over Figure 3's horizon), ``t0`` marked, the curves of Figure 3's own rates in grey.
    Right: ``B_n`` in the trained model's family: Eqn 14 (dashed) and, where the pair is on the trained grid,
    the trained model's ``B_n`` in the long-sequence limit (solid). States: ``P_Y * P_Z``.
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    pop, K3, Kt = trained.population, fig3.config.K, trained.config.K
    rates_Y = log_rates(np.concatenate([fig3.config.eta_Y, fig9.eta_Y, pop.eta_Y]), per_octave, pop.eta_Y.min())
    rates_Z = log_rates(np.concatenate([[fig3.config.eta_Z], fig9.eta_Z, pop.eta_Z]), per_octave, pop.eta_Z.min())
    t3 = np.geomspace(fig3.t[0], fig3.t[-1], points)
    t_run = pop.t[pop.t >= 1]
    keep = np.flatnonzero(pop.t >= 1)[np.unique(np.minimum(
        np.searchsorted(t_run, np.geomspace(t_run[0], t_run[-1], points)), len(t_run) - 1))]  # <= points snapshots
    tt = np.geomspace(1.0, float(t_run[-1]), points)
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1, subplot_titles=(
        f"Figure 3's family (K = {K3}, M = {fig3.M}):<br>Eqn 14", f"trained family (K = {Kt}, M = {trained.M})"))
    for i, eY in enumerate(fig3.config.eta_Y):
        fig.add_trace(go.Scatter(x=rounded(fig3.t[:: max(1, len(fig3.t) // points)]),
                                 y=rounded(np.exp(2 * fig3.B[i, :: max(1, len(fig3.t) // points)])),
                                 mode="lines", line=dict(color=_GREY, width=1), name="Figure 3's rates (eta_Z = "
                                 f"{fig3.config.eta_Z:g}, eta_Y = {', '.join(f'{v:g}' for v in fig3.config.eta_Y)})",
                                 legendgroup="fig3", showlegend=i == 0,
                                 hovertemplate=f"Figure 3, eta_Y = {eY:g}: " + "%{y:.4g}<extra></extra>"), 1, 1)
    first = len(fig.data)
    fig.add_trace(go.Scatter(x=rounded(t3), mode="lines", line=dict(color="#1f77b4", width=2.5),
                             name="exp(2 B_n), Eqn 14",
                             hovertemplate="t = %{x:.3g}<br>exp(2 B_n) = %{y:.4g}<extra></extra>"), 1, 1)
    fig.add_trace(go.Scatter(mode="markers", marker=dict(symbol="triangle-up", size=12, color="#d62728"),
                             name="t0 = K ln M / eta_Y", hovertemplate="t0 = %{x:.4g}<extra></extra>"), 1, 1)
    fig.add_trace(go.Scatter(x=rounded(tt), mode="lines", line=dict(color="#ff7f0e", width=2.5, dash="dash"),
                             name="B_n, Eqn 14 (trained family)",
                             hovertemplate="t = %{x:.3g}<br>Eqn 14: B_n = %{y:.4g}<extra></extra>"), 1, 2)
    fig.add_trace(go.Scatter(x=rounded(pop.t[keep]), mode="lines", line=dict(color="#2ca02c", width=2.5),
                             name="B_n, trained (population)",
                             hovertemplate="t = %{x:.3g}<br>trained: B_n = %{y:.4g}<extra></extra>"), 1, 2)
    fig.add_trace(go.Scatter(mode="markers", marker=dict(symbol="triangle-up", size=12, color="#d62728"),
                             showlegend=False, hovertemplate="t0 = %{x:.4g}<extra></extra>"), 1, 2)
    states = []
    for eY in rates_Y:
        for eZ in rates_Z:
            B3 = theory.eqn14_at(t3, fig3.M, K3, eY, eZ, fig3.a, fig3.b)
            t03 = theory.decoder.transition_time(fig3.M, K3, eY)
            Bt = theory.eqn14_at(tt, trained.M, Kt, eY, eZ, trained.a, trained.b)
            t0t = theory.decoder.transition_time(trained.M, Kt, eY)
            c = _match(pop.eta_Y, pop.eta_Z, eY, eZ)
            run_y = [] if c is None else rounded(pop.B[keep, c])  # x: the run's snapshots, set once
            t0_B = float(theory.eqn14_at(t0t, trained.M, Kt, eY, eZ, trained.a, trained.b))
            shown = t0t <= tt[-1]
            title = (f"eta_Y = {eY:.3g}, eta_Z = {eZ:.3g}: t0 = {t03:.3g} (Figure 3's family), {t0t:.3g} (trained "
                     f"family);<br>" + ("trained run at this pair" if c is not None else "no trained run at this pair"))
            states.append({"traces": [first + k for k in range(5)], "data": {
                "x": [None, rounded([t03]), None, None, rounded([t0t]) if shown else []],
                "y": [rounded(np.exp(2 * B3)),
                      rounded(np.exp(2 * np.atleast_1d(theory.eqn14_at(t03, fig3.M, K3, eY, eZ, fig3.a, fig3.b)))),
                      rounded(Bt), run_y, rounded([t0_B]) if shown else []]},
                "layout": {"title.text": title}})
    iY = int(np.argmin(np.abs(np.log(rates_Y / fig3.config.eta_Y[0]))))
    iZ = int(np.argmin(np.abs(np.log(rates_Z / fig3.config.eta_Z))))
    step = f"log scale, x{2 ** (1 / per_octave):.3g} a step"
    controls = (Control("eta_Y", f"eta_Y ({step})", tuple(f"{v:.3g}" for v in rates_Y), "slider", iY),
                Control("eta_Z", f"eta_Z ({step})", tuple(f"{v:.3g}" for v in rates_Z), "slider", iZ))
    _draw(fig, states[iY * len(rates_Z) + iZ])
    fig.update_xaxes(type="log", title_text="step t")
    fig.update_yaxes(type="log", title_text="growth-factor bound exp(2 B_n)", row=1, col=1)
    fig.update_yaxes(title_text="B_n", row=1, col=2)
    fig.update_layout(height=400, title=dict(font=dict(size=13)), template="plotly_white")
    return Explorable("explore-fig3", fig, controls, tuple(states), legend_px=45)


def _draw(fig, state: dict) -> None:
    """Set ``fig``'s traces and layout to ``state`` (the first state, drawn before any control moves)."""
    for k, t in enumerate(state["traces"]):
        fig.data[t].update({attr: values[k] for attr, values in state["data"].items() if values[k] is not None})
    for key, value in state.get("layout", {}).items():
        fig.update_layout({key: value})


def synsmall_explorable(r: Fig4Result) -> Explorable:
    """Figure 4's explorable (Syn-Small, Chapter 5), anchor ``explore-fig4``: a choice of ``eta_Y / eta_Z`` and a
    training-step slider. Left: class 1's attention ``f_1`` over its common tokens (0-9) and distinct tokens
    (10-19, increasing ``P``) at that step, mean over seeds (error bars: the seeds' range). Right: the entropy over
    distinct tokens against the step (mean over seeds), one line per ratio, the chosen step marked. The result
    stores class 1's attention only (the class the paper's figure shows; the two classes are symmetric in law).
    States: ``R * (steps + 1)``."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    runs = r.runs
    R, S, steps1, _ = runs.attention.shape
    att, ent = runs.attention, runs.entropy  # (R, S, steps + 1, 20), (R, S, steps + 1)
    mean, lo, hi = att.mean(1), att.min(1), att.max(1)
    fig = make_subplots(rows=1, cols=2, column_widths=[0.58, 0.42], horizontal_spacing=0.1, subplot_titles=(
        "class 1's attention f_1<br>over its tokens", "entropy of the attention<br>over distinct tokens"))
    classes = data.syn_small()  # class 1's support: common tokens 0-9, distinct 10-19
    common, distinct = classes.common().numpy(), classes.distinct(0).numpy()
    for name, toks, color in (("common tokens (0-9)", common, "#7f7f7f"), ("distinct tokens (10-19)", distinct,
                                                                            "#1f77b4")):
        fig.add_trace(go.Bar(x=toks.tolist(), name=name, marker_color=color,
                             hovertemplate="token %{x}: %{y:.4f}<extra>" + name + "</extra>"), 1, 1)
    for i, v in enumerate(runs.values):
        fig.add_trace(go.Scatter(x=list(range(steps1)), y=rounded(ent[i].mean(0)), mode="lines",
                                 line=dict(color=f"hsl({200 + 40 * i}, 60%, {30 + 8 * i}%)"),
                                 name=f"eta_Y/eta_Z = {v:g}", legendgroup="entropy",
                                 hovertemplate="step %{x}: %{y:.4f} nats<extra>ratio " + f"{v:g}</extra>"), 1, 2)
    fig.add_trace(go.Scatter(mode="markers", marker=dict(size=11, color="#d62728"), name="chosen step",
                             hovertemplate="step %{x}: %{y:.4f} nats<extra></extra>"), 1, 2)
    marker = len(fig.data) - 1
    states = []
    for i, v in enumerate(runs.values):
        for s in range(steps1):
            bars = []
            for toks in (common, distinct):
                m = mean[i, s, toks]
                bars.append((rounded(m, 3), dict(type="data", symmetric=False, array=rounded(hi[i, s, toks] - m, 2),
                                                 arrayminus=rounded(m - lo[i, s, toks], 2), thickness=1)))
            states.append({"traces": [0, 1, marker], "data": {
                "y": [bars[0][0], bars[1][0], rounded([ent[i, :, s].mean()])],
                "x": [common.tolist(), distinct.tolist(), [s]],
                "error_y": [bars[0][1], bars[1][1], None]},
                "layout": {"title.text": f"eta_Y/eta_Z = {v:g}, step {s}: attention on the common tokens "
                                         f"{float(runs.common_mass[i, :, s].mean()):.3f},<br>distinct entropy "
                                         f"{float(ent[i, :, s].mean()):.3f} nats (mean over {S} seeds)"}})
    controls = (Control("ratio", "eta_Y / eta_Z", tuple(f"{v:g}" for v in runs.values), "menu"),
                Control("step", "step", tuple(str(s) for s in range(steps1)), "slider"))
    _draw(fig, states[0])
    top = float(hi.max())
    fig.update_yaxes(range=[0, 1.05 * top], title_text="attention", row=1, col=1)
    fig.update_xaxes(title_text="token", dtick=1, row=1, col=1)
    fig.update_xaxes(title_text="step", row=1, col=2)
    fig.update_yaxes(title_text="entropy (nats)", row=1, col=2)
    fig.update_layout(height=380, title=dict(font=dict(size=13)), template="plotly_white", bargap=0.15)
    return Explorable("explore-fig4", fig, controls, tuple(states), legend_px=95, min_px=640)


def synmedium_explorable(r: SweepResult, level: float = 0.95) -> Explorable:
    """Figure 6's explorable (Syn-Medium, Chapter 7), anchor ``explore-fig6``: a choice of the number of queries
    and of ``eta_Z``; the final entropy over distinct tokens against ``eta_Y / eta_Z``: every seed's value (points,
    the seed on hover), the mean with its ``level`` t interval over seeds (:func:`scansnap.stats.t_interval`), and
    the mean at step 0 (dotted). States: ``len(num_query) * len(eta_Z)``."""
    import plotly.graph_objects as go

    c = r.config
    ratios = np.asarray(c.ratio, dtype=float)
    fig = go.Figure()
    fig.add_trace(go.Scatter(mode="markers", name="each seed", marker=dict(size=7, color="rgba(31,119,180,0.45)"),
                             hovertemplate="seed %{customdata}: entropy %{y:.4f}<br>eta_Y/eta_Z = %{x:g}"
                                           "<extra></extra>"))
    fig.add_trace(go.Scatter(mode="lines+markers", name=f"mean, {level:.0%} t interval over seeds",
                             line=dict(color="#d62728", width=2.5), marker=dict(size=9),
                             hovertemplate="mean %{y:.4f}<br>eta_Y/eta_Z = %{x:g}<extra></extra>"))
    fig.add_trace(go.Scatter(mode="lines", name="mean at step 0", line=dict(color="#7f7f7f", dash="dot"),
                             hovertemplate="step 0: %{y:.4f}<extra></extra>"))
    states, seeds = [], np.asarray(c.seeds)
    lo_all, hi_all = np.inf, -np.inf
    for run in r.runs:
        for i, z in enumerate(c.eta_Z):
            e = run.entropy[i]  # (nR, nS)
            iv = np.array([stats.t_interval(e[j], level) for j in range(len(ratios))])  # (nR, 3)
            lo_all, hi_all = min(lo_all, np.nanmin(e)), max(hi_all, np.nanmax(e))
            states.append({"traces": [0, 1, 2], "data": {
                "x": [np.repeat(ratios, len(seeds)).tolist(), ratios.tolist(), ratios.tolist()],
                "y": [rounded(e.ravel(), 5), rounded(iv[:, 0], 5), rounded(run.entropy_init[i].mean(1), 5)],
                "customdata": [np.tile(seeds, len(ratios)).tolist(), None, None],
                "error_y": [None, dict(type="data", symmetric=False, array=rounded(iv[:, 2] - iv[:, 0]),
                                       arrayminus=rounded(iv[:, 0] - iv[:, 1]), thickness=1.5, width=6), None]},
                "layout": {"title.text": f"q = {run.num_query} queries (K = {2 * run.num_query}), eta_Z = {z:g}:<br>"
                                         f"entropy after {c.steps} steps, {len(seeds)} seeds"}})
    controls = (Control("num_query", "queries q", tuple(str(run.num_query) for run in r.runs), "menu"),
                Control("eta_Z", "eta_Z", tuple(f"{z:g}" for z in c.eta_Z), "menu"))
    _draw(fig, states[0])
    fig.update_xaxes(type="log", tickvals=ratios.tolist(), ticktext=[f"{v:g}" for v in ratios],
                     title_text="eta_Y / eta_Z")
    fig.update_yaxes(title_text="entropy of c_n over distinct tokens (nats)")
    fig.update_layout(height=380, title=dict(font=dict(size=13)), template="plotly_white")
    return Explorable("explore-fig6", fig, controls, tuple(states), legend_px=40)


def _causal_rows(m: np.ndarray, decimals: int = 3) -> list[list[float]]:
    """A map ``(T, T)`` as rows rounded to ``decimals``; a causal map (nothing above the diagonal) as its lower
    triangle only, row ``i`` of length ``i + 1`` (Plotly leaves the rest of a short heatmap row blank)."""
    a = np.round(np.nan_to_num(np.asarray(m, dtype=np.float64)), decimals) + 0.0
    if np.triu(a, 1).any():
        return a.tolist()
    return [a[i, : i + 1].tolist() for i in range(a.shape[0])]


def freeze_explorable(r: FreezeResult, seed: int = 0) -> Explorable:
    """Figure 7's explorable (WikiText-2, Chapter 8), anchor ``explore-fig7``: a choice of window (held-out or
    training) and a checkpoint slider over the first layer's stored attention maps of run ``seed`` (``(C, T, T)``:
    query rows, key columns, causal), with the held-out attention entropy of every run against the step and the
    chosen checkpoint marked. States: ``2 * C``."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    run = r.runs[seed]
    steps = np.asarray(run.steps)
    windows = (("held-out window", run.probe_maps, r.probe_words), ("training window", run.train_maps, r.train_words))
    top = float(max(np.nanmax(run.probe_maps), np.nanmax(run.train_maps)))
    fig = make_subplots(rows=1, cols=2, column_widths=[0.6, 0.4], horizontal_spacing=0.16, subplot_titles=(
        "first-layer attention<br>(rows: queries, columns: keys)", "held-out attention<br>entropy (nats)"))
    fig.add_trace(go.Heatmap(colorscale="Viridis", zmin=0, zmax=top, colorbar=dict(x=0.5, len=0.9, thickness=12),
                             hovertemplate="query %{y}<br>key %{x}<br>attention %{z:.3f}<extra></extra>"), 1, 1)
    for k, other in enumerate(r.runs):
        fig.add_trace(go.Scatter(x=np.asarray(other.steps).tolist(), y=rounded(other.entropy), mode="lines",
                                 name=f"seed {r.config.seeds[k]}", line=dict(width=2.5 if k == seed else 1.2),
                                 hovertemplate="step %{x}: %{y:.4f} nats<extra></extra>"), 1, 2)
    fig.add_trace(go.Scatter(mode="markers", marker=dict(size=11, color="#d62728"), name="checkpoint shown",
                             hovertemplate="step %{x}: %{y:.4f} nats<extra></extra>"), 1, 2)
    marker = len(fig.data) - 1
    states = []
    for name, maps, words in windows:
        labels = [f"{i} {w}" for i, w in enumerate(words)]
        for c, s in enumerate(steps):
            states.append({"traces": [0, marker], "data": {
                "z": [_causal_rows(maps[c]), None], "x": [labels, [int(s)]], "y": [labels, rounded([run.entropy[c]])]},
                "layout": {"title.text": f"{name}, step {int(s)} (seed {r.config.seeds[seed]}):<br>held-out loss "
                                         f"{float(run.heldout_loss[c]):.3f}, entropy {float(run.entropy[c]):.3f} "
                                         "nats"}})
    controls = (Control("window", "window", tuple(w[0] for w in windows), "menu"),
                Control("checkpoint", "step", tuple(str(int(s)) for s in steps), "slider"))
    _draw(fig, states[0])
    fig.update_yaxes(autorange="reversed", tickfont=dict(size=8), row=1, col=1)
    fig.update_xaxes(tickfont=dict(size=8), tickangle=-60, row=1, col=1)
    fig.update_xaxes(title_text="step", row=1, col=2)  # no y title: beside the colourbar it read as its label
    fig.update_layout(height=500, title=dict(font=dict(size=13)), template="plotly_white")
    return Explorable("explore-fig7", fig, controls, tuple(states), axis_px=95, legend_px=40, min_px=700)
