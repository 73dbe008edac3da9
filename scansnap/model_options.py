"""Options of the Y/Z model beyond the paper's assumptions (paper Sec. 7; Chapter 9), each off by default.

:class:`ModelOptions` switches them on; :class:`OptionsModel` (a :class:`~scansnap.model.YZModel`) carries
them, with Lemma 1's closed-form gradients extended to each (:meth:`OptionsModel.loss_and_gradients`, the
trainer's engine, checked against autograd through :meth:`OptionsModel.forward`). With every option off the
trainer keeps using :class:`~scansnap.model.YZModel` itself, so nothing that existed changes.

Per head ``h`` and sample (query ``m``, contextual tokens ``x_t`` at distance ``T - t`` from the query):

* **positional bias** (``positions = L``, the number of contextual positions ``T - 1``): a learnable bias
  ``p_t`` on the logit of position ``t``, ``b_t = softmax_t(z_{m x_t} + p_t)``, as in relative schemes
  (T5, ALiBi): with one query position, a bias per position is a bias per relative distance. Parameter
  ``P`` ``(C, L)`` (``(C, H, L)`` with heads), ``P[..., t]`` the bias of position ``t`` (the last is next to
  the query), starting at 0 and trained with learning rate ``bias_rate * eta_Z``.
* **residual connection** (the authors' ``model2.residual``): the query's own one-hot ``e_m`` is added to the
  attended distribution before the normalization, ``v = f + e_m``, ``v~ = v / ||v||_2``.
* **several heads** (``heads = H``): ``H`` independent attention matrices ``Z_h`` and decoders ``Y_h``; the
  logits are ``sum_h Y_h^T v~_h``, i.e. one decoder reading the concatenation ``[v~_1; ..; v~_H]``, as the
  output projection ``W_O`` of standard multi-head attention reads the concatenated heads. Why this
  combination: each head keeps its own coordinates (the decoder can tell which head attended to a token,
  which an average of the heads' distributions would blur), and Lemma 1 holds head by head with the shared
  output error ``e_n - alpha``. Heads started from the same ``(Y, Z)`` stay equal forever: ``H`` tied heads
  are one head of ``H`` times the width, which trains like the single-head model with ``eta_Y`` times ``H``
  and ``eta_Z`` divided by ``H``.

Lemma 1 extended (``D = (softmax(logits) - e_n) / B``, ``g_h = Y_h D``, ``r = P_perp(v~) g / ||v||``,
``s = r - (f . r) 1``): ``dL/dY_h = v~ D^T``, ``dL/dz_m = f * s`` (Jacobian of ``f`` is
``diag(f) - f f^T``; without the residual ``f . r = 0``, which gives Lemma 1's form), and
``dL/dp_t = b_t s_{x_t}``. Shapes: ``Y``, ``Z`` ``(C, M, M)`` (``(C, H, M, M)`` with ``H > 1`` heads).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch

from scansnap._checks import check_choice, check_int, check_positive, check_tensor
from scansnap.data import SequenceClasses, attended
from scansnap.model import INITS, YZModel, _cross_entropy_and_error, init_params

__all__ = ["ModelOptions", "OptionsModel", "head_params"]


@dataclass(frozen=True)
class ModelOptions:
    """Which options the model has (all off by default): Sec. 7's residual connection and positional bias, and
    several heads (Chapter 9).

    Attributes:
        residual: add the query's one-hot ``e_m`` to the attended distribution before normalizing.
        positions: ``L = T - 1`` contextual positions with a learnable bias each (0: no positional bias).
        heads: number ``H`` of heads (>= 1).
        z_std: standard deviation of a normal draw added to every ``Z_h(0)`` (0: ``Z(0)`` from ``init``).
        tied: every head starts from the same draw (then the heads stay equal: one head of total width).
        bias_rate: the positional bias trains with learning rate ``bias_rate * eta_Z`` (> 0).
    """

    residual: bool = False
    positions: int = 0
    heads: int = 1
    z_std: float = 0.0
    tied: bool = False
    bias_rate: float = 1.0

    def __post_init__(self) -> None:
        for name in ("residual", "tied"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name}: must be True or False; got {getattr(self, name)!r}")
        check_int("positions", self.positions, low=0)
        check_int("heads", self.heads, low=1)
        if not (isinstance(self.z_std, int | float) and math.isfinite(self.z_std) and self.z_std >= 0):
            raise ValueError(f"z_std: must be a finite number >= 0; got {self.z_std!r}")
        check_positive("bias_rate", self.bias_rate)

    @property
    def active(self) -> bool:
        """Whether any option differs from the paper's model (residual, bias, heads, or a ``Z(0)`` draw)."""
        return self.residual or self.positions > 0 or self.heads > 1 or self.z_std > 0

    def to_dict(self) -> dict:
        """The fields (for a run's settings)."""
        return asdict(self)


def head_params(
    M: int, options: ModelOptions, init: str = "zero", generator: torch.Generator | None = None,
    dtype: torch.dtype = torch.float64,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Initial ``(Y, Z)`` of one configuration: ``(M, M)`` each, or ``(H, M, M)`` with ``H > 1`` heads (random
    ``Z_h(0)``: Sec. 5's initial value as prior, head by head, claims X4-X6).

    Head by head, ``(Y_h, Z_h) = init_params(M, init, generator)`` (one draw for all heads when ``tied``),
    then, when ``z_std > 0``, ``Z_h += z_std * N(0, 1)`` (drawn once when ``tied``). With one head and
    ``z_std = 0`` this is exactly :func:`scansnap.model.init_params`.
    """
    check_choice("init", init, INITS)
    H = options.heads
    pairs = [init_params(M, init, generator, dtype) for _ in range(1 if options.tied else H)]
    Y = torch.stack([p[0] for p in pairs]).expand(H, M, M).clone()
    Z = torch.stack([p[1] for p in pairs]).expand(H, M, M).clone()
    if options.z_std > 0:
        noise = torch.randn(1 if options.tied else H, M, M, generator=generator, dtype=dtype)
        Z = Z + options.z_std * noise.expand(H, M, M)
    return (Y, Z) if H > 1 else (Y[0], Z[0])


class OptionsModel(YZModel):
    """``C`` Y/Z models with the options of :class:`ModelOptions` (paper Sec. 7; Chapter 9).

    Parameters: ``Y``, ``Z`` ``(C, M, M)``, or ``(C, H, M, M)`` with ``H > 1`` heads; ``P`` (the positional
    bias, only with ``positions = L > 0``) ``(C, L)``, or ``(C, H, L)``.

    Args:
        M: vocabulary size; configs: number ``C`` of configurations; options: the options.
        init, generator, dtype: as for :class:`~scansnap.model.YZModel` (see :func:`head_params`).
    """

    def __init__(
        self, M: int, configs: int = 1, options: ModelOptions | None = None, init: str = "zero",
        generator: torch.Generator | None = None, dtype: torch.dtype = torch.float64,
    ) -> None:
        check_int("configs", configs, low=1)
        options = ModelOptions() if options is None else options
        pairs = [head_params(M, options, init, generator, dtype) for _ in range(configs)]
        super().__init__(M, configs=1, dtype=dtype)
        self.options = options
        self.Y = torch.nn.Parameter(torch.stack([p[0] for p in pairs]))
        self.Z = torch.nn.Parameter(torch.stack([p[1] for p in pairs]))
        lead = (configs, options.heads) if options.heads > 1 else (configs,)
        self.P = torch.nn.Parameter(torch.zeros(*lead, options.positions, dtype=dtype)) if options.positions else None

    @classmethod
    def from_params(cls, Y: torch.Tensor, Z: torch.Tensor, options: ModelOptions | None = None,
                    P: torch.Tensor | None = None) -> OptionsModel:
        """A model holding copies of ``Y``, ``Z`` (and the bias ``P``; default 0), shaped as the class says."""
        options = ModelOptions() if options is None else options
        check_tensor("Y", Y, floating=True)
        lead = (Y.shape[0], options.heads) if options.heads > 1 else (Y.shape[0],)
        M = Y.shape[-1]
        check_tensor("Y", Y, shape=(*lead, M, M))
        check_tensor("Z", Z, shape=(*lead, M, M), dtype=Y.dtype)
        model = cls(M, configs=lead[0], options=options, dtype=Y.dtype)
        with torch.no_grad():
            model.Y.copy_(Y)
            model.Z.copy_(Z)
            if P is not None:
                if model.P is None:
                    raise ValueError("P: a positional bias needs options.positions > 0")
                model.P.copy_(check_tensor("P", P, shape=tuple(model.P.shape), dtype=Y.dtype))
        return model

    def parameters_list(self) -> list[torch.Tensor]:
        """``[Y, Z]``, then ``P`` with a positional bias: the order of :meth:`loss_and_gradients`' gradients."""
        return [self.Y, self.Z] + ([self.P] if self.P is not None else [])

    def _heads(self, t: torch.Tensor) -> torch.Tensor:
        """A view with the heads axis at 1 (``(C, H, ...)``), also for one head."""
        return t if self.options.heads > 1 else t.unsqueeze(1)

    def _rows(self, Z: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
        """``z_m`` of each sample and head: ``Z`` ``(C, H, M, M)``, query ``(C, B)`` -> ``(C, H, B, M)``."""
        C, H = Z.shape[:2]
        c, h = torch.arange(C, device=Z.device), torch.arange(H, device=Z.device)
        return Z[c[:, None, None], h[None, :, None], query[:, None, :]]

    def _positional(self, Z: torch.Tensor, query: torch.Tensor, ctx: torch.Tensor, P: torch.Tensor):
        """``b`` ``(C, H, B, L)`` and ``f`` ``(C, H, B, M)`` from contexts ``ctx`` ``(C, B, L)`` with the bias."""
        idx = ctx[:, None].expand(-1, Z.shape[1], -1, -1)
        b = torch.softmax(self._rows(Z, query).gather(-1, idx) + P[:, :, None, :], dim=-1)
        return b, torch.zeros(*b.shape[:-1], self.M, dtype=b.dtype, device=b.device).scatter_add(-1, idx, b)

    def _inputs(self, f: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
        """The decoder's input before normalizing: ``f``, plus ``e_m`` with the residual connection."""
        if not self.options.residual:
            return f
        return f + torch.nn.functional.one_hot(query, self.M).to(f.dtype)[:, None]

    def _contexts(self, x: torch.Tensor) -> torch.Tensor:
        ctx = x[..., :-1]
        if ctx.shape[-1] != self.options.positions:
            raise ValueError(f"x: with a positional bias over {self.options.positions} positions, T must be "
                             f"{self.options.positions + 1}; got T = {x.shape[-1]}")
        return ctx

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        """Attention ``b`` of the query over the contextual positions: ``(C, B, T-1)`` (``(C, H, B, T-1)``)."""
        x = self._batched(x)
        Z, C = self._heads(self.Z), self.configs
        if self.P is None:
            b = torch.softmax(self._rows(Z, x[..., -1]).gather(-1, x[:, None, :, :-1].expand(-1, Z.shape[1], -1, -1)),
                              dim=-1)
        else:
            b = self._positional(Z, x[..., -1], self._contexts(x), self._heads(self.P))[0]
        return b if self.options.heads > 1 else b.reshape(C, *b.shape[2:])

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits ``(C, B, M)`` and attention (:meth:`attention`) for sequences ``x`` ``(B, T)`` / ``(C, B, T)``.

        Built from the attention over positions (scatter into token space), differentiable: the autograd
        reference of :meth:`loss_and_gradients`."""
        x = self._batched(x)
        Z, query = self._heads(self.Z), x[..., -1]
        ctx = self._contexts(x) if self.P is not None else x[..., :-1]
        P = (self._heads(self.P) if self.P is not None
             else torch.zeros(*Z.shape[:2], ctx.shape[-1], dtype=Z.dtype, device=Z.device))
        b, f = self._positional(Z, query, ctx, P)
        logits = self.decode(self._inputs(f, query))
        return logits, (b if self.options.heads > 1 else b[:, 0])

    def forward_weights(self, query: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        """Logits ``(C, B, M)`` from token weights (counts, or ``P(l|n)`` in the long-sequence limit), without a
        positional bias: differentiable, the autograd reference of the weights path."""
        if self.P is not None:
            raise ValueError("weights: a positional bias needs the sequences, not token weights (use forward)")
        self._check_inputs(query, weights)
        query = query.expand(self.configs, -1)
        f = attended(self._rows(self._heads(self.Z), query), weights.to(self.Z.dtype).expand(
            self.configs, *weights.shape[-2:])[:, None])
        return self.decode(self._inputs(f, query))

    def decode(self, v: torch.Tensor) -> torch.Tensor:
        """Logits ``sum_h Y_h^T v~_h`` with ``v~ = v / ||v||_2``: ``v`` ``(C, H, B, M)`` -> ``(C, B, M)``."""
        check_tensor("v", v, shape=(self.configs, self.options.heads, -1, self.M), floating=True)
        return torch.einsum("chbm,chmj->cbj", v / v.norm(dim=-1, keepdim=True), self._heads(self.Y))

    def population(self, classes: SequenceClasses) -> torch.Tensor:
        """The attention snapshot of the trainer: Lemma 2's ``f_n`` of every class and head, ``(C, K, M)``
        (``(C, H, K, M)``); for data whose positions carry information (``population(Z, bias)``), with the bias."""
        Z = self.Z.detach()
        if self.P is not None and getattr(classes, "positional", False):
            return classes.population(Z, self.P.detach())
        return classes.population(Z)

    @torch.no_grad()
    def loss_and_gradients(self, query: torch.Tensor, weights: torch.Tensor, target: torch.Tensor):
        """The loss ``(C,)`` and its gradients in closed form (Lemma 1 extended; module docstring).

        Args:
            query: ``(B,)`` or ``(C, B)`` long.
            weights: token weights ``(B, M)`` / ``(C, B, M)`` as for :class:`~scansnap.model.YZModel`; with a
                positional bias, the contextual tokens themselves, long ``(B, L)`` / ``(C, B, L)`` (nearest to
                the query last).
            target: ``(B,)`` or ``(C, B)`` long.

        Returns:
            ``(loss, dL/dY, dL/dZ)``, plus ``dL/dP`` with a positional bias; shapes of the parameters.
        """
        C, M = self.configs, self.M
        Y, Z = self._heads(self.Y.detach()), self._heads(self.Z.detach())
        query = query.expand(C, -1)
        if self.P is None:
            self._check_batch(query, weights, target)
            f = attended(self._rows(Z, query), weights.to(Z.dtype).expand(C, -1, -1)[:, None])
        else:
            check_tensor("weights", weights, dtype=torch.long, low=0, high=M - 1)
            ctx = weights.expand(C, -1, -1)
            if ctx.shape[1:] != (query.shape[1], self.options.positions):
                raise ValueError(f"weights: contexts must have shape (B, {self.options.positions}); "
                                 f"got {tuple(weights.shape)}")
            check_tensor("target", target, dtype=torch.long, low=0, high=M - 1)
            b, f = self._positional(Z, query, ctx, self._heads(self.P.detach()))
        v = self._inputs(f, query)
        norm = v.norm(dim=-1, keepdim=True)
        vt = v / norm
        loss, D = _cross_entropy_and_error(torch.einsum("chbm,chmj->cbj", vt, Y), target.expand(C, -1))
        gY = torch.einsum("chbm,cbj->chmj", vt, D)
        g = torch.einsum("chmj,cbj->chbm", Y, D)
        r = (g - vt * (vt * g).sum(-1, keepdim=True)) / norm
        s = r - (f * r).sum(-1, keepdim=True)
        H = Z.shape[1]
        rows = (f * s).flatten(0, 2)
        c, h = torch.arange(C, device=Z.device), torch.arange(H, device=Z.device)
        index = (c[:, None, None] * H + h[None, :, None]) * M + query[:, None, :]
        gZ = torch.zeros(C * H * M, M, dtype=Z.dtype, device=Z.device).index_add_(0, index.flatten(), rows)
        gZ = gZ.view(C, H, M, M)
        shape = tuple(self.Y.shape)
        grads = [loss, gY.reshape(shape), gZ.reshape(shape)]
        if self.P is not None:
            gP = (b * s.gather(-1, ctx[:, None].expand(-1, H, -1, -1))).sum(2)
            grads.append(gP.reshape(self.P.shape))
        return tuple(grads)
