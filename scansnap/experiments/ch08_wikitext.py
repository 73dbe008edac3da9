"""Chapter 8's Figure 7 experiments: a real transformer language model trained on WikiText-2 at one constant rate.

* :data:`FREEZE` (``ch8-freeze``, ``fig-paper-7``): the paper's model (:class:`scansnap.lm.TransformerLM`, 1 layer,
  the authors' Figure 7 notebook's settings) over several seeds; at checkpoints the held-out loss and attention
  entropy, the maps of a held-out and of a training window, the attention on the diagonal and on ``<unk>``, and the
  drift of the held-out maps against the random-walk floor of their per-step jitter
  (:mod:`scansnap.experiments.wikitext_freeze`).
* :data:`FREEZE_DEEP` (``ch8-freeze-deep``, ``fig-ch8-freeze-deep``): the same for the first layer of a
  ``layers``-layer model, one seed. C40a, C40b, P2 and P3
  (:func:`scansnap.experiments.wikitext_as_run.snap_verdicts`) read the 1-layer model over its
  seeds from ``ch8-freeze`` and this model from ``ch8-freeze-deep``, as the paper states it for both.
* The model without positional encoding and the token study: :mod:`scansnap.experiments.ch08_nope`;
  Figure 10: :mod:`scansnap.experiments.ch08_rates` (both import this module).

Data (:meth:`WikiConfig.splits`): the ``book`` and ``smoke`` profiles train on ``valid.txt`` and evaluate on
``test.txt`` with a capped vocabulary; the ``paper`` profile trains on ``train.txt`` and evaluates on ``valid.txt``
(the authors' data) when the folder has ``train.txt``, else on ``valid.txt`` + ``test.txt`` less every tenth article,
evaluated on those held-out articles, with the full vocabulary of that training text
(:func:`scansnap.lm_train.article_corpus`); the result's note says which. The paper's protocol (the ``paper``
preset) is the reference of the protocol labels (``GATED``): a run below it carries its cuts in both directions.
"""


from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from typing import ClassVar

import numpy as np
import torch

from scansnap import device, lm, lm_train, parallel, wikitext
from scansnap._checks import check_int
from scansnap._threads import one_thread
from scansnap.experiments import wikitext_figures as figs
from scansnap.experiments import wikitext_snap as ws
from scansnap.experiments.base import Experiment, FigureSpec, Progress
from scansnap.params import Choice, Fraction, Int, Maybe, Positive, Seeds, param, seed_list
from scansnap.results import Config

SMOKE = dict(train_split="valid", eval_split="test", vocab_cap=300, max_train_tokens=14_000, eval_sequences=16)
BOOK = dict(train_split="valid", eval_split="test", vocab_cap=2000, eval_sequences=200)
"""The data presets of Chapter 8's ``smoke`` and ``book`` profiles (the ``paper`` profile: the defaults)."""
GATED_DATA = ("train_split", "vocab_cap", "max_train_tokens", "batch", "bptt", "d", "d_hid")
"""The fields of :class:`WikiConfig` whose cut below the paper's protocol labels a verdict (both directions)."""


@dataclass(frozen=True)
class WikiConfig(Config):
    """Data, model and optimizer settings shared by Chapter 8's experiments (defaults: the paper's).

    Attributes:
        data: the WikiText-2 folder (``""``: that of :func:`scansnap.wikitext.data_dir`, ``$SCANSNAP_WIKITEXT``
            or else the per-user cache).
        train_split, eval_split: training and held-out splits (``paper``: train/valid; when ``train.txt`` is
            missing, valid + test less every ``heldout_every``-th article, evaluated on those articles; that text
            asked for by name: ``train_split="valid+test"``, :data:`scansnap.lm_train.ARTICLES`).
        heldout_every: the held-out articles of that fallback (every 10th: about 8% of the tokens).
        vocab_cap: keep only the most frequent training words (``None``: the full vocabulary, the paper's);
            max_train_tokens: keep only the first that many training tokens (``None``: all, the paper's).
        eval_sequences: held-out windows of ``bptt + 1`` tokens for loss, entropy and freeze rate.
        batch, bptt: training chunk ``batch x bptt`` (the authors' 20 x 35).
        d, d_hid: embedding and feed-forward widths (200, 200); multi_layers: depth of the multi-layer model.
        dropout: dropout of the model (0.2, as in the authors' Figure 10 script); clip: gradient-norm clip (0.5).
    """

    data: str = ""
    train_split: str = param("train", Choice(*wikitext.SPLITS, lm_train.ARTICLES))
    eval_split: str = param("valid", Choice(*wikitext.SPLITS))
    vocab_cap: int | None = param(None, Maybe(Int(low=3)))
    max_train_tokens: int | None = param(None, Maybe(Int(low=1)))
    eval_sequences: int = param(400, Int(low=2))
    batch: int = param(20, Int(low=1))
    bptt: int = param(35, Int(low=2, high=512))
    d: int = param(200, Int(low=2))
    d_hid: int = param(200, Int(low=1))
    multi_layers: int = param(3, Int(low=2))
    dropout: float = param(0.2, Fraction())
    clip: float = param(0.5, Positive())
    heldout_every: int = param(10, Int(low=2))

    def splits(self) -> tuple[str, str, str]:
        """The (train, eval) texts a run made now uses, and a note when ``train.txt`` is missing (the ``paper``
        profile then trains on valid + test less the held-out articles, :data:`scansnap.lm_train.ARTICLES`). It reads
        the data folder: only a run calls it (:meth:`corpus`); the protocol and the cuts read the fields alone. It
        stays a method here because the stored runs executed it (their code hash covers it, :mod:`scansnap.store`)."""
        if self.train_split == "train" and not wikitext.has_split("train", self.data or None):
            return lm_train.ARTICLES, lm_train.HELDOUT, (
                "train.txt is not in the data folder: could NOT train on it as the paper "
                f"did; trained on valid.txt + test.txt less every {self.heldout_every}th article and evaluated on "
                "those held-out articles")
        return self.train_split, self.eval_split, ""

    @property
    def data_protocol(self) -> str:
        """The data and model of a run, in words (the common part of Chapter 8's protocols), from the fields alone:
        which text a run asking for ``train.txt`` had is a fact of the run, not of its configuration (a run's
        :class:`scansnap.results.AsMade` describes it with ``train_split`` at what it used)."""
        vocab = "the full vocabulary" if self.vocab_cap is None else f"the {self.vocab_cap:,} most frequent words"
        first = "" if self.max_train_tokens is None else f" (its first {self.max_train_tokens:,} tokens)"
        articles = f"valid + test less every {self.heldout_every}th article"
        if self.train_split == lm_train.ARTICLES:
            train, held = articles, f"those {lm_train.HELDOUT}"
        elif self.train_split == "train":
            train, held = f"train.txt (where the data folder lacks it: {articles})", "valid.txt (else those articles)"
        else:
            train, held = f"{self.train_split}.txt", f"{self.eval_split}.txt"
        return (f"WikiText-2, trained on {train}{first}, held out {held}, {vocab}; PyTorch-tutorial "
                f"transformer LM (d = {self.d}, d_hid = {self.d_hid}, 1 head, dropout {self.dropout:g}, sinusoidal "
                f"positional encoding); SGD without momentum at a constant rate, clip {self.clip:g}, batch "
                f"{self.batch} x bptt {self.bptt}; held-out maps of {self.eval_sequences} windows, dropout off")

    def corpus(self) -> tuple[lm_train.Corpus, str]:
        train, held, fallback = self.splits()
        if train == lm_train.ARTICLES:
            if self.vocab_cap is not None or self.max_train_tokens is not None:
                raise ValueError("vocab_cap: the held-out-articles data (train.txt missing) keeps the full "
                                 "vocabulary and text; set vocab_cap and max_train_tokens to None")
            data = lm_train.article_corpus(root=self.data or None, every=self.heldout_every, batch=self.batch,
                                           bptt=self.bptt, eval_sequences=self.eval_sequences)
            return data, f"{fallback}; {data.note}"
        data = lm_train.corpus(train, held, root=self.data or None, cap=self.vocab_cap or 0, batch=self.batch,
                               bptt=self.bptt, max_train_tokens=self.max_train_tokens or 0,
                               eval_sequences=self.eval_sequences)
        return data, "; ".join(s for s in (fallback, data.note) if s)

    def model(self, vocab: int, layers: int, seed: int, positional: bool = True) -> lm.TransformerLM:
        torch.manual_seed(seed)
        return lm.TransformerLM(vocab, self.d, self.d_hid, layers, self.dropout, positional, max_len=self.bptt)


# ------------------------------------------------------------------------------------------------
# fig-paper-7 (ch8-freeze) and fig-ch8-freeze-deep (ch8-freeze-deep): one learning rate, checkpoints
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FreezeConfig(WikiConfig):
    """Figure 7's runs (defaults: the authors' Figure 7 notebook, the ``paper`` preset).

    Attributes:
        lr: the constant learning rate; ff_lr: that of the feed-forward ``linear1``/``linear2`` (the notebook's
            second parameter group: 10 beside 5; ``None``: ``lr``); dropout: 0.3, the notebook's.
        steps: SGD steps; every: steps between checkpoints; window: steps ``W`` of the drift and of the late
            window of C40b (:mod:`scansnap.experiments.wikitext_snap`; a multiple of ``every``).
        shown: checkpoint steps whose maps the figure shows (the authors' Figure 7 notebook: 0, 500, 1000, 1500).
        seeds: one run per seed (initialization and dropout); layers: encoder layers; probe: the held-out window
            whose maps are kept (the training window: the first ``bptt`` tokens of the first training stream).
    """

    dropout: float = 0.3
    lr: float = param(5.0, Positive(), "lr {:g}")
    ff_lr: float | None = param(10.0, Maybe(Positive()), lambda v: "" if v is None else f" ({v:g} on linear1/linear2)")
    steps: int = param(1500, Int(low=2))
    every: int = param(50, Int(low=1))
    window: int = 500
    shown: tuple[int, ...] = (0, 500, 1000, 1500)
    seeds: tuple[int, ...] = param((1, 2, 3), Seeds(distinct=True), seed_list)
    layers: int = param(1, Int(low=1))
    probe: int = param(0, Int(low=0))
    PROTOCOL = ("{data_protocol}; {layers} layer(s), {lr}{ff_lr}, {steps} steps, {seeds}, checkpoints every {every} "
                "steps, drift window {window} steps")
    PRESETS = {
        "smoke": dict(SMOKE, steps=6, every=2, window=4, shown=(0, 2, 4, 6), seeds=(1, 2)),
        "book": dict(BOOK, steps=450, every=50, window=150, shown=(0, 150, 300, 450), seeds=(1, 2)),
        "paper": {},
    }
    GATED: ClassVar[tuple[str, ...]] = (*GATED_DATA, "steps", "seeds")
    """The paper's Figure 7 (the tutorial on the full training text and vocabulary, maps to step 1500, three seeds
    here): a run below it labels C40a/C40b/P2/P3 with its cuts in both directions (no rule names a cut it depends
    on)."""
    NOT_GATED: ClassVar[dict[str, str]] = {
        "eval_split": "the held-out text follows from the training text (the book profile trains on valid.txt, so it "
                      "holds out test.txt): the training text is the gated cut (train_split), the held-out one is "
                      "never trained on in either profile",
        "eval_sequences": "how many held-out windows the entropy, loss and freeze rate average over (200 against "
                          "400): the precision of a mean over windows, not the mechanism; the seeds' spread is in "
                          "the t intervals",
        "window": "the late and first window W scale with the gated steps (a third of the run in every profile): "
                  "fixed by steps, which is gated",
        "shown": "the checkpoints the figure draws; no rule reads them",
    }

    def validate(self) -> None:
        check_int("every", self.every, low=1, high=self.steps)
        if self.steps % self.every:
            raise ValueError(f"every: must divide steps = {self.steps}; got {self.every}")
        check_int("window", self.window, low=self.every, high=self.steps)
        if self.window % self.every:
            raise ValueError(f"window: must be a multiple of every = {self.every}; got {self.window}")
        if not self.shown or any(s % self.every or not 0 <= s <= self.steps for s in self.shown):
            raise ValueError(f"shown: must be checkpoint steps (multiples of every = {self.every} in "
                             f"[0, {self.steps}]); got {self.shown}")
        check_int("probe", self.probe, low=0, high=self.eval_sequences - 1)

    def train(self, data: lm_train.Corpus, seed: int, positional: bool = True, progress: Progress | None = None,
              where: str | None = None) -> tuple[lm.TransformerLM, lm_train.Trajectory]:
        """Train one model of this configuration from ``seed`` (one thread is the caller's) on the device ``where``
        (:func:`scansnap.device.resolve`); the model comes back on the CPU."""
        model = self.model(len(data.vocab), self.layers, seed, positional)
        tr = lm_train.train(model, data, lr=self.lr, steps=self.steps, checkpoints=self.marks(), bptt=self.bptt,
                            clip=self.clip, seed=seed, probe=self.probe, progress=progress, ff_lr=self.ff_lr,
                            window=self.window, device=where)
        return model, tr

    def marks(self) -> list[int]:
        return list(range(0, self.steps + 1, self.every))


@dataclass(frozen=True)
class DeepConfig(FreezeConfig):
    """Figure 7's multi-layer model (its first layer): :class:`FreezeConfig` with ``layers = 3`` and one seed."""

    layers: int = 3
    seeds: tuple[int, ...] = (1,)
    PRESETS = {
        "smoke": dict(FreezeConfig.PRESETS["smoke"], seeds=(1,)),
        "book": dict(FreezeConfig.PRESETS["book"], seeds=(1,)),
        "paper": {},
    }


@dataclass(frozen=True)
class FreezeResult:
    """Figure 7's runs: one trajectory per seed.

    Attributes:
        config: the configuration; note: the training and held-out text and the vocabulary, in words.
        vocab_size, train_tokens: sizes of the data actually used.
        runs: one :class:`scansnap.lm_train.Trajectory` per seed (the first layer).
        probe_words: ``(T,)`` the held-out probe window's words; train_words: ``(T,)`` the training window's.
        unk_uniform: the share of attention on ``<unk>`` keys that uniform attention would give on the held-out
            windows (rows ``i >= 1``; nan without an unk word): the baseline of
            :attr:`scansnap.lm_train.Trajectory.unk`.
    """

    config: FreezeConfig
    note: str
    vocab_size: int
    train_tokens: int
    runs: tuple[lm_train.Trajectory, ...]
    probe_words: tuple[str, ...]
    train_words: tuple[str, ...]
    unk_uniform: float


def unk_uniform(x: torch.Tensor, unk: int | None) -> float:
    """Mean over windows ``x`` ``(S, T)`` and rows ``i >= 1`` of the share of ``<unk>`` among keys ``0..i``."""
    if unk is None:
        return float("nan")
    seen = (x == unk).double().cumsum(1) / torch.arange(1, x.shape[1] + 1)
    return seen[:, 1:].mean().item()


def _one_seed(config: FreezeConfig, where: str, seed: int, data: lm_train.Corpus | None = None,
              progress: Progress | None = None) -> lm_train.Trajectory:
    """One seed's run of :func:`run_freeze` on the device ``where`` (reads the corpus unless given it)."""
    return config.train(data if data is not None else config.corpus()[0], seed, progress=progress, where=where)[1]


def run_freeze(config: FreezeConfig, progress: Progress | None = None) -> FreezeResult:
    """Train one model per seed and measure it, the seeds fanned out by :func:`scansnap.parallel.fan_out` (one
    intra-op thread per run; ``--jobs`` / ``$SCANSNAP_JOBS`` runs at once, or a Dask cluster) on the device of
    ``$SCANSNAP_DEVICE``."""
    c, where = config, str(device.resolve())
    with one_thread():
        data, note = c.corpus()
        fanned = parallel.fan_out(partial(_one_seed, c, where), c.seeds,
                                  here=partial(_one_seed, c, where, data=data, progress=progress))
        runs = tuple(fanned.results)
        if progress is not None and fanned.backend != "sequential":
            progress(len(c.seeds) * c.steps)
    words = data.vocab.words
    unk = words.index(data.vocab.unk) if data.vocab.unk else None
    return FreezeResult(c, note, len(words), len(data.train_ids), runs,
                        tuple(words[i] for i in data.heldout[c.probe, :-1].tolist()),
                        tuple(words[i] for i in data.streams[0, : c.bptt].tolist()),
                        unk_uniform(data.heldout[:, :-1], unk))


def freeze_work(c: FreezeConfig) -> int:
    return len(c.seeds) * c.steps


def freeze_prefix(c: FreezeConfig, steps: int) -> FreezeConfig:
    """The first ``steps`` steps of the first seed's run, checkpointed at step 0 and at ``steps`` only (at least 2
    steps): what ``python -m scansnap store verify`` re-runs of a stored Figure 7 (the other seeds differ by
    their seed alone, and their arrays are held by their digests). Nothing in a run depends on its length or on
    where it is checkpointed (a checkpoint measures in eval mode and draws no random number), so the prefix's step
    0 and training losses equal the stored ones."""
    n = max(2, min(steps, c.steps))
    return replace(c, steps=n, every=n, window=n, shown=(0, n), seeds=c.seeds[:1])


CURVES = ("heldout_loss", "entropy", "probe_maps", "train_maps", "diagonal", "unk")


def trajectory_checkpoints(key: object, tr: lm_train.Trajectory) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """One run's held-out curves and maps by checkpoint step, its jitter and training loss, named
    ``"<key>.<curve>"`` (the drift and the freeze rate are left out: they measure the change since an earlier
    checkpoint, which a prefix checkpointed elsewhere measures over another span)."""
    out = {f"{key}.{name}": (tr.steps, getattr(tr, name)) for name in CURVES}
    out[f"{key}.jitter"] = (tr.jitter_steps, tr.jitter)
    out[f"{key}.train_loss"] = (np.arange(1, len(tr.train_loss) + 1), tr.train_loss)
    return out


def freeze_checkpoints(r: FreezeResult) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """:func:`trajectory_checkpoints` of every seed (``"seed<s>.<curve>"``): what ``store verify`` compares."""
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for seed, tr in zip(r.config.seeds, r.runs, strict=True):
        out |= trajectory_checkpoints(f"seed{seed}", tr)
    return out


_CAPTION = ("first-layer attention of one held-out WikiText-2 window and of one training window at several steps "
            "of SGD at a constant learning rate (first seed), with, over the seeds, the held-out attention "
            "entropy, the drift of the held-out maps over the window against the random-walk floor of their "
            "per-step jitter, the held-out loss, and the attention on the diagonal and on <unk>.")

FREEZE = Experiment(
    id="ch8-freeze", config=FreezeConfig, result=FreezeResult, run=run_freeze,
    work=freeze_work, prefix=freeze_prefix, checkpoints=freeze_checkpoints,
    figures=(FigureSpec(id="fig-paper-7", claims=("C40a", "C40b", "P2", "P3"),
                        plot=lambda r: figs.plot_freeze(r.runs, r.config.shown),
                        table=lambda r: figs.freeze_table(r.runs, r.config.seeds),
                        caption="Figure 7 of the paper, re-made (1-layer model): " + _CAPTION),),
)
FREEZE_DEEP = Experiment(
    id="ch8-freeze-deep", config=DeepConfig, result=FreezeResult, run=run_freeze,
    work=freeze_work, prefix=freeze_prefix, checkpoints=freeze_checkpoints,
    figures=(FigureSpec(id="fig-ch8-freeze-deep", claims=("C40a", "C40b", "P2", "P3"),
                        plot=lambda r: figs.plot_freeze(r.runs, r.config.shown),
                        table=lambda r: figs.freeze_table(r.runs, r.config.seeds),
                        caption="Figure 7's multi-layer model (its first layer): " + _CAPTION),),
)

EXPERIMENTS = [FREEZE, FREEZE_DEEP]
RULES = ws.RULES
