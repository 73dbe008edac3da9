"""The standard transformer language model of the paper's WikiText figures (Figures 7 and 10).

The authors' models for these figures (their ``figure_7.ipynb`` and ``decoder_wiki.py``) are the PyTorch
word-level transformer tutorial: a token embedding of width ``d`` scaled by ``sqrt(d)``, sinusoidal
positional encoding (switchable off: the theory's setting), post-norm encoder layers (1 head; causal
mask with the diagonal, so a token also attends to itself; ReLU feed-forward), dropout, and a linear
decoder over the vocabulary. :class:`TransformerLM` is that model, written out so that it returns every
layer's attention maps; :class:`EncoderLayer` keeps the parameter names of
``torch.nn.TransformerEncoderLayer`` and computes what it computes (``tests/test_lm.py``), and
:func:`reference` builds the same network from torch's own modules (the benchmark's baseline).

:func:`z_matrix` is the paper's ``Z`` of such a model: for one layer without positional encoding the
attention of a query token ``m`` on a key token ``l`` is the softmax of ``Z[m, l]`` over the context
(Chapter 8 derives it). :func:`sgd_step` is the training step the authors used: SGD without momentum at
one constant learning rate, gradient clipping at norm 0.5.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F  # noqa: N812

from scansnap._checks import check_fraction, check_int, check_positive, check_tensor

__all__ = ["FEED_FORWARD", "EncoderLayer", "SelfAttention", "TransformerLM", "reference", "sgd_step", "sinusoidal",
           "z_error", "z_matrix"]


def sinusoidal(length: int, d: int) -> torch.Tensor:
    """``(length, d)`` sinusoidal positional encoding (sin on even, cos on odd features; the tutorial's). The
    model of the paper's Figure 7 adds it, outside Assumption 1(a)."""
    position = torch.arange(length, dtype=torch.float32)[:, None]
    div = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-math.log(10000.0) / d))
    pe = torch.zeros(length, d)
    pe[:, 0::2] = torch.sin(position * div)
    pe[:, 1::2] = torch.cos(position * div)[:, : d // 2]
    return pe


class SelfAttention(nn.Module):
    """One-head self-attention with the parameters of ``torch.nn.MultiheadAttention``: the attention whose maps
    the paper's Figure 7 shows and whose entropy Figure 10 plots (Chapter 8).

    ``in_proj_weight`` ``(3d, d)`` stacks ``W_Q, W_K, W_V``; ``in_proj_bias`` ``(3d,)`` their biases;
    ``out_proj`` the output projection. Initialized as torch initializes it (same draws, same order).
    """

    def __init__(self, d: int, dropout: float) -> None:
        super().__init__()
        self.in_proj_weight = nn.Parameter(torch.empty(3 * d, d))
        self.in_proj_bias = nn.Parameter(torch.zeros(3 * d))
        self.out_proj = nn.Linear(d, d)
        self.dropout = dropout
        nn.init.xavier_uniform_(self.in_proj_weight)
        nn.init.zeros_(self.out_proj.bias)

    def forward(self, x: torch.Tensor, need_weights: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``x`` ``(B, T, d)`` -> output ``(B, T, d)`` and, with ``need_weights``, the causal attention
        ``(B, T, T)`` (row ``i``: query position ``i`` over keys ``0..i``; before dropout)."""
        q, k, v = F.linear(x, self.in_proj_weight, self.in_proj_bias).chunk(3, dim=-1)
        p = self.dropout if self.training else 0.0
        if not need_weights:
            return self.out_proj(F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)), None
        T = x.shape[1]
        scores = q @ k.transpose(1, 2) / math.sqrt(x.shape[-1])
        scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        attn = scores.softmax(dim=-1)
        return self.out_proj(F.dropout(attn, p, self.training) @ v), attn


class EncoderLayer(nn.Module):
    """A post-norm encoder layer, parameter for parameter ``torch.nn.TransformerEncoderLayer(d, 1, d_hid,
    dropout, batch_first=True)`` with a causal mask: ``x = norm1(x + attn(x)); x = norm2(x + ffn(x))``; the
    layer of the paper's Figures 7 and 10 model."""

    def __init__(self, d: int, d_hid: int, dropout: float) -> None:
        super().__init__()
        self.self_attn = SelfAttention(d, dropout)
        self.linear1, self.linear2 = nn.Linear(d, d_hid), nn.Linear(d_hid, d)
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.dropout, self.dropout1, self.dropout2 = nn.Dropout(dropout), nn.Dropout(dropout), nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, need_weights: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``x`` ``(B, T, d)`` -> ``(B, T, d)`` and the attention ``(B, T, T)`` (or ``None``)."""
        out, attn = self.self_attn(x, need_weights)
        x = self.norm1(x + self.dropout1(out))
        x = self.norm2(x + self.dropout2(self.linear2(self.dropout(F.relu(self.linear1(x))))))
        return x, attn


class TransformerLM(nn.Module):
    """The PyTorch tutorial's word-level transformer language model (the paper's Figures 7 and 10).

    Args:
        vocab: vocabulary size ``V``.
        d: embedding width (200 in the paper); d_hid: feed-forward width (200); layers: encoder layers.
        dropout: dropout after the positional encoding, on the attention weights and in every layer.
        positional: add the sinusoidal positional encoding (``False``: the theory's setting).
        max_len: longest sequence the encoding covers.

    Call: ``model(x)`` with ``x`` ``(B, T)`` long -> logits ``(B, T, V)`` and, with ``need_weights=True``,
    the attention of every layer, a list of ``(B, T, T)``.
    """

    def __init__(self, vocab: int, d: int = 200, d_hid: int = 200, layers: int = 1, dropout: float = 0.2,
                 positional: bool = True, max_len: int = 512) -> None:
        super().__init__()
        check_int("vocab", vocab, low=2)
        check_int("d", d, low=2)
        check_int("d_hid", d_hid, low=1)
        check_int("layers", layers, low=1)
        check_fraction("dropout", dropout)
        self.d, self.positional = d, positional
        self.register_buffer("pe", sinusoidal(max_len, d) if positional else torch.zeros(max_len, d),
                             persistent=False)
        self.encoder = nn.Embedding(vocab, d)
        self.drop = nn.Dropout(dropout)
        self.layers = nn.ModuleList(EncoderLayer(d, d_hid, dropout) for _ in range(layers))
        self.decoder = nn.Linear(d, vocab)
        nn.init.uniform_(self.encoder.weight, -0.1, 0.1)  # the tutorial's init_weights
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -0.1, 0.1)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, T)`` -> ``(B, T, d)``: ``sqrt(d) U[x] + PE``, then dropout."""
        if x.shape[1] > self.pe.shape[0]:
            raise ValueError(f"x: sequences must be at most max_len = {self.pe.shape[0]} long; got {x.shape[1]}")
        return self.drop(self.encoder(x) * math.sqrt(self.d) + self.pe[: x.shape[1]])

    @torch.no_grad()
    def first_attention(self, x: torch.Tensor, chunk: int = 256) -> torch.Tensor:
        """``(S, T, T)`` the first layer's causal attention on ``x`` ``(S, T)`` with dropout off (only the
        embedding and the first attention are computed)."""
        was = self.training
        self.eval()
        out = torch.cat([self.layers[0].self_attn(self.embed(x[i: i + chunk]), True)[1]
                         for i in range(0, len(x), chunk)])
        self.train(was)
        return out

    def forward(self, x: torch.Tensor, need_weights: bool = False) -> tuple[torch.Tensor, list[torch.Tensor]]:
        h, maps = self.embed(x), []
        for layer in self.layers:
            h, attn = layer(h, need_weights)
            if attn is not None:
                maps.append(attn)
        return self.decoder(h), maps


def reference(model: TransformerLM) -> nn.Module:
    """The same network (the model of Figures 7 and 10) built from ``torch.nn.TransformerEncoder`` (with
    ``model``'s weights): the baseline of ``benchmarks/bench_lm.py``. Call it like ``model`` (returns logits
    and an empty list)."""
    d, layers = model.d, len(model.layers)
    first = model.layers[0]
    torch_layer = nn.TransformerEncoderLayer(d, 1, first.linear1.out_features, first.dropout.p, batch_first=True)
    encoder = nn.TransformerEncoder(torch_layer, layers, enable_nested_tensor=False)
    for ours, theirs in zip(model.layers, encoder.layers, strict=True):
        theirs.load_state_dict(ours.state_dict())

    class Reference(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embedding, self.drop, self.encoder, self.decoder = model.encoder, model.drop, encoder, model.decoder
            self.register_buffer("pe", model.pe, persistent=False)

        def forward(self, x: torch.Tensor, need_weights: bool = False):
            mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1], device=x.device)
            h = self.drop(self.embedding(x) * math.sqrt(d) + self.pe[: x.shape[1]])
            return self.decoder(self.encoder(h, mask=mask, is_causal=True)), []

    ref = Reference()
    ref.train(model.training)
    return ref


FEED_FORWARD = ("linear1.", "linear2.")
"""Names of the feed-forward parameters that the authors' Figure 7 notebook trains at its own rate."""


def sgd_step(model: nn.Module, x: torch.Tensor, y: torch.Tensor, lr: float, clip: float = 0.5,
             ff_lr: float | None = None) -> float:
    """One step of the authors' training for Figures 7 and 10: cross-entropy of next tokens, backward, clip the
    gradient norm at ``clip``, SGD without momentum at learning rate ``lr`` (and ``ff_lr`` on the feed-forward
    ``linear1``/``linear2`` of every layer, the two parameter groups of the authors' Figure 7 notebook; ``None``:
    ``lr`` everywhere). ``x``, ``y`` ``(B, T)``. Returns the loss."""
    check_positive("lr", lr)
    logits, _ = model(x)
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
    model.zero_grad(set_to_none=True)
    loss.backward()
    params = [p for p in model.parameters() if p.grad is not None]
    nn.utils.clip_grad_norm_(params, clip)
    with torch.no_grad():
        if ff_lr is None or ff_lr == lr:
            torch._foreach_add_(params, [p.grad for p in params], alpha=-lr)
        else:
            check_positive("ff_lr", ff_lr)
            for group, rate in zip(_groups(model), (lr, ff_lr), strict=True):
                torch._foreach_add_(group, [p.grad for p in group], alpha=-rate)
    return loss.item()


def _groups(model: nn.Module) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """(the other parameters, the feed-forward ones) of ``model`` that have a gradient."""
    rest, ff = [], []
    for name, p in model.named_parameters():
        if p.grad is not None:
            (ff if any(f in name for f in FEED_FORWARD) else rest).append(p)
    return rest, ff


def z_matrix(model: TransformerLM) -> torch.Tensor:
    """``(V, V)`` the paper's ``Z`` of a 1-layer model without positional encoding (Chapter 8's derivation):
    ``Z = sqrt(d) U W_Q^T W_K U^T + 1 (W_K^T b_Q)^T U^T``, so that with dropout off the attention of query
    position ``i`` on key position ``j <= i`` is ``softmax_j Z[x_i, x_j]``. The terms that depend on the
    query only (``u_m^T W_Q^T b_K + b_Q^T b_K / sqrt(d)``, after the ``1/sqrt(d)`` of the scores) cancel
    in the softmax and are left out."""
    if model.positional:
        raise ValueError("model: Z ties attention to tokens only without positional encoding (positional=False)")
    attn = model.layers[0].self_attn
    d = model.d
    W_Q, W_K = attn.in_proj_weight[:d], attn.in_proj_weight[d: 2 * d]
    b_Q = attn.in_proj_bias[:d]
    U = model.encoder.weight
    with torch.no_grad():
        return math.sqrt(d) * U @ W_Q.T @ W_K @ U.T + (U @ W_K.T @ b_Q)[None, :]


def z_error(model: TransformerLM, windows: torch.Tensor) -> float:
    """Max ``|attention - softmax_j Z[x_i, x_j]|`` (``j <= i``) of a 1-layer model without positional
    encoding on ``windows`` ``(S, T)``, computed in float64 with dropout off (Chapter 8's numerical check of
    the derivation behind :func:`z_matrix`)."""
    check_tensor("windows", windows, shape=(-1, -1), dtype=torch.long, low=0, high=model.decoder.out_features - 1)
    if len(model.layers) != 1:
        raise ValueError(f"model: must have 1 layer for Z to describe all of its attention; got {len(model.layers)}")
    m = TransformerLM(model.decoder.out_features, model.d, model.layers[0].linear1.out_features, 1,
                      positional=False, max_len=max(windows.shape[1], model.pe.shape[0])).double()
    m.load_state_dict(model.state_dict())
    Z, T = z_matrix(m), windows.shape[1]
    scores = Z[windows[:, :, None], windows[:, None, :]]
    scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool, device=scores.device).triu(1), float("-inf"))
    return (scores.softmax(-1) - m.first_attention(windows)).abs().max().item()
