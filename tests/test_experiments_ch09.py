"""Chapter 9's experiments: smoke runs, their tables, and which claims and evidence kinds their verdicts give."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # tests only
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from scansnap import experiments  # noqa: E402
from scansnap.experiments import ch09_beyond as ch9  # noqa: E402
from scansnap.experiments import ch09_fates as fates9  # noqa: E402
from scansnap.experiments import ch09_heads as heads9  # noqa: E402
from scansnap.experiments import ch09_positions as pos9  # noqa: E402
from scansnap.theory import residual as res  # noqa: E402


def _claims(verdicts) -> list[tuple[str, str]]:
    return [(v.claim, v.evidence) for v in verdicts]


def test_gradients(tmp_path: Path) -> None:
    made = experiments.make(ch9.GRADIENTS, ch9.GradientConfig(instances=3), profile="smoke", out=tmp_path)
    assert made.result.errors.shape == (4, 3) and made.result.errors.max() < 1e-12
    verdicts = ch9.GRADIENTS.verdicts(made.result)
    assert _claims(verdicts) == [("X1", "derivation")]
    assert set(verdicts[0].numbers) >= {"max_error", "instances", "error_residual", "error_heads"}


def test_overlaps(tmp_path: Path) -> None:
    made = experiments.make(ch9.OVERLAPS, profile="smoke", out=tmp_path)
    r = made.result
    assert r.formula_error.max() < 1e-12 and r.eqn10_error.max() < 1e-10
    assert (r.cross_residual < r.cross_plain).all()
    K = 6  # Syn-Medium with 3 queries
    assert r.E_plain.shape == r.E_residual.shape == (K, K) and np.allclose(np.diag(r.E_residual), 0)
    assert _claims(ch9.OVERLAPS.verdicts(r)) == [("C33", "derivation")]
    assert (tmp_path / "figures" / "fig-ch9-overlaps.data.json").exists()


def test_cross_query_family_roles() -> None:
    classes = res.cross_query_family()
    glob, loc = res.token_roles(classes)
    disc = (glob != loc) & (loc != 0)
    assert int(disc.sum()) == 4 and (loc[disc] == res.DISTINCT).all() and (glob[disc] == res.COMMON).all()
    qa = int(classes.query[0])
    assert loc[qa, 2] == glob[qa, 2] == res.COMMON and loc[qa, 3] == 0  # c_A common in A, absent from B


def test_fates(tmp_path: Path) -> None:
    made = experiments.make(fates9.FATES, profile="smoke", out=tmp_path)
    r, c = made.result, made.config
    assert r.population.shape == (2, len(c.etas), r.global_roles.shape[0], r.global_roles.shape[0])
    assert r.sampled.shape[:2] == (2, len(c.seeds))
    n = fates9.fate_numbers(r.population, r)
    assert all(0 <= n[k] <= 1 for k in ("disc_local", "disc_global_plain", "local_all", "global_all_plain"))
    assert _claims(fates9.FATES.verdicts(r)) == [("C33", "training-population"), ("C33", "training-sampled")]
    table = fates9.fates_table(r)
    assert len({len(v) for v in table.values()}) == 1 and table["token"][:3].tolist() == [0, 1, 2]


def test_positions(tmp_path: Path) -> None:
    made = experiments.make(pos9.POSITIONS, profile="smoke", out=tmp_path)
    r, c = made.result, made.config
    K = 2 * len(c.margins)
    assert r.bias.shape == (2, len(c.seeds), c.T - 1) and r.share.shape == r.near_win.shape == (4, len(c.seeds), K)
    assert r.prior_error < 1e-12 and r.bag_gradient < 1e-12
    assert ((r.share >= 0) & (r.share <= 1)).all()
    assert np.abs(r.share[2] - r.share[3]).max() < np.abs(r.share[0] - r.share[1]).max() + 1e-12
    n = pos9.position_numbers(r)
    assert set(n) >= {c.name for rule in pos9.RULES for c in rule.criteria if rule.claim == "X3"}
    assert _claims(pos9.POSITIONS.verdicts(r)) == [("X2", "derivation"), ("X3", "training-sampled")]


def test_heads(tmp_path: Path) -> None:
    made = experiments.make(heads9.HEADS, profile="smoke", out=tmp_path)
    r, c = made.result, made.config
    assert r.jaccard.shape == (2, len(c.scales), len(c.seeds))
    assert np.allclose(r.jaccard[1], 1.0), "tied heads pick the same tokens"
    assert (r.coverage >= 1).all() and ((r.agreement >= 0) & (r.agreement <= 1)).all()
    assert _claims(heads9.HEADS.verdicts(r)) == [("X4", "training-population"), ("X5", "training-population"),
                                                 ("X6", "training-population")]


@pytest.mark.parametrize(
    ("cls", "kwargs", "param"),
    [(ch9.GradientConfig, dict(instances=0), "instances"), (ch9.OverlapConfig, dict(num_queries=(1,)), "num_queries"),
     (fates9.FatesConfig, dict(seeds=()), "seeds"), (fates9.FatesConfig, dict(momentum=1.0), "momentum"),
     (pos9.PositionsConfig, dict(near=1.0), "near"), (pos9.PositionsConfig, dict(margins=()), "margins"),
     (heads9.HeadsConfig, dict(scales=(1.0, 0.1, 0.3)), "scales"), (heads9.HeadsConfig, dict(heads=1), "heads")],
)
def test_configs_reject(cls, kwargs: dict, param: str) -> None:
    with pytest.raises(ValueError, match=rf"^{param}\b"):
        cls(**kwargs)


def test_margin_family_margins() -> None:
    from scansnap.positions import margin_family

    pc = margin_family((0.6, 0.9))
    for n in range(pc.K):
        d = pc.distinct(n)
        near = d[pc.near_probs[n, d] > 0]
        far = d[pc.far_probs[n, d] > 0]
        ratio = pc.probs[n, near].max() / pc.probs[n, far].max()
        assert float(ratio) == pytest.approx((0.6, 0.9)[n // 2])
    assert torch.allclose(pc.probs.sum(1), torch.ones(pc.K, dtype=torch.float64))
