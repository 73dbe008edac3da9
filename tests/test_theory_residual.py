"""scansnap.theory.residual: Theorem 1's overlaps and Eqn 10 with the residual connection (C33)."""

from __future__ import annotations

import pytest
import torch
from conftest import gen, names

from scansnap.data import syn_medium
from scansnap.model import YZModel
from scansnap.model_options import ModelOptions, OptionsModel
from scansnap.theory import classes_from_weights, decoder
from scansnap.theory import residual as res

F64 = torch.float64


def test_overlap_formula_and_block_structure() -> None:
    classes = syn_medium(3)
    Z = 0.3 * torch.randn(classes.M, classes.M, generator=gen(0), dtype=F64)
    E = torch.from_numpy(decoder.gram(res.residual_inputs(classes, Z).numpy()))
    assert (E - res.residual_overlap_formula(classes, Z)).abs().max() <= 1e-14
    same = classes.query[:, None] == classes.query[None, :]
    off = ~torch.eye(classes.K, dtype=torch.bool)
    assert E[same & off].min() > 0.9 and E[~same].max() < 0.1


@pytest.mark.parametrize("residual", [False, True])
def test_zdot_is_the_exact_gradient_at_theorem1_decoder(residual: bool) -> None:
    classes = syn_medium(3)
    Z = 0.3 * torch.randn(classes.M, classes.M, generator=gen(1), dtype=F64)
    h = 0.05
    gamma = float(decoder.gamma_of_h(h, classes.M))
    same, cross = res.residual_zdot(classes, Z, gamma, 1.0, residual=residual)
    if residual:
        Y = res.residual_decoder(classes, Z, h)
        model = OptionsModel.from_params(Y[None], Z[None], ModelOptions(residual=True))
    else:
        F = torch.from_numpy(decoder.unit_inputs(classes, Z)[0])
        W = h * (classes.M * torch.nn.functional.one_hot(classes.next, classes.M).to(F64) - 1)
        model = YZModel.from_params((F @ torch.linalg.solve(F.T @ F, W))[None], Z[None])
    gZ = model.loss_and_gradients(classes.query, classes.probs, classes.next)[2][0]
    assert (same + cross + gZ).abs().max() <= 1e-13 and gZ.abs().max() > 1e-3
    share = cross.norm() / (same.norm() + cross.norm())
    assert (share < 0.05) if residual else (share > 0.3)


def test_token_roles_and_agreement() -> None:
    # token 0 in classes 0 (query 0) and 2 (query 1); token 1 in classes 0, 1 (query 0); tokens 2-4 distinct
    w = [[1, 1, 1, 0, 0], [0, 1, 0, 1, 0], [1, 0, 0, 0, 1]]
    classes = classes_from_weights(w, [0, 0, 1])
    glob, loc = res.token_roles(classes)
    q0, q1 = int(classes.query[0]), int(classes.query[2])
    assert glob[q0, :5].tolist() == [res.COMMON, res.COMMON, res.DISTINCT, res.DISTINCT, 0]
    assert loc[q0, :5].tolist() == [res.DISTINCT, res.COMMON, res.DISTINCT, res.DISTINCT, 0]
    assert loc[q1, :5].tolist() == [res.DISTINCT, 0, 0, 0, res.DISTINCT]
    dz = torch.zeros(classes.M, classes.M, dtype=F64)
    dz[q0, :4] = torch.tensor([0.5, -0.2, 0.1, -0.1], dtype=F64)
    agree = res.role_agreement(dz, loc)
    assert agree.tolist() == [True, True, True, False, False, False]
    with pytest.raises(ValueError, match=names("dz")):
        res.role_agreement(dz[:3], loc)


@pytest.mark.parametrize(("kwargs", "param"), [({"distinct": ()}, "distinct"), ({"distinct": (0.5, 0.0)}, "distinct"),
                                               ({"distinct": "abc"}, "distinct"), ({"shared": -1.0}, "shared")])
def test_cross_query_family_rejects(kwargs: dict, param: str) -> None:
    with pytest.raises(ValueError, match=names(param)):
        res.cross_query_family(**kwargs)
