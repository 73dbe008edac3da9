"""The explorable figures (scansnap.explore, scansnap.explore_figures): built from small results of the right types'
shapes (no training), every state complete and consistent with the library's own numbers, the HTML free of
plotly.min.js and of any outside address. The browser side is tests/test_site_explore.py (marker ``site``)."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import numpy as np
import pytest
from plotly.utils import PlotlyJSONEncoder as _Encoder

from scansnap import explore, explore_figures, stats, theory
from scansnap.experiments import ch06_figures as ch6f
from scansnap.explore import Control, Explorable, rounded


def _fig3_fig9():
    fam = theory.theorem4_family(10, 98, 0.1)
    k = theory.eqn13_constants(fam)
    t = np.geomspace(0.1, 1e6, 60)
    c3 = ch6f.Fig3Config(points=60)
    B = np.array([theory.eqn14_at(t, fam.M, 10, y, c3.eta_Z, k.a, k.b) for y in c3.eta_Y])
    fig3 = SimpleNamespace(config=c3, t=t, B=B, a=k.a, b=k.b, M=fam.M)
    c9 = ch6f.Fig9Config(points=60)
    eY, eZ = c9.grid()
    fig9 = SimpleNamespace(config=c9, t=t, eta_Y=eY, eta_Z=eZ, a=k.a, b=k.b, M=fam.M)
    return fig3, fig9


def _trained(n: int = 2):
    fam = theory.theorem4_family(4, 10, 0.1)
    k = theory.eqn13_constants(fam)
    eY, eZ = theory.rate_grid(0.25, 0.025, 2.0, n)
    t = np.concatenate([[0.0], np.geomspace(1, 400, 30)])
    B = np.stack([0.5 * theory.eqn14_at(t, fam.M, 4, y, z, k.a, k.b)  # (S, C)
                  for y, z in zip(eY, eZ, strict=True)], axis=1)
    pop = SimpleNamespace(t=t, eta_Y=eY, eta_Z=eZ, B=B)
    return SimpleNamespace(config=SimpleNamespace(K=4), population=pop, a=k.a, b=k.b, M=fam.M)


def _check(ex: Explorable) -> dict:
    """Every state lists its traces, gives every attribute one value per trace, and the HTML is self-contained."""
    n = int(np.prod([len(c.labels) for c in ex.controls]))
    assert len(ex.states) == n
    for s in ex.states:
        assert all(0 <= t < len(ex.figure.data) for t in s["traces"])
        assert all(len(v) == len(s["traces"]) for v in s["data"].values())
    html = ex.html()
    assert f'id="{ex.name}-plot"' in html
    assert "plotly.js v" not in html and "cdn.plot.ly" not in html  # plotly.min.js is not embedded, nor fetched
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)
    spec = json.loads(re.search(r"var spec = (\{.*?\});\n", html, re.S).group(1))
    assert spec["sizes"] == [len(c.labels) for c in ex.controls] and len(spec["states"]) == n
    assert ex._repr_html_() == html
    assert f'id="{ex.name}-note"' in html  # a notebook that renders HTML only, without Plotly, shows a note
    # as wide as the column, scrolling sideways below min_px; Plotly sizes the plot to its box
    assert html.startswith('<div class="scansnap-explorable" style="max-width: 100%; overflow-x: auto">')
    assert f'<div style="min-width: {ex.min_px}px">' in html and "width:100%" in html.replace(" ", "")
    layout = ex.plotly_figure().layout
    assert layout.width is None and layout.autosize
    assert len(layout.sliders) + len(layout.updatemenus) == len(ex.controls)
    assert all(step.method == "skip" for sl in layout.sliders for step in sl.steps)
    _check_bundle(ex)
    return spec


def _check_bundle(ex: Explorable) -> None:
    """The notebook's MIME bundle: the site's HTML, and Plotly's own figure (JSON) whose one control walks every
    state with Plotly's ``update``, each step giving every listed trace the state's values (the figure's own where
    the state keeps them)."""
    bundle = ex._repr_mimebundle_()
    assert set(bundle) == {"text/html", explore.MIME, "text/plain"} and bundle["text/html"] == ex.html()
    fig = json.loads(json.dumps(bundle[explore.MIME], allow_nan=False))  # plain JSON
    assert set(fig) >= {"data", "layout", "config"} and len(fig["data"]) == len(ex.figure.data)
    controls = fig["layout"].get("sliders", []) + fig["layout"].get("updatemenus", [])
    assert len(controls) == 1, "one control over every combination"
    steps = controls[0].get("steps") or controls[0].get("buttons")
    assert len(steps) == len(ex.states) and controls[0]["active"] == ex.index([c.active for c in ex.controls])
    assert len({s["label"] for s in steps}) == len(steps)  # every combination named, once
    assert not any("<b>" in a.get("text", "") for a in fig["layout"].get("annotations", []))  # no menu titles
    for step, state in zip(steps, ex.states, strict=True):
        data, layout, traces = step["args"]
        assert step["method"] == "update" and traces == state["traces"]
        assert layout == state.get("layout", {})
        for attr, values in state["data"].items():
            for t, mine, native in zip(traces, values, data[attr], strict=True):
                want = ex.figure.data[t].to_plotly_json().get(attr) if mine is None else mine
                assert json.loads(json.dumps(want, cls=_Encoder)) == native


def test_rounded_keeps_significant_digits_and_drops_nan() -> None:
    assert rounded([123456.0, 0.000123456, 0.0, -2.5e-7], 3) == [123000.0, 0.000123, 0.0, -2.5e-7]
    assert rounded([[1.0, np.nan], [np.inf, 2.0]]) == [[1.0, None], [None, 2.0]]
    json.dumps(rounded(np.random.default_rng(0).normal(size=(3, 4))), allow_nan=False)


def test_controls_and_state_index() -> None:
    import plotly.graph_objects as go

    with pytest.raises(ValueError, match="kind"):
        Control("a", "a", ("x",), "knob")
    with pytest.raises(ValueError, match="active"):
        Control("a", "a", ("x",), active=1)
    ctl = (Control("a", "a", ("1", "2", "3")), Control("b", "b", ("x", "y"), "menu"))
    states = tuple({"traces": [0], "data": {"y": [[k]]}} for k in range(6))
    ex = Explorable("explore-test", go.Figure(go.Scatter(y=[0])), ctl, states)
    assert ex.index([0, 0]) == 0 and ex.index([1, 1]) == 3 and ex.index([2, 1]) == 5
    with pytest.raises(ValueError, match="position"):
        ex.index([3, 0])
    with pytest.raises(ValueError, match="states"):
        Explorable("explore-test", go.Figure(), ctl, states[:5])
    _check(ex)


def test_plotly_js_is_the_package_copy() -> None:
    path = explore.plotly_js()
    assert path.is_file() and path.stat().st_size > 1_000_000
    assert "plotly.js v" in path.read_text(encoding="utf8", errors="replace")[:200]


def test_log_rates_are_equal_steps_through_the_anchor() -> None:
    """Equal factors between neighbours (a slider's evenly spaced ticks are then a log scale, as labelled): not
    4, 5, 5.66 as before, where the chapter's 5 was slipped between half-octave steps."""
    values = np.array([0.25, 0.5, 1.0, 2.0, 5.0, 0.125 * 5])
    r = explore_figures.log_rates(values)
    assert np.allclose(r, 0.25 * 2.0 ** (np.arange(10) / 2))  # 0.25 .. 5.66: up to the first point >= 5
    assert np.allclose(np.diff(np.log(r)), np.log(2) / 2)
    shifted = explore_figures.log_rates(values, anchor=1 / 3)  # below the smallest value, above the largest
    assert shifted[0] <= 0.25 < shifted[1] and shifted[-2] < 5 <= shifted[-1]
    assert np.isclose(shifted, 1 / 3).sum() == 1 and np.allclose(np.diff(np.log(shifted)), np.log(2) / 2)
    assert np.allclose(explore_figures.log_rates(values, per_octave=1), 0.25 * 2.0 ** np.arange(6))
    with pytest.raises(ValueError, match="^values"):
        explore_figures.log_rates(np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="^anchor"):
        explore_figures.log_rates(values, anchor=-1.0)


def test_phase_explorable_matches_eqn14_and_the_trained_grid() -> None:
    fig3, fig9 = _fig3_fig9()
    trained = _trained()
    ex = explore_figures.phase_explorable(fig3, fig9, trained, points=40)
    spec = _check(ex)
    pop = trained.population
    rY = explore_figures.log_rates(np.concatenate([fig3.config.eta_Y, fig9.eta_Y, pop.eta_Y]), 2, 0.25)
    rZ = explore_figures.log_rates(np.concatenate([[fig3.config.eta_Z], fig9.eta_Z, pop.eta_Z]), 2, 0.025)
    assert [c.labels for c in ex.controls] == [tuple(f"{v:.3g}" for v in r) for r in (rY, rZ)]
    assert rY[0] == 0.25 and rY[-1] >= 5 and rZ[0] == 0.025 and rZ[-1] >= 1
    assert [c.title for c in ex.controls] == ["eta_Y (log scale, x1.41 a step)", "eta_Z (log scale, x1.41 a step)"]
    # nearest Figure 3's first pair (0.5, 0.5) on the half-octave grid through the trained rates 0.025 2^k
    assert [c.labels[c.active] for c in ex.controls] == ["0.5", "0.566"]
    first = ex.states[0]["traces"][0]
    hits = 0
    assert first == 4  # after Figure 3's four grey curves
    for iY, eY in enumerate(rY):
        for iZ, eZ in enumerate(rZ):
            s = spec["states"][ex.index([iY, iZ])]
            x, y = np.array(ex.figure.data[first].x), np.array(s["data"]["y"][0])
            assert s["data"]["x"][0] is None  # every state shares Figure 3's steps (set once)
            B = theory.eqn14_at(x, fig3.M, 10, eY, eZ, fig3.a, fig3.b)
            assert np.allclose(y, np.exp(2 * B), rtol=2e-3)  # 4 significant digits, of x and of y
            t0 = theory.decoder.transition_time(fig3.M, 10, eY)
            assert np.isclose(s["data"]["x"][1][0], t0, rtol=1e-3)
            has_run = len(s["data"]["y"][3]) > 0
            on_grid = any(np.isclose(eY, a) and np.isclose(eZ, b) for a, b in
                          zip(trained.population.eta_Y, trained.population.eta_Z, strict=True))
            assert has_run == on_grid
            hits += has_run
            assert ("no trained run" in s["layout"]["title.text"]) != has_run
    assert hits == len(trained.population.eta_Y)  # every trained pair is a slider position
    assert ex.figure.data[first].y is not None  # drawn in its first state


def test_synsmall_explorable() -> None:
    rng = np.random.default_rng(1)
    R, S, steps1 = 2, 3, 5
    att = rng.dirichlet(np.ones(20), size=(R, S, steps1))
    runs = SimpleNamespace(values=np.array([1.0, 5.0]), seeds=np.arange(1, S + 1), attention=att,
                           entropy=rng.uniform(1, 2.3, (R, S, steps1)), common_mass=att[..., :10].sum(-1))
    ex = explore_figures.synsmall_explorable(SimpleNamespace(runs=runs))
    spec = _check(ex)
    assert [c.kind for c in ex.controls] == ["menu", "slider"] and len(ex.controls[1].labels) == steps1
    s = spec["states"][ex.index([1, 3])]
    assert np.allclose(s["data"]["y"][1], att[1, :, 3, 10:].mean(0), rtol=1e-2)  # distinct tokens 10-19
    assert np.allclose(s["data"]["y"][0], att[1, :, 3, :10].mean(0), rtol=1e-2)
    assert s["data"]["x"][2] == [3]
    assert spec["states"][ex.index([1, 2])]["data"]["y"] != s["data"]["y"]


def test_synmedium_explorable() -> None:
    rng = np.random.default_rng(2)
    c = SimpleNamespace(ratio=(1.0, 2.0, 5.0), eta_Z=(0.5, 1.0), seeds=(1, 2, 3, 4), steps=100)
    runs = tuple(SimpleNamespace(num_query=q, entropy=rng.uniform(0, 2, (2, 3, 4)),
                                 entropy_init=rng.uniform(2, 2.3, (2, 3, 4))) for q in (1, 3))
    ex = explore_figures.synmedium_explorable(SimpleNamespace(config=c, runs=runs))
    spec = _check(ex)
    s = spec["states"][ex.index([1, 0])]
    e = runs[1].entropy[0]
    assert np.allclose(s["data"]["y"][0], e.ravel(), rtol=1e-4)
    assert s["data"]["customdata"][0] == [1, 2, 3, 4] * 3
    mean, lo, hi = stats.t_interval(e[2])
    assert np.isclose(s["data"]["y"][1][2], mean, rtol=1e-4)
    assert np.isclose(s["data"]["error_y"][1]["array"][2], hi - mean, rtol=1e-3)
    assert "q = 3" in s["layout"]["title.text"]


def test_freeze_explorable() -> None:
    rng = np.random.default_rng(3)
    T, C = 5, 4

    def maps():
        m = np.tril(rng.uniform(size=(C, T, T)))
        return m / m.sum(-1, keepdims=True)

    runs = tuple(SimpleNamespace(steps=np.arange(C) * 50, probe_maps=maps(), train_maps=maps(),
                                 entropy=rng.uniform(0.5, 1.5, C), heldout_loss=rng.uniform(6, 7, C))
                 for _ in range(2))
    r = SimpleNamespace(runs=runs, probe_words=tuple("abcde"), train_words=tuple("vwxyz"),
                        config=SimpleNamespace(seeds=(1, 2)))
    ex = explore_figures.freeze_explorable(r)
    spec = _check(ex)
    s = spec["states"][ex.index([1, 2])]
    z = s["data"]["z"][0]
    assert [len(row) for row in z] == list(range(1, T + 1))  # causal: the lower triangle only
    assert all(np.allclose(z[i], runs[0].train_maps[2, i, : i + 1], atol=6e-4) for i in range(T))
    assert s["data"]["x"][0][1] == "1 w" and s["data"]["x"][1] == [100]
    assert spec["states"][ex.index([0, 2])]["data"]["x"][0][1] == "1 b"


def test_the_site_takes_the_html_and_a_notebook_the_plotly_bundle() -> None:
    """The book's build (myst-nb, html builder) picks ``text/html`` from an explorable's bundle and never Plotly's type
    (``nb_mime_priority_overrides``); the ``scansnap_plotly`` extension silences only myst-nb's note that it skips
    that type (a bundle with nothing the site can show still warns: ``mystnb.mime_priority``)."""
    import importlib.util
    from pathlib import Path

    import plotly.graph_objects as go
    import yaml
    from myst_nb.core.render import get_mime_priority

    root = Path(__file__).resolve().parent.parent
    config = yaml.safe_load((root / "_config.yml").read_text())["sphinx"]["config"]
    priority = get_mime_priority("html", config["nb_mime_priority_overrides"])
    ex = Explorable("explore-test", go.Figure(go.Scatter(y=[0])), (Control("a", "a", ("1", "2")),),
                    tuple({"traces": [0], "data": {"y": [[k]]}} for k in range(2)))
    bundle = ex._repr_mimebundle_()
    assert explore.MIME not in priority and next(m for m in priority if m in bundle) == "text/html"
    spec = importlib.util.spec_from_file_location("scansnap_plotly", root / "_ext" / "scansnap_plotly.py")
    ext = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ext)
    sphinx_config = SimpleNamespace(suppress_warnings=["ref.citation"])
    ext._allow_notebook_types(None, sphinx_config)
    assert sphinx_config.suppress_warnings == ["ref.citation", "mystnb.unknown_mime_type"]
