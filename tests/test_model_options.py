"""scansnap.model_options: the residual connection, the positional bias and several heads (Chapter 9)."""

from __future__ import annotations

import pytest
import torch
from conftest import gen, names

from scansnap.data import syn_medium
from scansnap.model import YZModel, cross_entropy, init_params, token_counts
from scansnap.model_options import ModelOptions, OptionsModel, head_params
from scansnap.train import train

F64 = torch.float64
M, C, B, T = 11, 3, 7, 9
OPTIONS = {
    "residual": ModelOptions(residual=True),
    "positional": ModelOptions(positions=T - 1),
    "heads": ModelOptions(heads=3),
    "all": ModelOptions(residual=True, positions=T - 1, heads=2),
}


def random_model(options: ModelOptions, seed: int = 0, scale: float = 2.0) -> OptionsModel:
    g = gen(seed)
    lead = (C, options.heads) if options.heads > 1 else (C,)
    Y = scale * torch.randn(*lead, M, M, generator=g, dtype=F64)
    Z = scale * torch.randn(*lead, M, M, generator=g, dtype=F64)
    P = torch.randn(*lead, options.positions, generator=g, dtype=F64) if options.positions else None
    return OptionsModel.from_params(Y, Z, options, P)


def autograd(model: OptionsModel, x: torch.Tensor, target: torch.Tensor) -> list[torch.Tensor]:
    copy = OptionsModel.from_params(model.Y.detach(), model.Z.detach(), model.options,
                                    None if model.P is None else model.P.detach())
    loss = cross_entropy(copy(x)[0], target)
    loss.sum().backward()
    return [loss.detach()] + [p.grad for p in copy.parameters_list()]


@pytest.mark.parametrize("name", list(OPTIONS))
@pytest.mark.parametrize("per_config", [False, True])
def test_closed_form_equals_autograd(name: str, per_config: bool) -> None:
    """Lemma 1 extended to each option: loss and every gradient equal autograd to 1e-12."""
    options = OPTIONS[name]
    for seed in range(3):
        model = random_model(options, seed)
        shape = (C, B, T) if per_config else (B, T)
        x = torch.randint(M, shape, generator=gen(seed + 10))
        target = torch.randint(M, shape[:-1], generator=gen(seed + 20))
        inputs = x[..., :-1] if options.positions else token_counts(x[..., :-1], M)
        got = model.loss_and_gradients(x[..., -1], inputs, target)
        want = autograd(model, x, target)
        assert len(got) == len(want) == (4 if options.positions else 3)
        for a, b in zip(got, want, strict=True):
            assert a.shape == b.shape and (a - b).abs().max() <= 1e-12
        assert got[2].abs().max() > 1e-3 and (not options.positions or got[3].abs().max() > 1e-3)


@pytest.mark.parametrize("name", ["residual", "heads"])
def test_population_weights_equal_autograd(name: str) -> None:
    """The weights path (token probabilities, the long-sequence limit) against autograd of forward_weights."""
    classes = syn_medium(3)
    options = OPTIONS[name]
    lead = (2, options.heads) if options.heads > 1 else (2,)
    g = gen(3)
    Y = torch.randn(*lead, classes.M, classes.M, generator=g, dtype=F64)
    Z = torch.randn(*lead, classes.M, classes.M, generator=g, dtype=F64)
    model = OptionsModel.from_params(Y, Z, options)
    got = model.loss_and_gradients(classes.query, classes.probs, classes.next)
    loss = cross_entropy(model.forward_weights(classes.query, classes.probs), classes.next)
    loss.sum().backward()
    for a, b in zip(got, (loss.detach(), model.Y.grad, model.Z.grad), strict=True):
        assert (a - b).abs().max() <= 1e-12


def test_options_off_equal_the_paper_model() -> None:
    base = YZModel.from_params(2 * torch.randn(C, M, M, generator=gen(1), dtype=F64),
                               2 * torch.randn(C, M, M, generator=gen(2), dtype=F64))
    model = OptionsModel.from_params(base.Y.detach(), base.Z.detach())
    x = torch.randint(M, (B, T), generator=gen(3))
    target = torch.randint(M, (B,), generator=gen(4))
    counts = token_counts(x[:, :-1], M)
    for a, b in zip(model.loss_and_gradients(x[:, -1], counts, target),
                    base.loss_and_gradients(x[:, -1], counts, target), strict=True):
        assert (a - b).abs().max() <= 1e-13
    assert (model(x)[0] - base(x)[0]).abs().max() <= 1e-13
    assert torch.equal(model.attention(x), base.attention(x))


def test_zero_bias_changes_nothing() -> None:
    base = random_model(ModelOptions(residual=True), seed=5)
    biased = OptionsModel.from_params(base.Y.detach(), base.Z.detach(), ModelOptions(residual=True, positions=T - 1))
    x = torch.randint(M, (B, T), generator=gen(6))
    assert (base(x)[0] - biased(x)[0]).abs().max() <= 1e-13


def test_trainer_with_options_off_is_bit_identical(small) -> None:
    kw = dict(steps=6, batch=8, T=12, seed=[1, 2], init="uniform")
    for limit in ("sampled", "population"):
        a = train(small, 1.0, 0.5, limit=limit, **kw)
        b = train(small, 1.0, 0.5, limit=limit, options=ModelOptions(tied=True, bias_rate=3.0), **kw)
        for name in ("Y", "Z", "loss", "attention"):
            assert torch.equal(getattr(a, name), getattr(b, name)), name
        assert b.bias is None and "options" not in b.settings


def test_tied_heads_are_one_head_with_rescaled_rates(small) -> None:
    """H heads from one draw stay equal and train like one head with eta_Y * H and eta_Z / H."""
    H = 3
    heads = train(small, 1.0, 0.6, steps=15, limit="population", options=ModelOptions(heads=H, z_std=0.5, tied=True))
    one = train(small, 1.0 * H, 0.6 / H, steps=15, limit="population", options=ModelOptions(z_std=0.5))
    assert heads.Z.shape == (1, H, small.M, small.M) and heads.attention.shape[2] == H
    for h in range(H):
        assert (heads.Z[0, h] - one.Z[0]).abs().max() <= 1e-10
        assert (H * heads.Y[0, h] - one.Y[0]).abs().max() <= 1e-10
    assert (heads.loss - one.loss).abs().max() <= 1e-10
    free = train(small, 1.0, 0.6, steps=15, limit="population", options=ModelOptions(heads=H, z_std=0.5))
    assert (free.Z[0, 0] - free.Z[0, 1]).abs().max() > 0.1


def test_head_params() -> None:
    one = head_params(M, ModelOptions(), "uniform", gen(0))
    ref = init_params(M, "uniform", gen(0))
    assert torch.equal(one[0], ref[0]) and torch.equal(one[1], ref[1])
    Y, Z = head_params(M, ModelOptions(heads=4, z_std=1.0), "zero", gen(0))
    assert Y.shape == Z.shape == (4, M, M) and not Y.any()
    assert all((Z[0] - Z[h]).abs().max() > 0.1 for h in range(1, 4))
    Y, Z = head_params(M, ModelOptions(heads=4, z_std=1.0, tied=True), "zero", gen(0))
    assert all(torch.equal(Z[0], Z[h]) for h in range(4))


def test_trained_bias_and_residual_move(small) -> None:
    h = train(small, 1.0, 1.0, steps=5, batch=8, T=10, options=ModelOptions(residual=True, positions=9))
    assert h.bias.shape == (1, 9) and h.bias.abs().max() > 0 and h.settings["options"]["positions"] == 9
    assert torch.isfinite(h.loss).all()


@pytest.mark.parametrize(
    ("kwargs", "param"),
    [(dict(residual=1), "residual"), (dict(positions=-1), "positions"), (dict(heads=0), "heads"),
     (dict(z_std=-0.1), "z_std"), (dict(bias_rate=0.0), "bias_rate"), (dict(tied="yes"), "tied")],
)
def test_options_reject(kwargs: dict, param: str) -> None:
    with pytest.raises(ValueError, match=names(param)):
        ModelOptions(**kwargs)


def test_positional_bias_needs_sampled_sequences(small) -> None:
    with pytest.raises(ValueError, match=names("options")):
        train(small, 1.0, 1.0, steps=2, limit="population", options=ModelOptions(positions=127))
    with pytest.raises(ValueError, match=names("options")):
        train(small, 1.0, 1.0, steps=2, T=20, options=ModelOptions(positions=10))
    model = random_model(OPTIONS["positional"])
    with pytest.raises(ValueError, match=names("weights")):
        model.loss_and_gradients(torch.zeros(B, dtype=torch.long), torch.zeros(B, T, dtype=torch.long),
                                 torch.zeros(B, dtype=torch.long))
    with pytest.raises(ValueError, match=names("x")):
        model(torch.zeros(B, T + 1, dtype=torch.long))


@pytest.mark.parametrize(
    ("call", "param"),
    [(lambda m: m.decode(torch.ones(C, 2, B, M, dtype=F64)), "v"),
     (lambda m: m.decode(torch.ones(C, 3, B, M + 1, dtype=F64)), "v"),
     (lambda m: m.forward_weights(torch.zeros(B, dtype=torch.long), torch.ones(B + 1, M, dtype=F64)), "weights"),
     (lambda m: m.forward_weights(torch.full((B,), M), torch.ones(B, M, dtype=F64)), "query")],
)
def test_decode_and_forward_weights_reject(call, param: str) -> None:
    with pytest.raises(ValueError, match=names(param)):
        call(random_model(OPTIONS["heads"]))
