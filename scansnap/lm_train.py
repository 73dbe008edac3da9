"""Training the WikiText language model of Chapter 8, with held-out attention checkpoints (Figures 7, 10).

:func:`corpus` reads verified WikiText-2 splits (:mod:`scansnap.wikitext`), builds the vocabulary and
cuts the training text into ``batch`` streams and the held-out text into fixed sequences.
:func:`train` trains a :class:`scansnap.lm.TransformerLM` the authors' way (SGD without momentum at one
constant learning rate, gradient clipping, the training chunks in order, epoch after epoch) and, at
every checkpoint, measures on the held-out sequences with dropout off: the loss, the mean entropy of
the first layer's attention rows, and the relative change of the first layer's maps since the last
checkpoint (:func:`scansnap.metrics.freeze_rate`). It keeps the maps of one probe sequence (Figure 7).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import torch
from torch.nn import functional as F  # noqa: N812

from scansnap import device as device_mod
from scansnap import lm, metrics, wikitext
from scansnap._checks import check_choice, check_int, check_positive

__all__ = ["ARTICLES", "HELDOUT", "Corpus", "Trajectory", "article_corpus", "attention_shares", "corpus", "evaluate",
           "map_distance", "row_entropy", "train"]


@dataclass(frozen=True)
class Corpus:
    """Token ids ready for training and held-out evaluation (WikiText-2 for Figures 7 and 10, Chapter 8).

    Attributes:
        vocab: the vocabulary (``len(vocab) = V``).
        train_ids: ``(N,)`` the training text's ids (in order).
        streams: ``(batch, N // batch)`` the training text cut into contiguous streams.
        heldout: ``(S, bptt + 1)`` non-overlapping held-out windows: inputs ``[:, :-1]``, targets ``[:, 1:]``.
        train_split, eval_split: the WikiText-2 splits used.
        note: how the vocabulary was built (and any fallback), in words.
        heldout_ids: ``(M,)`` the whole held-out text's ids (the windows of ``heldout`` are its start).
    """

    vocab: wikitext.Vocabulary
    train_ids: torch.Tensor
    streams: torch.Tensor
    heldout: torch.Tensor
    train_split: str
    eval_split: str
    note: str
    heldout_ids: torch.Tensor | None = None


ARTICLES = "valid+test"
"""The training text of Chapter 8's ``paper`` profile when ``train.txt`` is missing: ``valid.txt`` and ``test.txt``
less every tenth article (:func:`article_corpus`); :data:`HELDOUT` is that held-out tenth."""
HELDOUT = "held-out articles"


def corpus(train_split: str, eval_split: str, *, root: str | os.PathLike | None = None, cap: int = 0,
           batch: int = 20, bptt: int = 35, max_train_tokens: int = 0, eval_sequences: int = 200) -> Corpus:
    """Read, verify and encode the WikiText-2 splits of Chapter 8 (Figures 7 and 10).

    The vocabulary comes from the training text; without a cap and when training on ``valid`` (a
    split whose vocabulary does not cover the evaluation text), every word of the evaluation text is
    added too. With ``cap > 0`` only the ``cap`` most frequent training words are kept, the others map
    to ``<unk>``. ``max_train_tokens > 0`` keeps only the first that many training tokens.
    """
    check_choice("train_split", train_split, wikitext.SPLITS)
    check_choice("eval_split", eval_split, wikitext.SPLITS)
    if eval_split == train_split:
        raise ValueError(f"eval_split: must differ from train_split {train_split!r} (held-out text)")
    check_int("max_train_tokens", max_train_tokens, low=0)
    train_words = wikitext.tokens(train_split, root)
    eval_words = wikitext.tokens(eval_split, root)
    if max_train_tokens:
        train_words = train_words[:max_train_tokens]
    add_eval = cap == 0 and train_split != "train"
    return _encoded(train_words, eval_words, train_split, eval_split, add_eval, cap, batch, bptt, eval_sequences,
                    f"{train_split}.txt", f"{eval_split}.txt")


def article_corpus(*, root: str | os.PathLike | None = None, every: int = 10, batch: int = 20, bptt: int = 35,
                   eval_sequences: int = 200) -> Corpus:
    """Chapter 8's ``paper`` data when ``train.txt`` is missing: train on ``valid.txt`` + ``test.txt`` less every
    ``every``-th article (:func:`scansnap.wikitext.article_split`), evaluate on those held-out articles, with the
    full vocabulary of the training text (held-out words outside it become ``<unk>``)."""
    texts = [wikitext.verified_text(split, root) for split in ("valid", "test")]
    train_words, eval_words, n_train, n_held = wikitext.article_split(texts, every)
    data = _encoded(train_words, eval_words, ARTICLES, HELDOUT, False, 0, batch, bptt, eval_sequences,
                    f"valid.txt + test.txt less every {every}th article", "the held-out articles")
    unseen = sum(w not in set(data.vocab.words) for w in set(eval_words))
    return replace(data, note=f"{n_train} training articles ({len(train_words):,} tokens), {n_held} held-out "
                              f"articles ({len(eval_words):,} tokens, {unseen:,} word types outside the vocabulary "
                              f"-> <unk>); {data.note}")


def _encoded(train_words: list[str], eval_words: list[str], train_split: str, eval_split: str, add_eval: bool,
             cap: int, batch: int, bptt: int, eval_sequences: int, train_name: str, eval_name: str) -> Corpus:
    check_int("eval_sequences", eval_sequences, low=1)
    vocab = wikitext.Vocabulary.build(train_words, *([eval_words] if add_eval else []), cap=cap)
    note = (f"vocabulary: {len(vocab):,} words from {train_name}"
            + (f" plus every word of {eval_name}" if add_eval else "")
            + (f", capped at the {cap:,} most frequent training words (others -> <unk>)" if cap else
               " (the full vocabulary of the training text)" if not add_eval else ""))
    ids = vocab.encode(train_words)
    held = vocab.encode(eval_words)
    if len(held) < eval_sequences * (bptt + 1):
        raise ValueError(f"eval_sequences: at most {len(held) // (bptt + 1)} windows of {bptt + 1} tokens fit in "
                         f"{eval_name}; got {eval_sequences}")
    heldout = held[: eval_sequences * (bptt + 1)].reshape(eval_sequences, bptt + 1)
    return Corpus(vocab, ids, wikitext.batchify(ids, batch), heldout, train_split, eval_split, note, held)


@dataclass(frozen=True)
class Trajectory:
    """One training run, measured at checkpoints ``C``: the maps of Figure 7, the entropy of Figure 10.

    Attributes:
        steps: ``(C,)`` checkpoint steps (0 = before training).
        train_loss: ``(steps,)`` the training loss of every step (dropout on).
        heldout_loss: ``(C,)`` mean next-token cross-entropy on the held-out windows (dropout off).
        entropy: ``(C,)`` mean entropy (nats) of the first layer's attention rows on the held-out windows.
        freeze: ``(C - 1,)`` relative change per step of the first layer's held-out maps between
            consecutive checkpoints (:func:`scansnap.metrics.freeze_rate`, mean over the windows).
        probe_maps: ``(C, T, T)`` the first layer's attention on the probe window at each checkpoint.
        train_maps: ``(C, T, T)`` the same on a training window (the authors drew their maps on one).
        diagonal: ``(C,)`` mean attention of a query on itself (held-out rows ``i >= 1``; row 0 sees only itself).
        unk: ``(C,)`` mean attention on ``<unk>`` keys (held-out rows ``i >= 1``; nan without an unk word).
        jitter_steps: ``(J,)`` the checkpoints ``s < steps``; jitter: ``(J,)`` the one-step distance
            :func:`map_distance` of the held-out maps from step ``s`` to ``s + 1`` (the per-step jitter).
        window: steps ``W`` of the drift; drift: ``(C,)`` :func:`map_distance` of the held-out maps at each
            checkpoint ``s`` from those at ``s - W`` (nan where ``s < W``).
    """

    steps: np.ndarray
    train_loss: np.ndarray
    heldout_loss: np.ndarray
    entropy: np.ndarray
    freeze: np.ndarray
    probe_maps: np.ndarray
    train_maps: np.ndarray
    diagonal: np.ndarray
    unk: np.ndarray
    jitter_steps: np.ndarray
    jitter: np.ndarray
    window: int
    drift: np.ndarray


def map_distance(a: torch.Tensor, b: torch.Tensor) -> float:
    """Root mean square over windows of ``||a_w - b_w||_F`` for maps ``(S, T, T)``: how far the held-out maps of
    Figure 7 moved between two checkpoints (drift) or over one step (jitter)."""
    return (a - b).square().sum((-2, -1)).mean().sqrt().item()


def attention_shares(maps: torch.Tensor, x: torch.Tensor, unk: int | None) -> tuple[float, float]:
    """Mean attention on the diagonal and on ``<unk>`` keys (id ``unk``; nan for ``None``) of maps ``(S, T, T)``
    on inputs ``x`` ``(S, T)``, over rows ``i >= 1`` (Chapter 8's Figure 7 measures)."""
    rows = maps[:, 1:]
    diagonal = torch.diagonal(maps, dim1=-2, dim2=-1)[:, 1:].mean().item()
    if unk is None:
        return diagonal, float("nan")
    return diagonal, (rows * (x == unk)[:, None, :]).sum(-1).mean().item()


def row_entropy(attn: torch.Tensor) -> torch.Tensor:
    """``(..., T, T)`` attention rows -> ``(...)`` mean entropy (nats) over the rows ``-sum_j a_ij ln a_ij``.

    With a causal mask row ``i`` spreads over ``i + 1`` keys (row 0 has entropy 0), as in the authors'
    validation entropy of Figure 10 (mean over every query of every window)."""
    return -torch.xlogy(attn, attn).sum(-1).mean(-1)


@torch.no_grad()
def evaluate(model: lm.TransformerLM, heldout: torch.Tensor, chunk: int = 64) -> tuple[float, torch.Tensor]:
    """Held-out loss (mean cross-entropy) and the first layer's maps ``(S, T, T)``, dropout off (the maps of
    Figure 7; Figure 10 plots their entropy)."""
    was = model.training
    model.eval()
    total, maps = 0.0, []
    for i in range(0, len(heldout), chunk):
        x, y = heldout[i: i + chunk, :-1], heldout[i: i + chunk, 1:]
        logits, attn = model(x, need_weights=True)
        total += F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1), reduction="sum").item()
        maps.append(attn[0])
    model.train(was)
    return total / heldout[:, 1:].numel(), torch.cat(maps)


def train(model: lm.TransformerLM, data: Corpus, *, lr: float, steps: int, checkpoints: list[int], bptt: int = 35,
          clip: float = 0.5, seed: int = 0, probe: int = 0, progress: Callable[[int], None] | None = None,
          ff_lr: float | None = None, window: int = 0, train_window: torch.Tensor | None = None,
          device: str | torch.device | None = None) -> Trajectory:
    """Train ``model`` in place for ``steps`` SGD steps and measure it at ``checkpoints`` (the authors' protocol
    of Figures 7 and 10).

    Args:
        model: the language model (its initialization is the caller's, e.g. after ``torch.manual_seed``).
        data: training streams and held-out windows.
        lr: the one constant learning rate (SGD, no momentum); clip: gradient-norm clip; ff_lr: the rate of the
            feed-forward ``linear1``/``linear2`` (the authors' Figure 7: 10 beside 5; ``None``: ``lr``).
        steps: number of steps; the training chunks ``batch x bptt`` are taken in order, epoch after epoch.
        checkpoints: strictly increasing steps in ``[0, steps]`` at which to measure (step ``s``: after ``s`` updates).
        seed: seeds the dropout draws.
        probe: index of the held-out window whose maps are kept.
        progress: called once per step.
        window: steps ``W`` of :attr:`Trajectory.drift` (0: none, all nan); train_window: ``(T,)`` the training
            window of :attr:`Trajectory.train_maps` (default: the first ``bptt`` tokens of the first stream).
        device: where to train (:func:`scansnap.device.resolve`: default ``$SCANSNAP_DEVICE``, else the CPU). The
            model and the data move there for the run (TF32 off) and the model moves back after
            (:func:`scansnap.device.model_on`); the measures come back to the CPU. The initialization is the
            caller's, on the CPU, so it is the same on every device; the dropout draws come from the device's own
            generator (seeded by ``seed``): on a GPU they are reproducible there but not the CPU's draws.

    The hot loop does only the SGD step; measurements happen at the checkpoints and, for the jitter, one step
    after each (the first layer's maps only, no decoder).
    """
    check_positive("lr", lr)
    check_int("steps", steps, low=1)
    check_int("probe", probe, low=0, high=len(data.heldout) - 1)
    check_int("window", window, low=0)
    if not checkpoints or any(b <= a for a, b in zip(checkpoints, checkpoints[1:], strict=False)) \
            or checkpoints[0] < 0 or checkpoints[-1] > steps:
        raise ValueError(f"checkpoints: must be strictly increasing steps in [0, {steps}]; got {checkpoints}")
    unk = data.vocab.words.index(data.vocab.unk) if data.vocab.unk else None
    with device_mod.model_on(model, device) as dev:
        return _train(model, data, dev, lr=lr, steps=steps, checkpoints=checkpoints, bptt=bptt, clip=clip, seed=seed,
                      probe=probe, progress=progress, ff_lr=ff_lr, window=window, train_window=train_window, unk=unk)


def _train(model: lm.TransformerLM, data: Corpus, dev: torch.device, *, lr: float, steps: int, checkpoints: list[int],
           bptt: int, clip: float, seed: int, probe: int, progress: Callable[[int], None] | None, ff_lr: float | None,
           window: int, train_window: torch.Tensor | None, unk: int | None) -> Trajectory:
    """:func:`train`'s run, with ``model`` on ``dev`` already: the data moved there, the measures back on the CPU."""
    streams, heldout = data.streams.to(dev), data.heldout.to(dev)
    chunks = list(wikitext.chunks(streams, bptt))
    x_held = heldout[:, :-1]
    x_train = (streams[0, :bptt] if train_window is None else train_window.to(dev))[None]
    torch.manual_seed(seed)
    train_loss = np.zeros(steps)
    m: dict[str, list] = {k: [] for k in ("held", "ent", "rates", "probe", "train", "diag", "unk", "jit", "drift")}
    kept: dict[int, torch.Tensor] = {}
    previous, jitter_from = None, None
    marks = set(checkpoints)
    for step in range(steps + 1):
        if jitter_from is not None:
            m["jit"].append(map_distance(model.first_attention(x_held), jitter_from))
            jitter_from = None
        if step in marks:
            loss, maps = evaluate(model, heldout)
            m["held"].append(loss)
            m["ent"].append(row_entropy(maps).mean().item())
            m["probe"].append(maps[probe].cpu().numpy())
            m["train"].append(model.first_attention(x_train)[0].cpu().numpy())
            diagonal, on_unk = attention_shares(maps, x_held, unk)
            m["diag"].append(diagonal)
            m["unk"].append(on_unk)
            if previous is not None:
                pair = torch.stack([previous[1], maps])
                m["rates"].append(metrics.freeze_rate(pair, [previous[0], step]).mean().item())
            previous = (step, maps)
            if window:
                kept[step] = maps
                back = kept.pop(step - window, None)
                m["drift"].append(map_distance(maps, back) if back is not None else float("nan"))
                kept = {s: v for s, v in kept.items() if s > step - window}
            if step < steps:
                jitter_from = maps
        if step == steps:
            break
        x, y = chunks[step % len(chunks)]
        train_loss[step] = lm.sgd_step(model, x, y, lr, clip, ff_lr=ff_lr)
        if progress is not None:
            progress(1)
    drift = np.array(m["drift"]) if window else np.full(len(checkpoints), np.nan)
    return Trajectory(np.array(checkpoints), train_loss, np.array(m["held"]), np.array(m["ent"]),
                      np.array(m["rates"]), np.stack(m["probe"]), np.stack(m["train"]), np.array(m["diag"]),
                      np.array(m["unk"]), np.array([s for s in checkpoints if s < steps]), np.array(m["jit"]),
                      window, drift)
