"""Training the Y/Z model: separate learning rates ``eta_Y``, ``eta_Z`` per configuration, SGD with
momentum or Adam, sampled sequences of length ``T`` or the long-sequence limit (Lemma 2).

All ``C`` configurations train in one stacked model. Configurations with the same seed share that
seed's initialization and mini-batches, so a configuration trained in a stack gives the same
numbers as the same configuration trained alone. Each seed owns one ``torch.Generator``: it first
draws the initial ``(Y, Z)`` (for ``init="uniform"``), then the batches. The gradients are Lemma 1's
closed form (:meth:`~scansnap.model.YZModel.loss_and_gradients`), not autograd.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from scansnap import device as device_mod
from scansnap._checks import check_choice, check_fraction, check_int, check_positive, check_tensor
from scansnap.data import SequenceClasses
from scansnap.model import INITS, YZModel, init_params, token_counts
from scansnap.model_options import ModelOptions, OptionsModel, head_params

__all__ = ["OPTIMIZERS", "Adam", "History", "MomentumSGD", "log_steps", "train"]

OPTIMIZERS = ("sgd", "adam")
LIMITS = ("sampled", "population")


class MomentumSGD:
    """SGD with heavy-ball momentum and one learning rate per configuration (torch.optim.SGD's rule): the
    optimizer of the paper's synthetic experiments (momentum 0.9 in Figures 4 and 6; Chapter 2 measures
    how far it is from the theory's plain SGD).

    ``buf <- grad`` on the first step, then ``buf <- momentum * buf + grad``; ``p <- p - lr * buf``.

    Args:
        params: tensors of shape ``(C, ...)``.
        lrs: one ``(C,)`` learning-rate tensor per parameter.
        momentum: in ``[0, 1)``.
    """

    def __init__(self, params: Sequence[torch.Tensor], lrs: Sequence[torch.Tensor], momentum: float = 0.9):
        self.params = list(params)
        self.lrs = _per_param(lrs, self.params)
        self.momentum = check_fraction("momentum", momentum)
        self.bufs: list[torch.Tensor | None] = [None] * len(self.params)

    @torch.no_grad()
    def step(self) -> None:
        """Apply one update from each parameter's ``.grad``."""
        for i, (p, lr) in enumerate(zip(self.params, self.lrs, strict=True)):
            buf = self.bufs[i]
            buf = p.grad.clone() if buf is None else buf.mul_(self.momentum).add_(p.grad)
            self.bufs[i] = buf
            p.sub_(lr * buf)


class Adam:
    """Adam with one learning rate per configuration (torch.optim.Adam's rule, no weight decay): the
    optimizer of the paper's Figure 5 (claim C37).

    Args:
        params: tensors of shape ``(C, ...)``.
        lrs: one ``(C,)`` learning-rate tensor per parameter.
        betas: decay rates, each in ``[0, 1)``.
        eps: added to the denominator, > 0.
    """

    def __init__(
        self,
        params: Sequence[torch.Tensor],
        lrs: Sequence[torch.Tensor],
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
    ):
        self.params = list(params)
        self.lrs = _per_param(lrs, self.params)
        self.b1 = check_fraction("betas[0]", betas[0])
        self.b2 = check_fraction("betas[1]", betas[1])
        self.eps = check_positive("eps", eps)
        self.m = [torch.zeros_like(p) for p in self.params]
        self.v = [torch.zeros_like(p) for p in self.params]
        self.t = 0

    @torch.no_grad()
    def step(self) -> None:
        """Apply one update from each parameter's ``.grad``."""
        self.t += 1
        bc1 = 1 - self.b1**self.t
        bc2_sqrt = (1 - self.b2**self.t) ** 0.5
        for p, lr, m, v in zip(self.params, self.lrs, self.m, self.v, strict=True):
            m.mul_(self.b1).add_(p.grad, alpha=1 - self.b1)
            v.mul_(self.b2).addcmul_(p.grad, p.grad, value=1 - self.b2)
            p.sub_((lr / bc1) * m / (v.sqrt() / bc2_sqrt + self.eps))


def _per_param(lrs: Sequence[torch.Tensor], params: list[torch.Tensor]) -> list[torch.Tensor]:
    lrs = list(lrs)
    if len(lrs) != len(params):
        raise ValueError(f"lrs: need one learning-rate tensor per parameter ({len(params)}); got {len(lrs)}")
    return [_per_config(lr, p) for lr, p in zip(lrs, params, strict=True)]


def _per_config(lr: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    check_tensor("lr", lr, shape=(p.shape[0],), floating=True)
    if not (lr > 0).all():
        raise ValueError(f"lr: every learning rate must be > 0; got {lr.tolist()}")
    return lr.to(p.dtype).reshape(-1, *([1] * (p.ndim - 1)))


def log_steps(steps: int, num: int = 20) -> list[int]:
    """About ``num`` log-spaced snapshot steps in ``[0, steps]``, always including 0, 1 and ``steps`` (the
    time grid of Chapter 3's checks of Figure 8 and Theorem 1)."""
    check_int("steps", steps, low=0)
    check_int("num", num, low=2)
    grid = np.unique(np.round(np.geomspace(1, max(steps, 1), num)).astype(int))
    return sorted({0, *grid.tolist(), steps} - ({1} if steps == 0 else set()))


@dataclass
class History:
    """What :func:`train` returns.

    Attributes:
        steps: snapshot steps (number of updates made before the snapshot), ``(S,)``.
        loss: ``(C, steps)``, the training loss at every step (before that step's update); in the
            population limit the exact expected loss.
        attention: ``(S, C, K, M)``, Lemma 2's ``f_n = c_n / 1^T c_n`` of every class at each snapshot.
        eta_Y, eta_Z: ``(C,)`` learning rates; seeds: ``(C,)`` long.
        Y, Z: ``(C, M, M)`` final parameters.
        settings: every other argument of :func:`train`.
        bias: the final positional bias ``(C, L)`` (:class:`~scansnap.model_options.ModelOptions`), else None.

    With ``H > 1`` heads, ``attention`` is ``(S, C, H, K, M)`` and ``Y``, ``Z`` are ``(C, H, M, M)``.
    """

    steps: torch.Tensor
    loss: torch.Tensor
    attention: torch.Tensor
    eta_Y: torch.Tensor
    eta_Z: torch.Tensor
    seeds: torch.Tensor
    Y: torch.Tensor
    Z: torch.Tensor
    settings: dict = field(default_factory=dict)
    bias: torch.Tensor | None = None

    def at(self, step: int) -> torch.Tensor:
        """Attention snapshot ``(C, K, M)`` at ``step`` (must be one of ``self.steps``)."""
        hits = torch.nonzero(self.steps == step).flatten()
        if len(hits) == 0:
            raise ValueError(f"step: must be one of the snapshot steps {self.steps.tolist()}; got {step}")
        return self.attention[hits[0]]


def train(
    classes: SequenceClasses,
    eta_Y: float | Sequence[float] | torch.Tensor,
    eta_Z: float | Sequence[float] | torch.Tensor,
    *,
    steps: int = 100,
    batch: int = 128,
    T: int = 128,
    optimizer: str = "sgd",
    momentum: float = 0.9,
    betas: tuple[float, float] = (0.9, 0.999),
    init: str = "zero",
    seed: int | Sequence[int] | torch.Tensor = 0,
    limit: str = "sampled",
    snapshot_steps: Sequence[int] | None = None,
    dtype: torch.dtype = torch.float64,
    progress: Callable[[int], None] | None = None,
    lr_schedule: Sequence[float] | None = None,
    options: ModelOptions | None = None,
    device: str | torch.device | None = None,
) -> History:
    """Train ``C`` configurations of :class:`~scansnap.model.YZModel` at once (paper Sec. 8 protocol).

    Args:
        classes: the data (:class:`~scansnap.data.SequenceClasses`).
        eta_Y, eta_Z: learning rates of ``Y`` and ``Z``, scalars or length-``C`` vectors, > 0.
        steps: number of updates (>= 1).
        batch, T: mini-batch size (>= 1) and sequence length (>= 2) for ``limit="sampled"``.
        optimizer: ``"sgd"`` (with ``momentum`` in [0, 1)) or ``"adam"`` (with ``betas``).
        init: ``"zero"`` or ``"uniform"``.
        seed: one seed, or one per configuration (``(C,)``); same seed, same init and batches.
        limit: ``"sampled"`` (sequences of length ``T``) or ``"population"`` (Lemma 2's
            ``T -> inf`` limit with every class weighted ``1/K``: no sampling noise).
        snapshot_steps: steps at which to record the attention (default :func:`log_steps`).
        dtype: parameter dtype.
        progress: called with the step index after each update (e.g. a progress bar; the one progress hook
            of the library: ``scansnap.experiments.base.Progress``).
        lr_schedule: one factor > 0 per step on both learning rates (default: constant rates), e.g. the
            warm-up ``(1 - momentum^(t+1)) / (1 - momentum)`` that heavy-ball momentum applies to a
            constant gradient.
        options: the model's options beyond the paper (residual connection, positional bias, several heads;
            :class:`~scansnap.model_options.ModelOptions`; default none: :class:`~scansnap.model.YZModel`).
            The bias trains with ``bias_rate * eta_Z`` and needs ``limit="sampled"`` with ``positions = T - 1``.
        device: where to compute (:func:`scansnap.device.resolve`: default ``$SCANSNAP_DEVICE``, else the CPU).
            The initialization and the batches are drawn on the CPU from each seed's CPU generator and moved there,
            so a seed draws the same on every device; the :class:`History` comes back on the CPU.

    Returns:
        :class:`History`.
    """
    check_int("steps", steps, low=1)
    check_int("batch", batch, low=1)
    check_int("T", T, low=2)
    check_choice("optimizer", optimizer, OPTIMIZERS)
    check_choice("init", init, INITS)
    check_choice("limit", limit, LIMITS)
    eta_Y, eta_Z, seeds = _broadcast_configs(eta_Y, eta_Z, seed)
    snaps = sorted(set(log_steps(steps) if snapshot_steps is None else snapshot_steps))
    if not snaps:
        raise ValueError("snapshot_steps: must hold at least one step in [0, steps]; got none")
    for s in snaps:
        check_int("snapshot_steps", s, low=0, high=steps)

    dev = device_mod.resolve(device)
    unique_seeds, seed_index = torch.unique(seeds, return_inverse=True)
    gens = [torch.Generator().manual_seed(int(s)) for s in unique_seeds]  # CPU draws: the same on every device
    model = _model(classes.M, init, gens, seed_index, dtype, options, limit, T).to(dev)
    on_dev = classes.to(dev)
    ext = isinstance(model, OptionsModel)
    params = model.parameters_list() if ext else [model.Y, model.Z]
    contexts = ext and model.P is not None  # a positional bias reads the sequences, not token counts
    lrs = [eta_Y.to(dev), eta_Z.to(dev)] + ([eta_Z.to(dev) * options.bias_rate] if len(params) > 2 else [])
    opt = MomentumSGD(params, lrs, momentum=momentum) if optimizer == "sgd" else Adam(params, lrs, betas=betas)

    if lr_schedule is not None:
        lr_schedule = [check_positive("lr_schedule", v) for v in lr_schedule]
        if len(lr_schedule) != steps:
            raise ValueError(f"lr_schedule: must hold one factor per step ({steps}); got {len(lr_schedule)}")
    base_lrs = list(opt.lrs)
    losses = torch.empty(len(seeds), steps, dtype=dtype, device=dev)
    attention = []
    seed_index = seed_index.to(dev)
    with device_mod.full_precision():
        for t in range(steps + 1):
            if t in snaps:
                with torch.no_grad():
                    attention.append(model.population(on_dev) if ext else on_dev.population(model.Z.detach()))
            if t == steps:
                break
            query, weights, target = _inputs(classes, on_dev, limit, gens, seed_index, batch, T, dtype, contexts)
            loss, model.Y.grad, model.Z.grad, *bias_grad = model.loss_and_gradients(query, weights, target)  # Lemma 1
            if bias_grad:
                model.P.grad = bias_grad[0]
            if lr_schedule is not None:
                opt.lrs = [lr * lr_schedule[t] for lr in base_lrs]
            opt.step()
            losses[:, t] = loss
            if progress is not None:
                progress(t)

    settings = dict(
        steps=steps, batch=batch, T=T, optimizer=optimizer, momentum=momentum, betas=tuple(betas),
        init=init, limit=limit, dtype=str(dtype).replace("torch.", ""),
    )
    if lr_schedule is not None:
        settings["lr_schedule"] = tuple(lr_schedule)
    if ext:
        settings["options"] = options.to_dict()
    return History(
        steps=torch.tensor(snaps), loss=losses.cpu(), attention=torch.stack(attention).cpu(),
        eta_Y=eta_Y, eta_Z=eta_Z, seeds=seeds,
        Y=model.Y.detach().cpu().clone(), Z=model.Z.detach().cpu().clone(), settings=settings,
        bias=model.P.detach().cpu().clone() if ext and model.P is not None else None,
    )


def _model(
    M: int, init: str, gens: list[torch.Generator], seed_index: torch.Tensor, dtype: torch.dtype,
    options: ModelOptions | None, limit: str, T: int,
) -> YZModel:
    """The stacked model: :class:`~scansnap.model.YZModel` with every option off, else an
    :class:`~scansnap.model_options.OptionsModel`; each seed's generator draws its initial parameters."""
    if options is None or not options.active:
        inits = [init_params(M, init, g, dtype) for g in gens]
        return YZModel.from_params(
            torch.stack([inits[i][0] for i in seed_index]), torch.stack([inits[i][1] for i in seed_index])
        )
    if options.positions and (limit != "sampled" or options.positions != T - 1):
        raise ValueError(f"options: a positional bias needs limit='sampled' and positions = T - 1 = {T - 1}; "
                         f"got limit={limit!r}, positions={options.positions}")
    inits = [head_params(M, options, init, g, dtype) for g in gens]
    return OptionsModel.from_params(torch.stack([inits[i][0] for i in seed_index]),
                                    torch.stack([inits[i][1] for i in seed_index]), options)


def _inputs(
    classes: SequenceClasses,
    on_dev: SequenceClasses,
    limit: str,
    gens: list[torch.Generator],
    seed_index: torch.Tensor,
    batch: int,
    T: int,
    dtype: torch.dtype,
    contexts: bool = False,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One step's ``(query (C, B), weights (C, B, M) in dtype, target (C, B))`` on ``on_dev``'s device; B = K in
    the population limit. ``classes`` draws the batches on the CPU (one per seed, with that seed's generator).
    Weights are made once per seed (an expanded view in the population limit). With ``contexts``, the
    contextual tokens ``(C, B, T-1)`` (long) instead of the weights (a positional bias needs them)."""
    C = len(seed_index)
    if limit == "population":
        K = on_dev.K
        return on_dev.query.expand(C, K), on_dev.probs.to(dtype).expand(C, K, on_dev.M), on_dev.next.expand(C, K)
    drawn = [classes.sample(batch, T, g) for g in gens]
    dev = on_dev.query.device
    x = torch.stack([d[0] for d in drawn]).to(dev)  # (S, B, T), one batch per distinct seed
    n = torch.stack([d[1] for d in drawn]).to(dev)  # (S, B)
    if contexts:
        return x[seed_index, :, -1], x[seed_index, :, :-1], on_dev.next[n[seed_index]]
    counts = token_counts(x[..., :-1], on_dev.M).to(dtype)  # (S, B, M)
    return x[seed_index, :, -1], counts[seed_index], on_dev.next[n[seed_index]]


def _broadcast_configs(
    eta_Y: float | Sequence[float] | torch.Tensor,
    eta_Z: float | Sequence[float] | torch.Tensor,
    seed: int | Sequence[int] | torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Broadcast learning rates and seeds to a common length ``C``."""
    eY = torch.atleast_1d(torch.as_tensor(eta_Y, dtype=torch.float64))
    eZ = torch.atleast_1d(torch.as_tensor(eta_Z, dtype=torch.float64))
    sd = torch.atleast_1d(torch.as_tensor(seed))
    for name, v in (("eta_Y", eY), ("eta_Z", eZ)):
        if v.ndim != 1 or not torch.isfinite(v).all() or not (v > 0).all():
            raise ValueError(f"{name}: must be a finite learning rate > 0 (scalar or 1-D); got {v.tolist()}")
    if sd.ndim != 1 or sd.is_floating_point() or (sd < 0).any():
        raise ValueError(f"seed: must be an integer >= 0 or a 1-D sequence of them; got {sd.tolist()}")
    C = max(len(eY), len(eZ), len(sd))
    for name, v in (("eta_Y", eY), ("eta_Z", eZ), ("seed", sd)):
        if len(v) not in (1, C):
            raise ValueError(f"{name}: length must be 1 or C={C} (the number of configurations); got {len(v)}")
    return eY.expand(C).clone(), eZ.expand(C).clone(), sd.long().expand(C).clone()
