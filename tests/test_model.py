"""scansnap.model: the Y/Z model, batched over configurations."""

from __future__ import annotations

import math

import pytest
import torch
from conftest import gen, names

from scansnap.model import INITS, YZModel, cross_entropy, init_params, token_counts

F64 = torch.float64
M = 11


def random_model(C: int = 3, seed: int = 0, scale: float = 1.0) -> YZModel:
    g = gen(seed)
    return YZModel.from_params(scale * torch.randn(C, M, M, generator=g, dtype=F64),
                               scale * torch.randn(C, M, M, generator=g, dtype=F64))


def random_tokens(B: int, T: int, seed: int = 1, C: int | None = None) -> torch.Tensor:
    shape = (B, T) if C is None else (C, B, T)
    return torch.randint(M, shape, generator=gen(seed))


def test_shapes_and_dtypes() -> None:
    model = random_model(C=3)
    logits, b = model(random_tokens(5, 7))
    assert logits.shape == (3, 5, M) and b.shape == (3, 5, 6)
    assert logits.dtype == F64 and b.dtype == F64
    assert model.configs == 3 and model.M == M
    assert model.Y.shape == model.Z.shape == (3, M, M)
    logits, b = model(random_tokens(4, 2, C=3))  # one batch per configuration, T = 2
    assert logits.shape == (3, 4, M) and b.shape == (3, 4, 1)
    assert torch.equal(b, torch.ones(3, 4, 1, dtype=F64)), "one contextual token gets all attention"


def test_attention_by_hand() -> None:
    """b[c, i, t] = softmax over t < T-1 of Z[c, x_T, x_t]: the query position is excluded."""
    model = random_model(C=2)
    x = random_tokens(6, 9)
    b = model.attention(x)
    torch.testing.assert_close(b.sum(-1), torch.ones(2, 6, dtype=F64), rtol=1e-14, atol=1e-14)
    for c in range(2):
        for i in range(6):
            q = x[i, -1]
            logits = torch.stack([model.Z[c, q, x[i, t]] for t in range(8)])
            torch.testing.assert_close(b[c, i], torch.softmax(logits, 0), rtol=1e-15, atol=1e-15)


def test_query_is_masked() -> None:
    """The query never attends to itself: with the query token absent from the context, its own
    logit Z[q, q] changes neither the attention nor the output."""
    model = random_model(C=2)
    x = torch.tensor([[1, 2, 2, 3, 5, 0], [4, 4, 1, 6, 6, 9]])
    logits, b = model(x)
    Z = model.Z.detach().clone()
    Z[:, 0, 0] += 50.0
    Z[:, 9, 9] -= 50.0
    logits2, b2 = YZModel.from_params(model.Y.detach(), Z)(x)
    assert torch.equal(b, b2) and torch.equal(logits, logits2)
    # the query token *does* count where it also appears as a contextual token
    x3 = torch.tensor([[1, 2, 0, 3, 5, 0]])
    assert not torch.equal(YZModel.from_params(model.Y.detach(), Z)(x3)[1], model(x3)[1])


def test_forward_equals_one_hot_formula() -> None:
    """logits = Y^T f / ||f|| with f = X^T b, X the one-hot contextual rows (built by hand)."""
    model = random_model(C=2)
    x = random_tokens(4, 10)
    logits, b = model(x)
    for c in range(2):
        for i in range(4):
            X = torch.nn.functional.one_hot(x[i, :-1], M).double()
            f = X.T @ b[c, i]
            want = model.Y[c].T @ (f / f.norm())
            torch.testing.assert_close(logits[c, i], want, rtol=1e-13, atol=1e-13)


def test_count_path_equals_forward() -> None:
    model = random_model(C=3, seed=2, scale=2.0)
    x = random_tokens(16, 30, seed=3)
    counts = token_counts(x[:, :-1], M)
    direct = model(x)[0]
    via_counts = model.decode(model.attended(x[:, -1], counts))
    assert (via_counts - direct).abs().max() <= 1e-12
    # per-configuration batches too
    xc = random_tokens(5, 12, seed=4, C=3)
    via_counts = model.decode(model.attended(xc[..., -1], token_counts(xc[..., :-1], M)))
    assert (via_counts - model(xc)[0]).abs().max() <= 1e-12


def test_token_counts() -> None:
    ctx = torch.tensor([[0, 3, 3, 1], [2, 2, 2, 2]])
    counts = token_counts(ctx, 5)
    assert counts.dtype == F64 and counts.shape == (2, 5)
    assert counts.tolist() == [[1, 1, 0, 2, 0], [0, 0, 4, 0, 0]]
    x = random_tokens(3, 7, C=2)
    torch.testing.assert_close(token_counts(x, M), torch.nn.functional.one_hot(x, M).double().sum(-2))


def test_attended_rows_are_distributions() -> None:
    model = random_model(C=2)
    probs = torch.rand(4, M, generator=gen(5), dtype=F64)
    probs[:, :3] = 0
    probs /= probs.sum(1, keepdim=True)
    f = model.attended(torch.tensor([3, 4, 5, 6]), probs)
    assert f.shape == (2, 4, M)
    torch.testing.assert_close(f.sum(-1), torch.ones(2, 4, dtype=F64), rtol=1e-14, atol=1e-14)
    assert (f[..., :3] == 0).all() and (f[..., 3:] > 0).all()


def test_init_zero() -> None:
    Y, Z = init_params(M, "zero")
    assert torch.equal(Y, torch.zeros(M, M, dtype=F64)) and torch.equal(Z, torch.zeros(M, M, dtype=F64))
    model = YZModel(M, configs=2)
    assert not model.Y.detach().any() and not model.Z.detach().any()


def test_init_uniform() -> None:
    bound = 1 / math.sqrt(M)
    Y, Z = init_params(M, "uniform", gen(0))
    for P in (Y, Z):
        assert P.dtype == F64 and P.shape == (M, M)
        assert P.abs().max() <= bound
        assert P.unique().numel() == M * M, "entries must not be equal"
        # uniform on [-bound, bound]: the extremes of 121 draws come close to the bounds
        # (P(max < 0.8 bound) = 0.9^121 < 3e-6)
        assert P.max() > 0.8 * bound and P.min() < -0.8 * bound
    assert not torch.equal(Y, Z)
    # Y first, then Z, from the one generator
    g = gen(0)
    Y2 = (torch.rand(M, M, generator=g, dtype=F64) * 2 - 1) * bound
    Z2 = (torch.rand(M, M, generator=g, dtype=F64) * 2 - 1) * bound
    assert torch.equal(Y, Y2) and torch.equal(Z, Z2)
    # each configuration draws its own
    model = YZModel(M, configs=2, init="uniform", generator=gen(0))
    assert torch.equal(model.Y[0], Y) and not torch.equal(model.Y[0], model.Y[1])
    assert init_params(M, "uniform", gen(0), dtype=torch.float32)[0].dtype == torch.float32


def test_from_params_copies() -> None:
    Y = torch.randn(2, M, M, dtype=F64)
    Z = torch.randn(2, M, M, dtype=F64)
    model = YZModel.from_params(Y, Z)
    assert torch.equal(model.Y.detach(), Y) and torch.equal(model.Z.detach(), Z)
    Y += 1
    assert not torch.equal(model.Y.detach(), Y)


def test_cross_entropy_matches_torch() -> None:
    logits = torch.randn(3, 8, M, generator=gen(6), dtype=F64)
    target = torch.randint(M, (8,), generator=gen(7))
    ce = cross_entropy(logits, target)
    assert ce.shape == (3,)
    for c in range(3):
        want = torch.nn.functional.cross_entropy(logits[c], target)
        torch.testing.assert_close(ce[c], want, rtol=1e-14, atol=1e-14)
    per_config = torch.randint(M, (3, 8), generator=gen(8))
    for c, v in enumerate(cross_entropy(logits, per_config)):
        torch.testing.assert_close(v, torch.nn.functional.cross_entropy(logits[c], per_config[c]), rtol=1e-14,
                                   atol=1e-14)


@pytest.mark.parametrize("shared_batch", [True, False])
def test_configurations_are_independent(shared_batch: bool) -> None:
    """The gradient of the summed loss, restricted to configuration c, is configuration c's own."""
    model = random_model(C=4, seed=9)
    x = random_tokens(6, 12, seed=10) if shared_batch else random_tokens(6, 12, seed=10, C=4)
    target = torch.randint(M, (6,), generator=gen(11))
    cross_entropy(model(x)[0], target).sum().backward()
    for c in range(4):
        alone = YZModel.from_params(model.Y.detach()[c : c + 1], model.Z.detach()[c : c + 1])
        cross_entropy(alone(x if shared_batch else x[c : c + 1])[0], target).sum().backward()
        assert (alone.Y.grad[0] - model.Y.grad[c]).abs().max() <= 1e-12
        assert (alone.Z.grad[0] - model.Z.grad[c]).abs().max() <= 1e-12
        assert alone.Z.grad.abs().max() > 1e-3, "a vacuous gradient"


# ----------------------------------------------------------------------------------------------
# Closed-form gradients (Lemma 1 from token weights)
# ----------------------------------------------------------------------------------------------


def autograd_loss_and_gradients(model: YZModel, query, weights, target):
    """The reference: autograd through ``attended``/``decode``/``cross_entropy`` on a fresh copy."""
    copy = YZModel.from_params(model.Y.detach(), model.Z.detach())
    loss = cross_entropy(copy.decode(copy.attended(query, weights)), target)
    loss.sum().backward()
    return loss.detach(), copy.Y.grad, copy.Z.grad


def random_inputs(kind: str, C: int = 3, B: int = 9, seed: int = 12):
    """``(query, weights, target)``: ``shared`` (B,) batch, ``per_config`` (C, B) batches, or
    ``population`` probabilities (expanded along C, as the trainer passes them)."""
    g = gen(seed)
    lead = (C, B) if kind == "per_config" else (B,)
    query = torch.randint(M, lead, generator=g)
    target = torch.randint(M, lead, generator=g)
    weights = torch.randint(0, 4, (*lead, M), generator=g).double()  # counts, many zeros
    weights[..., 0] += (weights.sum(-1) == 0).double()  # every row needs a positive weight
    if kind == "population":
        weights = (weights / weights.sum(-1, keepdim=True)).expand(C, B, M)
        query, target = query.expand(C, B), target.expand(C, B)
    return query, weights, target


@pytest.mark.parametrize("kind", ["shared", "per_config", "population"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_loss_and_gradients_equal_autograd(kind: str, seed: int) -> None:
    model = random_model(C=3, seed=seed, scale=2.0)
    query, weights, target = random_inputs(kind, seed=seed + 20)
    assert (weights == 0).any() and (weights > 0).sum(-1).min() >= 1
    loss, gY, gZ = model.loss_and_gradients(query, weights, target)
    want = autograd_loss_and_gradients(model, query, weights, target)
    assert loss.shape == (3,) and gY.shape == gZ.shape == (3, M, M)
    for got, ref in zip((loss, gY, gZ), want, strict=True):
        assert got.dtype == F64 and not got.requires_grad
        assert (got - ref).abs().max() <= 1e-12
    assert gZ.abs().max() > 1e-3, "a vacuous gradient"
    # only the rows of the queries in the batch move
    unused = torch.ones(3, M, dtype=torch.bool).scatter_(1, query.expand(3, -1), False)
    assert (gZ[unused] == 0).all()
    assert model.Y.grad is None and model.Z.grad is None, "no autograd inside"


def test_loss_and_gradients_equal_lemma1() -> None:
    """One configuration, sampled sequences: the count path gives minus Lemma 1's dJ (one-hot X)."""
    from scansnap.theory import lemma1_gradients

    model = random_model(C=1, seed=4)
    x = random_tokens(12, 15, seed=5)
    target = torch.randint(M, (12,), generator=gen(6))
    loss, gY, gZ = model.loss_and_gradients(x[:, -1], token_counts(x[:, :-1], M), target)
    dY, dZ = lemma1_gradients(model.Y.detach()[0], model.Z.detach()[0], x, target)
    assert (gY[0] + dY).abs().max() <= 1e-12 and (gZ[0] + dZ).abs().max() <= 1e-12
    assert (loss - cross_entropy(model(x)[0], target)).abs().max() <= 1e-12


@pytest.mark.parametrize("kind", ["shared", "per_config"])
def test_loss_and_gradients_large_logits(kind: str) -> None:
    """Entries of +-50 in Z and Y: exp and softmax saturate but nothing overflows, and the closed
    form still matches autograd (float64); float32 stays finite and close to it."""
    g = gen(30)
    Y = 50 * torch.sign(torch.randn(3, M, M, generator=g, dtype=F64))
    Z = 50 * torch.sign(torch.randn(3, M, M, generator=g, dtype=F64))
    query, weights, target = random_inputs(kind, seed=31)
    # a zero-weight key far above every weighted one (sample 0's query: all keys at -50): a shift
    # by the max over all keys, not only the weighted ones, would underflow to 0 / 0
    q0 = query[..., 0].expand(3)
    Z[torch.arange(3), q0] = -50.0
    Z[torch.arange(3), q0, 1] = 1000.0
    weights[..., 1] = 0
    weights[..., 0] += (weights.sum(-1) == 0).double()
    model = YZModel.from_params(Y, Z)
    loss, gY, gZ = model.loss_and_gradients(query, weights, target)
    want = autograd_loss_and_gradients(model, query, weights, target)
    for got, ref in zip((loss, gY, gZ), want, strict=True):
        assert torch.isfinite(got).all() and torch.isfinite(ref).all()
        assert (got - ref).abs().max() <= 1e-12 * max(1.0, ref.abs().max().item())
    assert loss.max() > 50, "the logits are large: some targets are far from the prediction"
    m32 = YZModel.from_params(Y.float(), Z.float())
    got32 = m32.loss_and_gradients(query, weights.float(), target)
    for got, ref in zip(got32, (loss, gY, gZ), strict=True):
        assert got.dtype == torch.float32 and torch.isfinite(got).all()
        assert (got.double() - ref).abs().max() <= 1e-4 * max(1.0, ref.abs().max().item())


def test_loss_and_gradients_leave_inputs_alone() -> None:
    model = random_model(C=3, seed=7)
    query, weights, target = random_inputs("per_config", seed=8)
    before = [t.clone() for t in (model.Y, model.Z, query, weights, target)]
    model.loss_and_gradients(query, weights, target)
    for a, b in zip((model.Y, model.Z, query, weights, target), before, strict=True):
        assert torch.equal(a.detach(), b)


@pytest.mark.parametrize(
    ("query", "target", "param"),
    [(torch.tensor([0, M]), torch.tensor([0, 1]), "query"),
     (torch.tensor([0.0, 1.0]), torch.tensor([0, 1]), "query"),
     (torch.tensor([0, 1]), torch.tensor([0, M]), "target"),
     (torch.tensor([0, 1]), torch.tensor([0.0, 1.0]), "target")],
)
def test_loss_and_gradients_reject(query, target, param: str) -> None:
    with pytest.raises(ValueError, match=names(param)):
        random_model(C=2).loss_and_gradients(query, torch.ones(2, M, dtype=F64), target)


@pytest.mark.parametrize(
    ("query_shape", "weights_shape", "target_shape", "param"),
    [((3, 2, 4), (4, M), (4,), "query"), ((3, 4), (4, M), (4,), "query"), ((4,), (5, M), (4,), "weights"),
     ((4,), (4, M + 1), (4,), "weights"), ((4,), (3, 4, M), (4,), "weights"), ((4,), (4, M), (5,), "target"),
     ((2, 4), (2, 4, M), (3, 4), "target")],
)
def test_loss_and_gradients_reject_shapes(query_shape, weights_shape, target_shape, param: str) -> None:
    args = (torch.zeros(query_shape, dtype=torch.long), torch.ones(weights_shape, dtype=F64),
            torch.zeros(target_shape, dtype=torch.long))
    with pytest.raises(ValueError, match=names(param)):
        random_model(C=2).loss_and_gradients(*args)


def test_loss_and_gradients_reject_integer_weights() -> None:
    tokens = torch.zeros(4, dtype=torch.long)
    with pytest.raises(ValueError, match=names("weights")):
        random_model(C=2).loss_and_gradients(tokens, torch.ones(4, M, dtype=torch.long), tokens)


# ----------------------------------------------------------------------------------------------
# Bad input
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "x",
    [random_tokens(3, 5)[0], random_tokens(3, 1), random_tokens(3, 5, C=2),
     torch.zeros(1, 3, 4, 5, dtype=torch.long),
     random_tokens(3, 5).double(), torch.tensor([[0, 1, M]]), torch.tensor([[-1, 1, 2]]), [[0, 1, 2]]],
    ids=["1d", "T=1", "C mismatch", "4d", "float", "token M", "token -1", "list"],
)
def test_forward_rejects_bad_x(x) -> None:
    model = random_model(C=3)
    with pytest.raises(ValueError, match=names("x")):
        model(x)
    with pytest.raises(ValueError, match=names("x")):
        model.attention(x)


@pytest.mark.parametrize(("args", "param"), [((1,), "M"), ((M, 0), "configs"), ((M, 1, "normal"), "init"),
                                             ((M, 1.5), "configs"), ((5.0,), "M")])
def test_model_rejects(args, param: str) -> None:
    with pytest.raises(ValueError, match=names(param)):
        YZModel(*args)


@pytest.mark.parametrize(
    ("args", "param"), [((1, "zero"), "M"), ((M, "gaussian"), "init"), ((M, None), "init")]
)
def test_init_params_rejects(args, param: str) -> None:
    with pytest.raises(ValueError, match=names(param)):
        init_params(*args)


@pytest.mark.parametrize(
    ("Y", "Z", "param"),
    [
        (torch.zeros(M, M, dtype=F64), torch.zeros(M, M, dtype=F64), "Y"),
        (torch.zeros(2, M, M - 1, dtype=F64), torch.zeros(2, M, M - 1, dtype=F64), "Y"),
        (torch.zeros(2, M, M, dtype=torch.long), torch.zeros(2, M, M, dtype=torch.long), "Y"),
        (torch.zeros(2, M, M, dtype=F64), torch.zeros(3, M, M, dtype=F64), "Z"),
        (torch.zeros(2, M, M, dtype=F64), torch.zeros(2, M, M, dtype=torch.float32), "Z"),
        (torch.zeros(2, M, M, dtype=F64), torch.full((2, M, M), float("nan"), dtype=F64), "Z"),
    ],
)
def test_from_params_rejects(Y, Z, param: str) -> None:
    with pytest.raises(ValueError, match=names(param)):
        YZModel.from_params(Y, Z)


def test_attended_rejects_bad_query() -> None:
    model = random_model(C=2)
    counts = torch.ones(2, M, dtype=F64)
    for q in (torch.tensor([0, M]), torch.tensor([0.0, 1.0])):
        with pytest.raises(ValueError, match=names("query")):
            model.attended(q, counts)


def test_inits_constant() -> None:
    assert INITS == ("zero", "uniform")


@pytest.mark.parametrize(
    ("call", "param"),
    [(lambda m: m.decode(torch.ones(4, M, dtype=F64)), "f"),
     (lambda m: m.decode(torch.ones(3, 4, M + 1, dtype=F64)), "f"),
     (lambda m: m.decode(torch.ones(3, 4, M, dtype=torch.long)), "f"),
     (lambda m: m.attended(torch.tensor([0, 1]), torch.ones(3, M, dtype=F64)), "weights"),
     (lambda m: m.attended(torch.tensor([0, 1]), torch.ones(2, M, dtype=torch.long)), "weights"),
     (lambda m: m.attended(torch.zeros(2, 2, 2, dtype=torch.long), torch.ones(2, M, dtype=F64)), "query")],
)
def test_decode_and_attended_reject(call, param: str) -> None:
    with pytest.raises(ValueError, match=names(param)):
        call(random_model(C=3))
