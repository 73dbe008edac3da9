"""Chapter 8 beyond Figure 7: the 1-layer model without positional encoding (the theory's setting), beside the same
model with it, and the token study (``ch8-freeze-nope``, ``fig-ch8-tokens``).

:data:`FREEZE_NOPE` trains, from one seed and at Figure 7's settings
(:class:`~scansnap.experiments.ch08_wikitext.FreezeConfig`), the 1-layer model with and without positional encoding;
it checks the paper's ``Z`` against the no-PE model's attention (:func:`scansnap.lm.z_error`) and, beyond the paper,
measures the attention each key token receives against how common it is across contexts
(:class:`~scansnap.experiments.wikitext_figures.TokenStudy`).
No claim is judged here: C40a, C40b, P2 and P3 read ``ch8-freeze`` and ``ch8-freeze-deep``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch

from scansnap import lm, lm_train, token_stats, wikitext
from scansnap._threads import one_thread
from scansnap.experiments import wikitext_figures as figs
from scansnap.experiments.base import Experiment, FigureSpec, Progress
from scansnap.experiments.ch08_wikitext import FreezeConfig, freeze_prefix, trajectory_checkpoints
from scansnap.experiments.wikitext_figures import TokenStudy
from scansnap.params import Int, param

__all__ = ["FREEZE_NOPE", "NopeConfig", "NopeResult", "run_nope"]


@dataclass(frozen=True)
class NopeConfig(FreezeConfig):
    """Chapter 8's ``ch8-freeze-nope`` (Figure 7 without positional encoding, the paper's Z): a
    :class:`~scansnap.experiments.ch08_wikitext.FreezeConfig` (one seed, 1 layer) and the token study's sizes.

    Attributes:
        stat_sequences: held-out windows for the token study; pairs: (key, next) pairs per token for the
            next-token entropy; min_pairs: least number of (query, key) pairs behind a token's attention score.
    """

    seeds: tuple[int, ...] = (1,)
    stat_sequences: int = param(4000, Int(low=2))
    pairs: int = param(256, Int(low=2))
    min_pairs: int = param(200, Int(low=1))
    layers: int = param(1, Int(low=1, high=1))  # Z describes all of the attention of a 1-layer model only
    PROTOCOL = FreezeConfig.PROTOCOL + "; with and without positional encoding (first seed)"
    NOT_GATED: ClassVar[dict[str, str]] = {
        **FreezeConfig.NOT_GATED,
        "stat_sequences": "the token study's sample of held-out windows (2,000 against 4,000): it is reported, not "
                          "judged by any rule"}
    """:class:`~scansnap.experiments.ch08_wikitext.FreezeConfig`'s, and the token study's sample."""
    PRESETS = {
        "smoke": dict(FreezeConfig.PRESETS["smoke"], seeds=(1,), stat_sequences=32, pairs=8, min_pairs=4),
        # 150 steps at the book profile: Chapter 8 runs within 3 minutes on one core (Binder), its Figure 7
        # shown from stored paper-protocol runs
        "book": dict(FreezeConfig.PRESETS["book"], seeds=(1,), stat_sequences=2000, steps=150, every=50, window=50,
                     shown=(0, 50, 100, 150)),
        "paper": {},
    }


@dataclass(frozen=True)
class NopeResult:
    """Chapter 8's ``ch8-freeze-nope``: the 1-layer model with (``runs[0]``) and without (``runs[1]``) positional
    encoding, from the first seed (Figure 7's setting; the paper's Z checked on the second).

    Attributes:
        config, note, vocab_size: as in :class:`~scansnap.experiments.ch08_wikitext.FreezeResult`.
        runs: the two trajectories (first layer).
        z_error: max ``|attention - softmax(Z)|`` of the trained no-PE model on the held-out windows (float64).
        tokens: the token study.
    """

    config: NopeConfig
    note: str
    vocab_size: int
    runs: tuple[lm_train.Trajectory, lm_train.Trajectory]
    z_error: float
    tokens: TokenStudy


def run_nope(config: NopeConfig, progress: Progress | None = None) -> NopeResult:
    """Chapter 8's ``ch8-freeze-nope``: train both models from the first seed and measure them (one intra-op thread)."""
    c, seed = config, config.seeds[0]
    with one_thread():
        data, note = c.corpus()
        V = len(data.vocab)
        stat = _stat_windows(c, data)
        received = [token_stats.received_attention(c.model(V, 1, seed).first_attention(stat), stat, V)]
        runs = []
        for positional in (True, False):
            model, tr = c.train(data, seed, positional, progress)
            runs.append(tr)
            received.append(token_stats.received_attention(model.first_attention(stat), stat, V))
        z_err = lm.z_error(model, data.heldout[:, :-1])
        tokens = _token_study(c, data, received)
    return NopeResult(c, note, V, (runs[0], runs[1]), z_err, tokens)


def _stat_windows(c: NopeConfig, data: lm_train.Corpus) -> torch.Tensor:
    held = data.heldout_ids
    n = min(c.stat_sequences, len(held) // c.bptt)
    return held[: n * c.bptt].reshape(n, c.bptt)


def _token_study(c: NopeConfig, data: lm_train.Corpus, received: list) -> TokenStudy:
    V, words = len(data.vocab), data.vocab.words
    ent = token_stats.next_token_entropy(data.train_ids, V, window=c.bptt, pairs=c.pairs, seed=c.seeds[0])
    doc = token_stats.document_frequency(data.train_ids, V, words.index(wikitext.EOS))
    freq = np.bincount(data.train_ids.numpy(), minlength=V) / len(data.train_ids)
    scores = np.stack([r[0] for r in received])
    enough = np.stack([r[1] for r in received]).min(0) >= c.min_pairs
    keep = np.isfinite(ent) & enough & np.isfinite(scores).all(0)
    unk = words.index(data.vocab.unk) if data.vocab.unk else None
    if unk is not None:
        keep[unk] = False  # <unk> merges many words: no single token; reported beside the study
    ids = np.flatnonzero(keep)
    nan = float("nan")
    unk_ent = float(ent[unk]) if unk is not None else nan
    return TokenStudy(ids, tuple(words[i] for i in ids), ent[ids], doc[ids], freq[ids], scores[:, ids],
                      unk_frequency=float(freq[unk]) if unk is not None else nan, unk_next_entropy=unk_ent,
                      unk_entropy_rank=float(np.mean(ent[ids] < unk_ent)) if np.isfinite(unk_ent) and ids.size else nan,
                      unk_received=scores[:, unk] if unk is not None else np.full(3, nan))


def _work(c: NopeConfig) -> int:
    return 2 * c.steps


def _checkpoints(r: NopeResult) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Both runs' curves by checkpoint (:func:`~scansnap.experiments.ch08_wikitext.freeze_checkpoints`)."""
    return trajectory_checkpoints("pe", r.runs[0]) | trajectory_checkpoints("nope", r.runs[1])


FREEZE_NOPE = Experiment(
    id="ch8-freeze-nope", config=NopeConfig, result=NopeResult, run=run_nope, work=_work,
    prefix=freeze_prefix, checkpoints=_checkpoints,
    figures=(FigureSpec(id="fig-ch8-tokens", claims=(), plot=lambda r: figs.plot_tokens(r.tokens),
                        table=lambda r: figs.tokens_table(r.tokens),
                        caption="Beyond the paper: attention a key token receives (relative to uniform) against how "
                                "common it is across contexts (the entropy of the next token when it is in the "
                                "attention window), at initialization and after training, with and without "
                                "positional encoding; <unk> (every word outside the vocabulary) marked apart."),),
)

EXPERIMENTS = [FREEZE_NOPE]
RULES: list = []
