"""Chapter 8's experiments: a real transformer language model trained on WikiText-2 (Figures 7 and 10).

* :data:`FREEZE` (``fig-paper-7``, ``fig-ch8-tokens``): the standard model (:class:`scansnap.lm.TransformerLM`)
  with 1 layer and with ``multi_layers`` layers, and a 1-layer model without positional encoding (the
  theory's setting), trained at one constant learning rate; held-out entropy, freeze rate and loss at
  checkpoints (C40, judged against the same models held at step 0); the paper's ``Z`` checked against the
  no-PE model's attention; and, beyond the paper, the attention each key token receives against how common
  it is across contexts.
* :data:`~scansnap.experiments.ch08_rates.RATES` (``fig-paper-10``): held-out attention entropy at the end of
  training against the learning rate, for both depths and several seeds (C41 on the 1-layer model, the
  paper's; X7 on the multi-layer one, the book's).

Both read verified WikiText-2 files (:mod:`scansnap.wikitext`): the ``book`` profile trains on
``valid.txt`` and evaluates on ``test.txt``; the ``paper`` profile trains on ``train.txt`` and evaluates
on ``valid.txt`` when the folder has ``train.txt``, and says in its result that it could not otherwise.
The paper's protocol (the ``paper`` preset: the full training split and vocabulary, the tutorial's model and
batches, 1500 steps for Figure 7) is the minimum for a negative verdict (``GATED``): a smaller run that fails
a rule is inconclusive, never "not reproduced". Figure 7's plots and the token study's data live in
:mod:`scansnap.experiments.wikitext_figures` (which imports no experiment module); Figure 10's grid in
:mod:`scansnap.experiments.ch08_rates` (which imports this module).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np
import torch

from scansnap import lm, lm_train, token_stats, wikitext
from scansnap._checks import check_choice, check_fraction, check_int, check_positive
from scansnap._threads import one_thread
from scansnap.experiments import wikitext_figures as figs
from scansnap.experiments.base import Experiment, FigureSpec, Progress
from scansnap.experiments.wikitext_figures import TokenStudy
from scansnap.results import Config
from scansnap.verdicts import Rule, Verdict, at_least, at_most

CHAPTER = "book/chapters/08-wikitext"
SMOKE = dict(train_split="valid", eval_split="test", vocab_cap=300, max_train_tokens=14_000, eval_sequences=16)
BOOK = dict(train_split="valid", eval_split="test", vocab_cap=2000, eval_sequences=200)
"""The data presets of Chapter 8's ``smoke`` and ``book`` profiles (the ``paper`` profile: the defaults)."""
GATED_DATA = ("train_split", "vocab_cap", "max_train_tokens", "batch", "bptt", "d", "d_hid")
"""The fields of :class:`WikiConfig` on which the paper's protocol is the minimum for a negative verdict."""


@dataclass(frozen=True)
class WikiConfig(Config):
    """Data, model and optimizer settings shared by Chapter 8's experiments (defaults: the paper's).

    Attributes:
        data: the WikiText-2 folder (``""``: that of :func:`scansnap.wikitext.data_dir`, ``$SCANSNAP_WIKITEXT``
            or else the per-user cache).
        train_split, eval_split: training and held-out splits (``paper``: train/valid, falling back to
            valid/test when ``train.txt`` is missing).
        vocab_cap: keep only the most frequent training words (``None``: the full vocabulary, the paper's);
            max_train_tokens: keep only the first that many training tokens (``None``: all, the paper's).
        eval_sequences: held-out windows of ``bptt + 1`` tokens for loss, entropy and freeze rate.
        batch, bptt: training chunk ``batch x bptt`` (the authors' 20 x 35).
        d, d_hid: embedding and feed-forward widths (200, 200); multi_layers: depth of the multi-layer model.
        dropout: dropout of the model (0.2, as in the authors' Figure 10 script); clip: gradient-norm clip (0.5).
    """

    data: str = ""
    train_split: str = "train"
    eval_split: str = "valid"
    vocab_cap: int | None = None
    max_train_tokens: int | None = None
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
        if self.vocab_cap is not None:
            check_int("vocab_cap", self.vocab_cap, low=3)
        if self.max_train_tokens is not None:
            check_int("max_train_tokens", self.max_train_tokens, low=1)
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

    def shortfall(self) -> tuple[str, ...]:
        """:meth:`scansnap.results.Config.shortfall`, plus the training split actually used when ``train.txt``
        is missing (the paper's protocol trains on it)."""
        cut = self.train_split == "train" and bool(self.splits()[2])
        return super().shortfall() + (("trained on valid.txt: train.txt is missing (paper profile: train.txt)",)
                                      if cut else ())

    def data_protocol(self) -> str:
        """The data and model of a run, in words (the common part of Chapter 8's protocols)."""
        train, held, _ = self.splits()
        vocab = "the full vocabulary" if self.vocab_cap is None else f"the {self.vocab_cap:,} most frequent words"
        first = "" if self.max_train_tokens is None else f" (its first {self.max_train_tokens:,} tokens)"
        return (f"WikiText-2, trained on {train}.txt{first}, held out {held}.txt, {vocab}; PyTorch-tutorial "
                f"transformer LM (d = {self.d}, d_hid = {self.d_hid}, 1 head, dropout {self.dropout:g}, sinusoidal "
                f"positional encoding); SGD without momentum at a constant rate, clip {self.clip:g}, batch "
                f"{self.batch} x bptt {self.bptt}; held-out maps of {self.eval_sequences} windows, dropout off")

    def corpus(self) -> tuple[lm_train.Corpus, str]:
        train, held, fallback = self.splits()
        data = lm_train.corpus(train, held, root=self.data or None, cap=self.vocab_cap or 0, batch=self.batch,
                               bptt=self.bptt, max_train_tokens=self.max_train_tokens or 0,
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
        "smoke": dict(SMOKE, steps=6, every=2, shown=(0, 2, 4, 6), stat_sequences=32, pairs=8, min_pairs=4),
        "book": dict(BOOK, steps=450, every=50, shown=(0, 150, 300, 450), stat_sequences=2000),
        "paper": {},
    }
    GATED: ClassVar[tuple[str, ...]] = (*GATED_DATA, "steps")
    """The paper's Figure 7 (the tutorial on the full training split and vocabulary, maps to step 1500) is the
    minimum protocol for a negative verdict on C40."""

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

    def protocol(self) -> str:
        return (f"{self.data_protocol()}; 1 and {self.multi_layers} layers (and 1 layer without positional "
                f"encoding), lr {self.lr:g}, {self.steps} steps, seed {self.seed}, checkpoints every {self.every} "
                "steps")


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


def freeze_work(c: FreezeConfig) -> int:
    return 3 * c.steps


def freeze_prefix(c: FreezeConfig, steps: int) -> FreezeConfig:
    """The first ``steps`` steps of the same runs (rounded down to a checkpoint, at least the first one): what
    ``python -m scansnap evidence verify`` re-runs of a stored Figure 7."""
    n = max(c.every, min(steps, c.steps) // c.every * c.every)
    return replace(c, steps=n, shown=tuple(s for s in c.shown if s <= n))


def freeze_checkpoints(r: FreezeResult) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Every run's held-out curves and probe maps by checkpoint step, and its training loss by step."""
    out = {}
    for key, tr in zip(("one", "multi", "nope"), r.runs, strict=True):
        for name in ("heldout_loss", "entropy", "probe_maps"):
            out[f"{key}.{name}"] = (tr.steps, getattr(tr, name))
        out[f"{key}.freeze"] = (tr.steps[1:], tr.freeze)
        out[f"{key}.train_loss"] = (np.arange(1, len(tr.train_loss) + 1), tr.train_loss)
    return out


@dataclass(frozen=True)
class Freeze:
    """C40's numbers for the 1-layer (``_1``) and multi-layer (``_multi``) models (:func:`freeze_measures`).

    Attributes:
        entropy_fall_1, entropy_fall_multi: relative fall of the held-out entropy from step 0 to the end.
        late_early_1, late_early_multi: its change over the second half of training over its change over the
            first half (nan when it did not change over the first half).
        freeze_decay_1, freeze_decay_multi: the mean freeze rate over the last quarter of checkpoint intervals
            over that of the first quarter (nan when the maps did not move in the first quarter).
        loss_fall_1, loss_fall_multi: relative fall of the training loss over the second half (mean of the last
            tenth of the steps against the tenth before the midpoint).
    """

    entropy_fall_1: float
    late_early_1: float
    freeze_decay_1: float
    loss_fall_1: float
    entropy_fall_multi: float
    late_early_multi: float
    freeze_decay_multi: float
    loss_fall_multi: float


def _ratio(num: float, den: float) -> float:
    return float(num / den) if den > 0 else float("nan")


def _trajectory_numbers(tr: lm_train.Trajectory) -> tuple[float, float, float, float]:
    H, steps, rate, loss = tr.entropy, tr.steps, tr.freeze, tr.train_loss
    mid = int(np.argmin(np.abs(steps - steps[-1] / 2)))
    q, w, half = max(len(rate) // 4, 1), max(len(loss) // 10, 1), len(loss) // 2
    before, last = loss[max(half - w, 0): half].mean(), loss[-w:].mean()
    return (_ratio(H[0] - H[-1], H[0]), _ratio(abs(H[mid] - H[-1]), abs(H[0] - H[mid])),
            _ratio(rate[-q:].mean(), rate[:q].mean()), _ratio(before - last, before))


def freeze_measures(one: lm_train.Trajectory, multi: lm_train.Trajectory) -> Freeze:
    """:class:`Freeze` from the 1-layer and the multi-layer trajectories."""
    return Freeze(*_trajectory_numbers(one), *_trajectory_numbers(multi))


def held_at_start(tr: lm_train.Trajectory) -> lm_train.Trajectory:
    """C40's control: the trajectory of the same model held at step 0 (no update): every checkpoint is step 0's
    (the same maps, entropy and held-out loss; freeze rate 0), and the loss of a model that is not updated does
    not fall (its training loss is taken as its step-0 held-out loss at every step)."""
    C = len(tr.steps)
    return replace(tr, train_loss=np.full_like(tr.train_loss, tr.heldout_loss[0]),
                   heldout_loss=np.full(C, tr.heldout_loss[0]), entropy=np.full(C, tr.entropy[0]),
                   freeze=np.zeros_like(tr.freeze), probe_maps=np.repeat(tr.probe_maps[:1], C, axis=0))


def _c40_criteria(suffix: str, depth: str):
    return (
        at_least(f"entropy_fall{suffix}", f"relative fall of held-out entropy, start to end ({depth})", 0.2, 0.05),
        at_most(f"late_early{suffix}", f"entropy change in the 2nd half / in the 1st half ({depth})", 0.25, 0.5),
        at_most(f"freeze_decay{suffix}", f"freeze rate, last / first quarter of checkpoints ({depth})", 0.2, 0.5),
        at_least(f"loss_fall{suffix}", f"relative fall of the training loss over the 2nd half ({depth})", 0.02,
                 0.005),
    )


RULE_C40 = Rule(
    "C40", "real-data", Freeze, _c40_criteria("_1", "1 layer") + _c40_criteria("_multi", "multi-layer"),
    alternative="the first-layer attention does not freeze while training goes on: it never sparsifies (entropy at "
                "its start), or it keeps changing at the rate it started with (freeze rate not decaying), or it "
                "stops only because training stops (training loss flat over the second half)",
    control="the same models held at step 0 (no update): entropy and maps unchanged, so no fall of the entropy and "
            "no movement whose decay could be measured",
    note="Attention freezes when its entropy plateaus and its relative change per step decays towards 0 while the "
         "training loss still falls at the same constant learning rate; the held-out maps are those of the first "
         "layer with dropout off. The paper states it for the 1-layer and the multi-layer model; both are required.")


def freeze_verdicts(r: FreezeResult) -> list[Verdict]:
    """C40 from the 1-layer and multi-layer runs, against the same models held at step 0."""
    one, multi, nope = r.runs
    details = (f"data: {r.note}; {r.train_tokens:,} training tokens; held-out loss {one.heldout_loss[0]:.2f} -> "
               f"{one.heldout_loss[-1]:.2f} (1 layer), {multi.heldout_loss[0]:.2f} -> {multi.heldout_loss[-1]:.2f} "
               f"(multi-layer); without positional encoding the 1-layer entropy goes {nope.entropy[0]:.3f} -> "
               f"{nope.entropy[-1]:.3f} nats")
    return [RULE_C40.judge(freeze_measures(one, multi), r.config,
                           control=freeze_measures(held_at_start(one), held_at_start(multi)), details=details,
                           link=FREEZE.link("fig-paper-7"))]


FREEZE = Experiment(
    id="ch8-freeze", chapter=CHAPTER, config=FreezeConfig, result=FreezeResult, run=run_freeze,
    verdicts=freeze_verdicts, work=freeze_work, prefix=freeze_prefix, checkpoints=freeze_checkpoints,
    figures=(
        FigureSpec(id="fig-paper-7", claims=("C40",), plot=lambda r: figs.plot_freeze(r.runs, r.config.shown),
                   table=lambda r: figs.freeze_table(r.runs),
                   caption="Figure 7 of the paper, re-made: first-layer attention of one held-out WikiText-2 "
                           "window at several steps of SGD at a constant learning rate, for a 1-layer model, the "
                           "first layer of a multi-layer model and a 1-layer model without positional encoding; "
                           "with the held-out attention entropy, the freeze rate and the loss over training."),
        FigureSpec(id="fig-ch8-tokens", claims=(), plot=lambda r: figs.plot_tokens(r.tokens),
                   table=lambda r: figs.tokens_table(r.tokens),
                   caption="Beyond the paper: attention a key token receives (relative to uniform) against how "
                           "common it is across contexts (the entropy of the next token when it is in the "
                           "attention window), at initialization and after training, with and without positional "
                           "encoding; <unk> (every word outside the vocabulary) marked apart."),
    ),
)

EXPERIMENTS = [FREEZE]
RULES = [RULE_C40]
