"""Chapter 8's experiments: a real transformer language model trained on WikiText-2 (Figures 7 and 10).

* :data:`FREEZE` (``fig-paper-7``, ``fig-ch8-tokens``): the standard model (:class:`scansnap.lm.TransformerLM`)
  with 1 layer and with ``multi_layers`` layers, and a 1-layer model without positional encoding (the
  theory's setting), trained at one constant learning rate; held-out entropy, freeze rate and loss at
  checkpoints (C40); the paper's ``Z`` checked against the no-PE model's attention; and, beyond the paper,
  the attention each key token receives against how common it is across contexts.
* :data:`~scansnap.experiments.ch08_rates.RATES` (``fig-paper-10``): held-out attention entropy at the end of
  training against the learning rate, for both depths and several seeds (C41).

Both read verified WikiText-2 files (:mod:`scansnap.wikitext`): the ``book`` profile trains on
``valid.txt`` and evaluates on ``test.txt``; the ``paper`` profile trains on ``train.txt`` and evaluates
on ``valid.txt`` when the folder has ``train.txt``, and says in its result that it could not otherwise.
The plots live in :mod:`scansnap.experiments.wikitext_figures`; Figure 10's grid in
:mod:`scansnap.experiments.ch08_rates`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from scansnap import lm, lm_train, token_stats, wikitext
from scansnap._checks import check_choice, check_fraction, check_int, check_positive
from scansnap._threads import one_thread
from scansnap.experiments import wikitext_figures as figs
from scansnap.experiments.base import Experiment, FigureSpec, Progress
from scansnap.results import Config
from scansnap.verdicts import Rule, Verdict, at_least, at_most

CHAPTER = "book/chapters/08-wikitext"
_SMOKE = dict(train_split="valid", eval_split="test", vocab_cap=300, max_train_tokens=14_000, eval_sequences=16)
_BOOK = dict(train_split="valid", eval_split="test", vocab_cap=2000, eval_sequences=200)


@dataclass(frozen=True)
class WikiConfig(Config):
    """Data, model and optimizer settings shared by Chapter 8's experiments (defaults: the paper's).

    Attributes:
        data: the WikiText-2 folder (``""``: ``$SCANSNAP_WIKITEXT``, else ``../shared/data/wikitext-2``).
        train_split, eval_split: training and held-out splits (``paper``: train/valid, falling back to
            valid/test when ``train.txt`` is missing).
        vocab_cap: keep only the most frequent training words (0: all); max_train_tokens: 0 = all.
        eval_sequences: held-out windows of ``bptt + 1`` tokens for loss, entropy and freeze rate.
        batch, bptt: training chunk ``batch x bptt`` (the authors' 20 x 35).
        d, d_hid: embedding and feed-forward widths (200, 200); multi_layers: depth of the multi-layer model.
        dropout: dropout of the model (0.2, as in the authors' Figure 10 script); clip: gradient-norm clip (0.5).
    """

    data: str = ""
    train_split: str = "train"
    eval_split: str = "valid"
    vocab_cap: int = 0
    max_train_tokens: int = 0
    eval_sequences: int = 400
    batch: int = 20
    bptt: int = 35
    d: int = 200
    d_hid: int = 200
    multi_layers: int = 3
    dropout: float = 0.2
    clip: float = 0.5

    def __post_init__(self) -> None:
        check_choice("train_split", self.train_split, wikitext.SPLITS)
        check_choice("eval_split", self.eval_split, wikitext.SPLITS)
        check_int("vocab_cap", self.vocab_cap, low=0)
        check_int("max_train_tokens", self.max_train_tokens, low=0)
        check_int("eval_sequences", self.eval_sequences, low=2)
        check_int("batch", self.batch, low=1)
        check_int("bptt", self.bptt, low=2, high=512)
        check_int("d", self.d, low=2)
        check_int("d_hid", self.d_hid, low=1)
        check_int("multi_layers", self.multi_layers, low=2)
        check_fraction("dropout", self.dropout)
        check_positive("clip", self.clip)

    def splits(self) -> tuple[str, str, str]:
        """The (train, eval) splits actually used, and a note when ``train.txt`` is missing."""
        if self.train_split == "train" and not wikitext.has_split("train", self.data or None):
            return "valid", "test", (f"train.txt is not in {wikitext.data_dir(self.data or None)}: could NOT train "
                                     "on it as the paper did; trained on valid.txt and evaluated on test.txt")
        return self.train_split, self.eval_split, ""

    def corpus(self) -> tuple[lm_train.Corpus, str]:
        train, held, fallback = self.splits()
        data = lm_train.corpus(train, held, root=self.data or None, cap=self.vocab_cap, batch=self.batch,
                               bptt=self.bptt, max_train_tokens=self.max_train_tokens,
                               eval_sequences=self.eval_sequences)
        return data, "; ".join(s for s in (fallback, data.note) if s)

    def model(self, vocab: int, layers: int, seed: int, positional: bool = True) -> lm.TransformerLM:
        torch.manual_seed(seed)
        return lm.TransformerLM(vocab, self.d, self.d_hid, layers, self.dropout, positional, max_len=self.bptt)


# ------------------------------------------------------------------------------------------------
# fig-paper-7 and fig-ch8-tokens: one learning rate, checkpoints
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FreezeConfig(WikiConfig):
    """Figure 7's runs (and the token study).

    Attributes:
        lr: the constant learning rate; steps: SGD steps; every: steps between checkpoints.
        shown: checkpoint steps whose maps the figure shows (the paper: 0, 500, 1000, 1500).
        seed: initialization and dropout seed; probe: index of the held-out window shown.
        stat_sequences: held-out windows for the token study; pairs: (key, next) pairs per token for the
            next-token entropy; min_pairs: least number of (query, key) pairs behind a token's attention score.
    """

    lr: float = 5.0
    steps: int = 1500
    every: int = 50
    shown: tuple[int, ...] = (0, 500, 1000, 1500)
    seed: int = 0
    probe: int = 0
    stat_sequences: int = 4000
    pairs: int = 256
    min_pairs: int = 200
    PRESETS = {
        "smoke": dict(_SMOKE, steps=6, every=2, shown=(0, 2, 4, 6), stat_sequences=32, pairs=8, min_pairs=4),
        "book": dict(_BOOK, steps=450, every=50, shown=(0, 150, 300, 450), stat_sequences=2000),
        "paper": {},
    }

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive("lr", self.lr)
        check_int("steps", self.steps, low=2)
        check_int("every", self.every, low=1, high=self.steps)
        if self.steps % self.every:
            raise ValueError(f"every: must divide steps = {self.steps}; got {self.every}")
        if not self.shown or any(s % self.every or not 0 <= s <= self.steps for s in self.shown):
            raise ValueError(f"shown: must be checkpoint steps (multiples of every = {self.every} in "
                             f"[0, {self.steps}]); got {self.shown}")
        check_int("seed", self.seed, low=0)
        check_int("probe", self.probe, low=0, high=self.eval_sequences - 1)
        check_int("stat_sequences", self.stat_sequences, low=2)
        check_int("pairs", self.pairs, low=2)
        check_int("min_pairs", self.min_pairs, low=1)


@dataclass(frozen=True)
class TokenStudy:
    """Attention received by key tokens against how common they are (beyond the paper). ``N`` tokens
    (every token with ``pairs`` sampled next tokens and ``min_pairs`` attention pairs in each run).

    Attributes:
        ids: ``(N,)`` token ids; words: ``(N,)`` the words.
        next_entropy: ``(N,)`` next-token entropy (nats) in the training text
            (:func:`scansnap.token_stats.next_token_entropy`); doc_freq: ``(N,)`` share of training lines
            holding the token; frequency: ``(N,)`` its share of the training tokens.
        received: ``(3, N)`` attention received relative to uniform on held-out windows
            (:func:`scansnap.token_stats.received_attention`): 1-layer with positional encoding at
            initialization, the same model trained, and the 1-layer model without positional encoding trained.
    """

    ids: np.ndarray
    words: tuple[str, ...]
    next_entropy: np.ndarray
    doc_freq: np.ndarray
    frequency: np.ndarray
    received: np.ndarray


@dataclass(frozen=True)
class FreezeResult:
    """Figure 7's runs.

    Attributes:
        config: the configuration; note: the splits and the vocabulary, in words.
        vocab_size, train_tokens: sizes of the data actually used.
        runs: trajectories of the 1-layer model, the multi-layer model (first layer) and the 1-layer
            model without positional encoding (:class:`scansnap.lm_train.Trajectory`).
        probe_words: ``(T,)`` the probe window's words.
        z_error: max ``|attention - softmax(Z)|`` of the trained no-PE model on the held-out windows (float64).
        tokens: the token study.
    """

    config: FreezeConfig
    note: str
    vocab_size: int
    train_tokens: int
    runs: tuple[lm_train.Trajectory, lm_train.Trajectory, lm_train.Trajectory]
    probe_words: tuple[str, ...]
    z_error: float
    tokens: TokenStudy


RUN_LABELS = ("1 layer", "multi-layer, first layer", "1 layer, no positional encoding")


def run_freeze(config: FreezeConfig, progress: Progress | None = None) -> FreezeResult:
    """Train the three models and measure them (one intra-op thread)."""
    c = config
    with one_thread():
        data, note = c.corpus()
        V, marks = len(data.vocab), list(range(0, c.steps + 1, c.every))
        held_words = data.heldout[:, :-1]
        stat = _stat_windows(c, data)
        runs, received = [], []
        for layers, positional in ((1, True), (c.multi_layers, True), (1, False)):
            model = c.model(V, layers, c.seed, positional)
            if layers == 1 and positional:
                received.append(token_stats.received_attention(model.first_attention(stat), stat, V))
            runs.append(lm_train.train(model, data, lr=c.lr, steps=c.steps, checkpoints=marks, bptt=c.bptt,
                                       clip=c.clip, seed=c.seed, probe=c.probe, progress=progress))
            if layers == 1:
                received.append(token_stats.received_attention(model.first_attention(stat), stat, V))
            if not positional:
                z_err = lm.z_error(model, held_words)
        tokens = _token_study(c, data, received)
    probe = tuple(data.vocab.words[i] for i in held_words[c.probe].tolist())
    return FreezeResult(c, note, V, len(data.train_ids), tuple(runs), probe, z_err, tokens)


def _stat_windows(c: FreezeConfig, data: lm_train.Corpus) -> torch.Tensor:
    held = data.vocab.encode(wikitext.tokens(data.eval_split, c.data or None))
    n = min(c.stat_sequences, len(held) // c.bptt)
    return held[: n * c.bptt].reshape(n, c.bptt)


def _token_study(c: FreezeConfig, data: lm_train.Corpus, received: list) -> TokenStudy:
    V, words = len(data.vocab), data.vocab.words
    ent = token_stats.next_token_entropy(data.train_ids, V, window=c.bptt, pairs=c.pairs, seed=c.seed)
    doc = token_stats.document_frequency(data.train_ids, V, words.index(wikitext.EOS))
    freq = np.bincount(data.train_ids.numpy(), minlength=V) / len(data.train_ids)
    scores = np.stack([r[0] for r in received])
    enough = np.stack([r[1] for r in received]).min(0) >= c.min_pairs
    keep = np.isfinite(ent) & enough & np.isfinite(scores).all(0)
    if data.vocab.unk:
        keep[words.index(data.vocab.unk)] = False  # <unk> merges many words: no single token
    ids = np.flatnonzero(keep)
    return TokenStudy(ids, tuple(words[i] for i in ids), ent[ids], doc[ids], freq[ids], scores[:, ids])


def freeze_work(c: FreezeConfig) -> int:
    return 3 * c.steps


def freeze_numbers(r: FreezeResult) -> dict[str, float]:
    """C40's numbers for the 1-layer (``_1``) and multi-layer (``_multi``) models.

    ``entropy_fall``: relative fall of the held-out entropy from step 0 to the end; ``late_early``: its
    change over the second half of training over its change over the first half; ``freeze_decay``: the
    mean freeze rate over the last quarter of checkpoint intervals over that of the first quarter;
    ``loss_fall``: the relative fall of the training loss over the second half (mean of the last tenth of
    the steps against the tenth before the midpoint).
    """
    out = {}
    for suffix, tr in zip(("_1", "_multi"), r.runs[:2], strict=True):
        H, steps, rate, loss = tr.entropy, tr.steps, tr.freeze, tr.train_loss
        mid = int(np.argmin(np.abs(steps - steps[-1] / 2)))
        q, w = max(len(rate) // 4, 1), max(len(loss) // 10, 1)
        half = len(loss) // 2
        before, last = loss[max(half - w, 0): half].mean(), loss[-w:].mean()
        out[f"entropy_fall{suffix}"] = float((H[0] - H[-1]) / H[0])
        out[f"late_early{suffix}"] = float(abs(H[mid] - H[-1]) / max(abs(H[0] - H[mid]), 1e-12))
        out[f"freeze_decay{suffix}"] = float(rate[-q:].mean() / rate[:q].mean())
        out[f"loss_fall{suffix}"] = float((before - last) / before)
    return out


def _c40_criteria(suffix: str, depth: str):
    return (
        at_least(f"entropy_fall{suffix}", f"relative fall of held-out entropy, start to end ({depth})", 0.2, 0.05),
        at_most(f"late_early{suffix}", f"entropy change in the 2nd half / in the 1st half ({depth})", 0.25, 0.5),
        at_most(f"freeze_decay{suffix}", f"freeze rate, last / first quarter of checkpoints ({depth})", 0.2, 0.5),
        at_least(f"loss_fall{suffix}", f"relative fall of the training loss over the 2nd half ({depth})", 0.02,
                 0.005),
    )


RULE_C40 = Rule("C40", "real-data", _c40_criteria("_1", "1 layer") + _c40_criteria("_multi", "multi-layer"),
                note="Attention freezes when its entropy plateaus and its relative change per step decays towards 0 "
                     "while the training loss still falls at the same constant learning rate; the held-out maps "
                     "are those of the first layer with dropout off.")


def freeze_verdicts(r: FreezeResult) -> list[Verdict]:
    """C40 from the 1-layer and multi-layer runs."""
    c, n = r.config, freeze_numbers(r)
    protocol = (f"WikiText-2, trained on {r.note}; {r.train_tokens:,} training tokens; PyTorch-tutorial transformer "
                f"LM (d = {c.d}, d_hid = {c.d_hid}, 1 head, dropout {c.dropout}, sinusoidal positional encoding), "
                f"1 and {c.multi_layers} layers; SGD without momentum at constant lr {c.lr:g}, clip {c.clip:g}, batch "
                f"{c.batch} x bptt {c.bptt}, {c.steps} steps, seed {c.seed}; held-out maps of {c.eval_sequences} "
                f"windows every {c.every} steps")
    nope = r.runs[2]
    details = (f"held-out loss {r.runs[0].heldout_loss[0]:.2f} -> {r.runs[0].heldout_loss[-1]:.2f} (1 layer), "
               f"{r.runs[1].heldout_loss[0]:.2f} -> {r.runs[1].heldout_loss[-1]:.2f} (multi-layer); without "
               f"positional encoding the 1-layer entropy goes {nope.entropy[0]:.3f} -> {nope.entropy[-1]:.3f} nats")
    return [RULE_C40.judge(n, protocol=protocol, details=details, link=f"{CHAPTER}.html#fig-paper-7")]


FREEZE = Experiment(
    id="ch8-freeze", chapter=CHAPTER, config=FreezeConfig, result=FreezeResult, run=run_freeze,
    verdicts=freeze_verdicts, work=freeze_work,
    figures=(
        FigureSpec(id="fig-paper-7", claims=("C40",), plot=figs.plot_freeze, table=figs.freeze_table,
                   caption="Figure 7 of the paper, re-made: first-layer attention of one held-out WikiText-2 "
                           "window at several steps of SGD at a constant learning rate, for a 1-layer model, the "
                           "first layer of a multi-layer model and a 1-layer model without positional encoding; "
                           "with the held-out attention entropy, the freeze rate and the loss over training."),
        FigureSpec(id="fig-ch8-tokens", claims=(), plot=figs.plot_tokens, table=figs.tokens_table,
                   caption="Beyond the paper: attention a key token receives (relative to uniform) against how "
                           "common it is across contexts (the entropy of the next token when it is in the "
                           "attention window), at initialization and after training, with and without positional "
                           "encoding."),
    ),
)

EXPERIMENTS = [FREEZE]
RULES = [RULE_C40]
