"""scansnap.train: the batched trainer, its optimizers and its history."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from conftest import gen, names

from scansnap.data import SequenceClasses
from scansnap.model import YZModel, cross_entropy, init_params, token_counts
from scansnap.train import Adam, History, MomentumSGD, log_steps, train

F64 = torch.float64
SMALL_RUN = dict(steps=12, batch=16, T=20)
ETAS = [(1.0, 0.1), (2.0, 0.5), (0.5, 1.0)]
SEEDS = [3, 8]


@pytest.mark.parametrize(
    ("optimizer", "limit", "init"),
    [("sgd", "sampled", "zero"), ("sgd", "sampled", "uniform"), ("sgd", "population", "zero"),
     ("sgd", "population", "uniform"), ("adam", "sampled", "zero"), ("adam", "sampled", "uniform"),
     ("adam", "population", "zero"), ("adam", "population", "uniform")],
)
def test_batched_equals_separate_runs(small: SequenceClasses, optimizer: str, limit: str, init: str) -> None:
    """3 learning-rate pairs x 2 seeds trained as one stack give each configuration's solo numbers."""
    configs = list(itertools.product(ETAS, SEEDS))
    eta_Y = [e[0] for e, _ in configs]
    eta_Z = [e[1] for e, _ in configs]
    seeds = [s for _, s in configs]
    kw = dict(SMALL_RUN, optimizer=optimizer, limit=limit, init=init)
    stacked = train(small, eta_Y, eta_Z, seed=seeds, **kw)
    assert stacked.Y.shape == (6, 34, 34) and stacked.loss.shape == (6, 12)
    for c, ((eY, eZ), s) in enumerate(configs):
        alone = train(small, eY, eZ, seed=s, **kw)
        for name in ("Y", "Z", "loss", "attention"):
            a, b = getattr(stacked, name), getattr(alone, name)
            b = b[:, 0] if name == "attention" else b[0]
            a = a[:, c] if name == "attention" else a[c]
            assert (a - b).abs().max() <= 1e-12, (name, c)
    # the stack is not trivially constant: configurations differ
    assert (stacked.Z[0] - stacked.Z[2]).abs().max() > 1e-3


def test_determinism(small: SequenceClasses) -> None:
    kw = dict(SMALL_RUN, init="uniform")
    a = train(small, 1.0, 0.5, seed=4, **kw)
    b = train(small, 1.0, 0.5, seed=4, **kw)
    c = train(small, 1.0, 0.5, seed=5, **kw)
    for name in ("Y", "Z", "loss", "attention"):
        assert torch.equal(getattr(a, name), getattr(b, name)), name
        assert not torch.equal(getattr(a, name), getattr(c, name)), name
    # with zero init, only the batches depend on the seed
    z4 = train(small, 1.0, 0.5, seed=4, **SMALL_RUN)
    z5 = train(small, 1.0, 0.5, seed=5, **SMALL_RUN)
    assert torch.equal(z4.attention[0], z5.attention[0]) and not torch.equal(z4.loss, z5.loss)
    # in the population limit with zero init, the seed does not matter at all
    p4 = train(small, 1.0, 0.5, seed=4, limit="population", steps=5)
    p5 = train(small, 1.0, 0.5, seed=5, limit="population", steps=5)
    assert torch.equal(p4.Z, p5.Z) and torch.equal(p4.loss, p5.loss)


def _torch_reference(classes: SequenceClasses, optimizer: str, steps: int, eta_Y: float, eta_Z: float):
    """Population-limit training of one configuration with torch.optim (two parameter groups)."""
    model = YZModel(classes.M)
    groups = [{"params": [model.Y], "lr": eta_Y}, {"params": [model.Z], "lr": eta_Z}]
    opt = torch.optim.SGD(groups, momentum=0.9) if optimizer == "sgd" else torch.optim.Adam(groups)
    losses = []
    for _ in range(steps):
        loss = cross_entropy(model.decode(model.attended(classes.query, classes.probs)), classes.next)
        opt.zero_grad()
        loss.sum().backward()
        opt.step()
        losses.append(loss.item())
    return model.Y.detach()[0], model.Z.detach()[0], torch.tensor(losses, dtype=F64)


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_train_equals_torch_optim_on_a_real_loss(small: SequenceClasses, optimizer: str) -> None:
    eY, eZ = (1.0, 0.5) if optimizer == "sgd" else (0.05, 0.02)
    h = train(small, eY, eZ, steps=20, limit="population", optimizer=optimizer)
    Y, Z, loss = _torch_reference(small, optimizer, 20, eY, eZ)
    assert (h.Y[0] - Y).abs().max() <= 1e-12
    assert (h.Z[0] - Z).abs().max() <= 1e-12
    assert (h.loss[0] - loss).abs().max() <= 1e-12
    assert Z.abs().max() > 1e-2, "Z must have moved"


def _autograd_trainer(classes: SequenceClasses, eta_Y: list[float], eta_Z: list[float], seeds: list[int],
                      optimizer: str, limit: str, init: str, steps: int, batch: int, T: int):
    """The trainer as it was before Lemma 1's closed form: autograd through attended/decode/cross_entropy,
    with the same per-seed generators (init first, then batches) and the package's optimizers."""
    uniq = sorted(set(seeds))
    gens = {s: torch.Generator().manual_seed(s) for s in uniq}
    inits = {s: init_params(classes.M, init, gens[s]) for s in uniq}
    model = YZModel.from_params(torch.stack([inits[s][0] for s in seeds]), torch.stack([inits[s][1] for s in seeds]))
    lrs = [torch.tensor(eta_Y, dtype=F64), torch.tensor(eta_Z, dtype=F64)]
    opt = MomentumSGD([model.Y, model.Z], lrs) if optimizer == "sgd" else Adam([model.Y, model.Z], lrs)
    losses = []
    for _ in range(steps):
        if limit == "population":
            query, weights, target = classes.query, classes.probs, classes.next
        else:
            drawn = {s: classes.sample(batch, T, gens[s]) for s in uniq}
            x = torch.stack([drawn[s][0] for s in seeds])
            query, weights = x[..., -1], token_counts(x[..., :-1], classes.M)
            target = classes.next[torch.stack([drawn[s][1] for s in seeds])]
        loss = cross_entropy(model.decode(model.attended(query, weights)), target)
        model.zero_grad(set_to_none=False)
        loss.sum().backward()
        opt.step()
        losses.append(loss.detach())
    return model.Y.detach(), model.Z.detach(), torch.stack(losses, dim=1)


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
@pytest.mark.parametrize(("limit", "init"), [("sampled", "zero"), ("sampled", "uniform"), ("population", "uniform")])
def test_train_equals_autograd_trainer(small: SequenceClasses, optimizer: str, limit: str, init: str) -> None:
    """Closed-form gradients (YZModel.loss_and_gradients) train exactly like autograd did."""
    eta_Y, eta_Z, seeds = [1.0, 3.0, 0.5], [0.5, 2.0, 1.0], [4, 9, 4]
    if optimizer == "adam":
        eta_Y, eta_Z = [e / 20 for e in eta_Y], [e / 20 for e in eta_Z]
    kw = dict(steps=8, batch=16, T=20)
    h = train(small, eta_Y, eta_Z, seed=seeds, optimizer=optimizer, limit=limit, init=init, **kw)
    Y, Z, loss = _autograd_trainer(small, eta_Y, eta_Z, seeds, optimizer, limit, init, **kw)
    assert (h.Y - Y).abs().max() <= 1e-10
    assert (h.Z - Z).abs().max() <= 1e-10
    assert (h.loss - loss).abs().max() <= 1e-10
    Z0 = torch.stack([init_params(small.M, init, torch.Generator().manual_seed(s))[1] for s in seeds])
    assert (Z - Z0).abs().max() > 1e-2, "Z must have moved"


def _random_grad_run(make_ours, make_torch, C: int = 3, steps: int = 20):
    """Drive our optimizer on a (C, 4, 5) and a (C, 6) parameter and torch's per configuration with
    the same random gradients; return the max abs difference of the final parameters."""
    g = gen(21)
    p0 = [torch.randn(C, 4, 5, generator=g, dtype=F64), torch.randn(C, 6, generator=g, dtype=F64)]
    lrs = [torch.tensor([0.1, 0.03, 0.5], dtype=F64), torch.tensor([0.2, 0.01, 0.07], dtype=F64)]
    ours = [p.clone().requires_grad_(True) for p in p0]
    theirs = [[p[c].clone().requires_grad_(True) for p in p0] for c in range(C)]
    opt = make_ours(ours, lrs)
    topts = [make_torch([{"params": [theirs[c][i]], "lr": lrs[i][c].item()} for i in range(2)])
             for c in range(C)]
    for _ in range(steps):
        grads = [torch.randn(p.shape, generator=g, dtype=F64) for p in p0]
        for p, gr in zip(ours, grads, strict=True):
            p.grad = gr.clone()
        opt.step()
        for c in range(C):
            for i in range(2):
                theirs[c][i].grad = grads[i][c].clone()
            topts[c].step()
    moved = max((o - p).abs().max().item() for o, p in zip(ours, p0, strict=True))
    diff = max((ours[i][c] - theirs[c][i]).abs().max().item() for c in range(C) for i in range(2))
    return diff, moved


@pytest.mark.parametrize("momentum", [0.9, 0.0, 0.5])
def test_momentum_sgd_equals_torch(momentum: float) -> None:
    diff, moved = _random_grad_run(lambda p, lr: MomentumSGD(p, lr, momentum=momentum),
                                   lambda groups: torch.optim.SGD(groups, momentum=momentum))
    assert diff <= 1e-12 and moved > 0.1


@pytest.mark.parametrize("betas", [(0.9, 0.999), (0.5, 0.9)])
def test_adam_equals_torch(betas: tuple[float, float]) -> None:
    diff, moved = _random_grad_run(lambda p, lr: Adam(p, lr, betas=betas, eps=1e-8),
                                   lambda groups: torch.optim.Adam(groups, betas=betas, eps=1e-8))
    assert diff <= 1e-12 and moved > 0.1


def test_population_loss(small: SequenceClasses) -> None:
    """Zero init predicts uniformly: the first loss is ln M exactly. Plain gradient descent (no
    momentum) with a small step on the exact expected loss decreases it at every step."""
    h = train(small, 0.5, 0.5, steps=40, limit="population", momentum=0.0)
    assert abs(h.loss[0, 0].item() - math.log(34)) < 1e-14
    assert (h.loss[0].diff() < 0).all()
    assert h.loss[0, -1] < 0.5 * math.log(34)
    hm = train(small, 1.0, 1.0, steps=40, limit="population")  # momentum 0.9: not monotone, but lower
    assert hm.loss[0, -1] < hm.loss[0, 0] - 1.0


def test_sampled_loss_starts_at_log_m(small: SequenceClasses) -> None:
    h = train(small, 1.0, 1.0, **SMALL_RUN)
    assert abs(h.loss[0, 0].item() - math.log(34)) < 1e-14
    assert h.loss[0, -1] < h.loss[0, 0]


@pytest.mark.parametrize("steps", [0, 1, 2, 3, 10, 100, 1000, 12345])
def test_log_steps(steps: int) -> None:
    s = log_steps(steps)
    assert s == sorted(set(s))
    assert s[0] == 0 and s[-1] == steps
    assert all(0 <= v <= steps for v in s)
    if steps >= 1:
        assert 1 in s
    assert len(s) <= 22
    if steps >= 1000:
        assert len(s) >= 15
        ratios = [b / a for a, b in zip(s[1:-1], s[2:], strict=True)]
        assert max(ratios) < 2.5, "roughly geometric spacing"
    assert log_steps(0) == [0] and log_steps(1) == [0, 1]


def test_history_snapshots(small: SequenceClasses) -> None:
    h = train(small, [1.0, 2.0], [0.5, 0.5], seed=[0, 1], **SMALL_RUN)
    assert isinstance(h, History)
    assert h.steps.tolist() == log_steps(12) and 10 not in log_steps(12)
    assert h.attention.shape == (len(log_steps(12)), 2, 2, 34)
    # zero init: the step-0 snapshot is population(0) = P(l|n)
    torch.testing.assert_close(h.at(0), small.population(torch.zeros(2, 34, 34, dtype=F64)), rtol=0, atol=0)
    torch.testing.assert_close(h.at(0)[0], small.probs, rtol=1e-15, atol=1e-15)
    torch.testing.assert_close(h.at(12), small.population(h.Z), rtol=0, atol=0)
    for i, s in enumerate(h.steps.tolist()):
        assert torch.equal(h.at(s), h.attention[i])
    assert not torch.equal(h.at(12), h.at(0))
    assert h.eta_Y.tolist() == [1.0, 2.0] and h.eta_Z.tolist() == [0.5, 0.5] and h.seeds.tolist() == [0, 1]
    assert h.settings["steps"] == 12 and h.settings["limit"] == "sampled" and h.settings["dtype"] == "float64"
    with pytest.raises(ValueError, match=names("step")):
        h.at(10)  # log_steps(12) skips 10
    with pytest.raises(ValueError, match=names("step")):
        h.at(13)


def test_custom_snapshot_steps_and_progress(small: SequenceClasses) -> None:
    seen = []
    h = train(small, 1.0, 1.0, snapshot_steps=[5, 0, 5, 12], progress=seen.append, **SMALL_RUN)
    assert h.steps.tolist() == [0, 5, 12]
    assert seen == list(range(12))
    full = train(small, 1.0, 1.0, snapshot_steps=range(13), **SMALL_RUN)
    assert torch.equal(h.at(5), full.at(5))


def test_lr_schedule_scales_the_rates_step_by_step(small: SequenceClasses) -> None:
    """A constant factor c is the rate c * eta; a ramp differs from both ends; the rates kept in History stay."""
    run = dict(steps=6, optimizer="sgd", momentum=0.0, limit="population")
    scaled = train(small, 1.0, 0.5, lr_schedule=[3.0] * 6, **run)
    direct = train(small, 3.0, 1.5, **run)
    assert (scaled.Y - direct.Y).abs().max() < 1e-12 and (scaled.Z - direct.Z).abs().max() < 1e-12
    assert scaled.eta_Y.tolist() == [1.0] and scaled.settings["lr_schedule"] == (3.0,) * 6
    ramp = train(small, 1.0, 0.5, lr_schedule=[1, 1, 1, 3, 3, 3], **run)
    assert (ramp.Z - direct.Z).abs().max() > 0 and (ramp.Z - train(small, 1.0, 0.5, **run).Z).abs().max() > 0
    with pytest.raises(ValueError, match=names("lr_schedule")):
        train(small, 1.0, 0.5, lr_schedule=[1.0] * 5, **run)


def test_broadcasting_of_configs(small: SequenceClasses) -> None:
    h = train(small, [1.0, 2.0, 3.0], 0.5, seed=7, steps=3, batch=4, T=5)
    assert h.eta_Z.tolist() == [0.5] * 3 and h.seeds.tolist() == [7] * 3
    h = train(small, torch.tensor([1.0, 2.0]), torch.tensor(0.5), seed=torch.tensor([1, 2]),
              steps=3, batch=4, T=5)
    assert h.Y.shape[0] == 2


def test_float32(small: SequenceClasses) -> None:
    h = train(small, 1.0, 1.0, dtype=torch.float32, **SMALL_RUN)
    h64 = train(small, 1.0, 1.0, **SMALL_RUN)
    assert h.Y.dtype == h.loss.dtype == torch.float32
    assert (h.Z.double() - h64.Z).abs().max() < 1e-4


# ----------------------------------------------------------------------------------------------
# Bad input
# ----------------------------------------------------------------------------------------------


NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize(
    ("kwargs", "param"),
    [
        (dict(eta_Y=0.0), "eta_Y"),
        (dict(eta_Y=-1.0), "eta_Y"),
        (dict(eta_Y=NAN), "eta_Y"),
        (dict(eta_Y=INF), "eta_Y"),
        (dict(eta_Y=[1.0, 0.0]), "eta_Y"),
        (dict(eta_Y=[[1.0, 2.0]]), "eta_Y"),
        (dict(eta_Z=0.0), "eta_Z"),
        (dict(eta_Z=-0.5), "eta_Z"),
        (dict(eta_Z=NAN), "eta_Z"),
        (dict(eta_Z=[1.0, NAN]), "eta_Z"),
        (dict(eta_Y=[1.0, 2.0], eta_Z=[1.0, 2.0, 3.0]), "eta_Y"),
        (dict(eta_Y=[1.0, 2.0, 3.0], eta_Z=[1.0, 2.0]), "eta_Z"),
        (dict(eta_Y=[1.0, 2.0], seed=[0, 1, 2]), "eta_Y"),
        (dict(eta_Y=[1.0, 2.0, 3.0], seed=[0, 1]), "seed"),
        (dict(seed=-1), "seed"),
        (dict(seed=1.5), "seed"),
        (dict(steps=0), "steps"),
        (dict(steps=2.0), "steps"),
        (dict(batch=0), "batch"),
        (dict(T=1), "T"),
        (dict(optimizer="rmsprop"), "optimizer"),
        (dict(init="normal"), "init"),
        (dict(limit="infinite"), "limit"),
        (dict(snapshot_steps=[0, 6]), "snapshot_steps"),
        (dict(snapshot_steps=[-1]), "snapshot_steps"),
        (dict(snapshot_steps=[]), "snapshot_steps"),
        (dict(momentum=1.0), "momentum"),
        (dict(momentum=1.5), "momentum"),
        (dict(momentum=-0.1), "momentum"),
        (dict(momentum=NAN), "momentum"),
        (dict(optimizer="adam", betas=(1.0, 0.999)), "betas"),
        (dict(optimizer="adam", betas=(0.9, -0.1)), "betas"),
    ],
)
def test_train_rejects(small: SequenceClasses, kwargs: dict, param: str) -> None:
    args = dict(eta_Y=1.0, eta_Z=1.0, steps=5, batch=4, T=5) | kwargs
    with pytest.raises(ValueError, match=names(param)):
        train(small, **args)


@pytest.mark.parametrize("cls", [MomentumSGD, Adam])
@pytest.mark.parametrize(
    "lrs",
    [[torch.tensor([0.1, 0.0], dtype=F64)], [torch.tensor([0.1, NAN], dtype=F64)],
     [torch.tensor([0.1], dtype=F64)],
     [torch.tensor([1, 2])], [0.1], []],
    ids=["zero", "nan", "wrong length", "integer", "not a tensor", "missing"],
)
def test_optimizers_reject_bad_lrs(cls, lrs) -> None:
    with pytest.raises(ValueError, match=r"^lrs?\b"):
        cls([torch.zeros(2, 3, dtype=F64, requires_grad=True)], lrs)


def test_optimizers_reject_bad_hyperparameters() -> None:
    p, lr = [torch.zeros(2, 3, dtype=F64, requires_grad=True)], [torch.ones(2, dtype=F64)]
    with pytest.raises(ValueError, match=names("momentum")):
        MomentumSGD(p, lr, momentum=1.0)
    with pytest.raises(ValueError, match=names("eps")):
        Adam(p, lr, eps=0.0)
    with pytest.raises(ValueError, match=names("betas")):
        Adam(p, lr, betas=(0.9, 1.0))


@pytest.mark.parametrize(("args", "param"), [((-1,), "steps"), ((10, 1), "num"), ((2.5,), "steps")])
def test_log_steps_rejects(args, param: str) -> None:
    with pytest.raises(ValueError, match=names(param)):
        log_steps(*args)


# ----------------------------------------------------------------------------------------------
# Chapter 5 (Figures 4 and 5): a batched learning-rate sweep on sampled sequences, each
# configuration against torch.optim (autograd, one SGD-momentum or Adam per configuration)
# ----------------------------------------------------------------------------------------------


def _torch_optim_sampled(classes: SequenceClasses, optimizer: str, eta_Y: float, eta_Z: float, seed: int,
                         steps: int, batch: int, T: int):
    """One configuration trained on sampled sequences with torch.optim (two parameter groups, autograd),
    with the batches the trainer draws for ``seed`` (zero init draws nothing: batches come first)."""
    g = torch.Generator().manual_seed(seed)
    model = YZModel(classes.M)
    groups = [{"params": [model.Y], "lr": eta_Y}, {"params": [model.Z], "lr": eta_Z}]
    opt = torch.optim.SGD(groups, momentum=0.9) if optimizer == "sgd" else torch.optim.Adam(groups)
    losses = []
    for _ in range(steps):
        x, n = classes.sample(batch, T, g)
        weights = token_counts(x[:, :-1], classes.M)
        loss = cross_entropy(model.decode(model.attended(x[:, -1], weights)), classes.next[n])
        opt.zero_grad()
        loss.sum().backward()
        opt.step()
        losses.append(loss.item())
    return model.Y.detach()[0], model.Z.detach()[0], torch.tensor(losses, dtype=F64)


@pytest.mark.parametrize(
    ("optimizer", "eta_Y", "eta_Z"),
    [("sgd", [1.0, 2.0, 5.0, 10.0], [1.0] * 4),  # Fig. 4: eta_Y / eta_Z in {1, 2, 5, 10} at eta_Z = 1
     ("adam", [0.03, 0.1, 0.3, 1.0], [0.03, 0.1, 0.3, 1.0])],  # Fig. 5: one Adam learning rate for Y and Z
)
def test_batched_sweep_equals_torch_optim_per_configuration(small: SequenceClasses, optimizer: str,
                                                            eta_Y: list[float], eta_Z: list[float]) -> None:
    """The whole sweep in one train() call (one seed, as the figures use per seed) equals torch.optim.SGD
    (momentum 0.9) / torch.optim.Adam run separately for each configuration, to 1e-10 in float64."""
    kw = dict(steps=10, batch=32, T=40)
    h = train(small, eta_Y, eta_Z, seed=7, optimizer=optimizer, **kw)
    for c, (eY, eZ) in enumerate(zip(eta_Y, eta_Z, strict=True)):
        Y, Z, loss = _torch_optim_sampled(small, optimizer, eY, eZ, 7, **kw)
        assert (h.Y[c] - Y).abs().max() <= 1e-10, c
        assert (h.Z[c] - Z).abs().max() <= 1e-10, c
        assert (h.loss[c] - loss).abs().max() <= 1e-10, c
        assert Z.abs().max() > 1e-2, "Z must have moved"
    assert (h.Z[0] - h.Z[-1]).abs().max() > 1e-2, "the configurations differ"
