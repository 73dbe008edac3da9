"""Training speed: ``scansnap.train.train`` against a reference loop written like the authors' script.

The reference follows ``decoder_only.py`` (``Model2`` / ``Dataset2``, facebookresearch/luckmatters,
``ssl/real-dataset``): one configuration per run; every step draws a batch with a Python loop (a
class by ``random.choice``, then one ``torch.multinomial`` per sequence), builds one-hot matrices,
computes the self-masked attention of the query with ``K2`` (weight ``Z``), the l2-normalized
attended histogram, the logits with ``K1`` (weight ``Y^T``) and ``CrossEntropyLoss``, and steps two
``torch.optim.SGD`` optimizers (momentum 0.9), one per parameter, with their own learning rates.
Like the authors' script, the one-hot matrices are built for the whole batch in ``forward``
(``F.one_hot(x)``); the reference runs in float32 as theirs did.

Before any timing the reference is checked against ours in float64: the gradients on one identical
batch, and five SGD steps on identical batches.

Part 1 times one configuration on Syn-Small (batch 128, T = 128, eta_Y = eta_Z = 1, zero init).
Part 2 times a 7 x 7 learning-rate grid x 10 seeds (490 configurations, 100 steps): ours trains all
of them in one call; the reference is timed on a few configurations and extrapolated linearly.

All times are taken inside this process, after imports and a warm-up step; no time limit is checked.

Usage: ``python benchmarks/bench_train.py [--quick] [--threads N]``.
"""

from __future__ import annotations

import argparse
import platform
import random
import resource
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.nn import functional

from scansnap.data import SequenceClasses, syn_small
from scansnap.model import YZModel, token_counts
from scansnap.train import train

BATCH = 128
T = 128
MOMENTUM = 0.9


@dataclass(frozen=True)
class Settings:
    """What one benchmark run does (full or ``--quick``)."""

    single_steps: int  # part 1: steps per timed run
    repeats: int  # part 1: timed runs per trainer; the best is printed
    grid: int  # part 2: learning rates per axis
    seeds: int  # part 2: seeds 1..seeds
    sweep_steps: int  # part 2: steps per configuration
    reference_sample: int  # part 2: reference configurations actually timed


FULL = Settings(single_steps=200, repeats=3, grid=7, seeds=10, sweep_steps=100, reference_sample=5)
QUICK = Settings(single_steps=20, repeats=1, grid=2, seeds=2, sweep_steps=10, reference_sample=2)


# --------------------------------------------------------------------------------------------
# The reference: the authors' Dataset2.generate and Model2, one configuration per run.
# --------------------------------------------------------------------------------------------


class ReferenceData:
    """``Dataset2.generate``: a Python loop over the batch, one ``torch.multinomial`` per sequence."""

    def __init__(self, classes: SequenceClasses, T: int) -> None:
        self.T = T
        self.facts = []
        for n in range(classes.K):
            tokens = torch.nonzero(classes.probs[n] > 0).flatten()
            self.facts.append(
                dict(
                    probs=classes.probs[n, tokens].float(),
                    tokens=tokens,
                    last_token=int(classes.query[n]),
                    next_token=int(classes.next[n]),
                )
            )

    def generate(self, batch: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``(x (batch, T), label (batch,))``: classes uniform (``random``), contexts from torch's RNG."""
        x = torch.empty(batch, self.T, dtype=torch.long)
        label = torch.empty(batch, dtype=torch.long)
        for i in range(batch):
            fact = random.choice(self.facts)
            indices = torch.multinomial(fact["probs"], self.T - 1, replacement=True)
            x[i, :-1] = fact["tokens"][indices]
            x[i, -1] = fact["last_token"]
            label[i] = fact["next_token"]
        return x, label


class ReferenceModel(nn.Module):
    """``Model2`` with ``normalize=true``, ``residual=false``, self-masked keys, zero init.

    ``K1.weight`` is ``Y^T`` (logits ``K1(f~) = Y^T f~``); ``K2.weight`` is ``Z`` (query rows).
    """

    def __init__(self, M: int, dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        self.M = M
        self.K1 = nn.Linear(M, M, bias=False, dtype=dtype)
        self.K2 = nn.Linear(M, M, bias=False, dtype=dtype)
        with torch.no_grad():
            self.K1.weight[:] = 0
            self.K2.weight[:] = 0
        self.loss_func = nn.CrossEntropyLoss()

    def forward(self, x: torch.Tensor, label: torch.Tensor) -> torch.Tensor:
        """Mean cross-entropy of sequences ``x`` ``(B, T)`` with next tokens ``label`` ``(B,)``."""
        X = functional.one_hot(x, num_classes=self.M).to(self.K1.weight.dtype)
        X_key = X[:, :-1, :]
        inner_prod = torch.bmm(self.K2(X_key), X[:, -1, :].unsqueeze(2)).squeeze(2)
        attns = functional.softmax(inner_prod, dim=1)
        combined = torch.bmm(attns.unsqueeze(1), X_key).squeeze(1)
        combined = combined / combined.norm(dim=1, keepdim=True)
        return self.loss_func(self.K1(combined), label)


class ReferenceTrainer:
    """One configuration: the model and two ``torch.optim.SGD`` optimizers (one per parameter)."""

    def __init__(self, M: int, eta_Y: float, eta_Z: float, dtype: torch.dtype = torch.float32,
                 device: str | torch.device = "cpu") -> None:
        self.device = torch.device(device)
        self.model = ReferenceModel(M, dtype).to(self.device)
        self.opt_Y = torch.optim.SGD([self.model.K1.weight], lr=eta_Y, momentum=MOMENTUM)
        self.opt_Z = torch.optim.SGD([self.model.K2.weight], lr=eta_Z, momentum=MOMENTUM)

    def step(self, x: torch.Tensor, label: torch.Tensor) -> None:
        """One SGD update on the batch (drawn on the CPU, as the authors' ``Dataset2`` does, then moved)."""
        x, label = x.to(self.device), label.to(self.device)
        self.opt_Y.zero_grad()
        self.opt_Z.zero_grad()
        loss = self.model(x, label)
        loss.backward()
        self.opt_Y.step()
        self.opt_Z.step()

    @property
    def Y(self) -> torch.Tensor:
        """``Y = K1.weight^T``."""
        return self.model.K1.weight.detach().T

    @property
    def Z(self) -> torch.Tensor:
        """``Z = K2.weight``."""
        return self.model.K2.weight.detach()


def reference_run(classes: SequenceClasses, eta_Y: float, eta_Z: float, steps: int, seed: int,
                  device: str | torch.device = "cpu") -> None:
    """The authors' protocol for one configuration: seed, build, then ``steps`` sampled updates on ``device``."""
    random.seed(seed)
    torch.manual_seed(seed)
    data = ReferenceData(classes, T)
    trainer = ReferenceTrainer(classes.M, eta_Y, eta_Z, device=device)
    for _ in range(steps):
        trainer.step(*data.generate(BATCH))
    if trainer.device.type == "cuda":
        torch.cuda.synchronize()


# --------------------------------------------------------------------------------------------
# Validation: the reference computes what our trainer computes (float64).
# --------------------------------------------------------------------------------------------


def gradient_error(classes: SequenceClasses, seed: int = 0) -> float:
    """Max |grad_ours - grad_reference| over ``Y`` and ``Z`` on one batch, at a random ``(Y, Z)``.

    Ours goes through the trainer's own path (token counts, the closed-form Lemma 1 gradients of
    ``YZModel.loss_and_gradients``); the reference through one-hot matrices and autograd. Both in
    float64.
    """
    g = torch.Generator().manual_seed(seed)
    M = classes.M
    Y = torch.randn(M, M, generator=g, dtype=torch.float64)
    Z = torch.randn(M, M, generator=g, dtype=torch.float64)
    x, n = classes.sample(BATCH, T, g)
    target = classes.next[n]

    ours = YZModel.from_params(Y[None], Z[None])
    _, grad_Y, grad_Z = ours.loss_and_gradients(x[:, -1], token_counts(x[:, :-1], M), target)

    ref = ReferenceModel(M, torch.float64)
    with torch.no_grad():
        ref.K1.weight.copy_(Y.T)
        ref.K2.weight.copy_(Z)
    ref(x, target).backward()
    err_Y = (grad_Y[0] - ref.K1.weight.grad.T).abs().max()
    err_Z = (grad_Z[0] - ref.K2.weight.grad).abs().max()
    return float(max(err_Y, err_Z))


def our_batches(classes: SequenceClasses, seed: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """The batches ``train(..., seed=seed, init="zero")`` draws: its seed's generator, in order."""
    g = torch.Generator().manual_seed(seed)
    while True:
        x, n = classes.sample(BATCH, T, g)
        yield x, classes.next[n]


def trajectory_error(
    classes: SequenceClasses, eta_Y: float, eta_Z: float, steps: int = 5, seed: int = 1
) -> float:
    """Max |(Y, Z)_ours - (Y, Z)_reference| after ``steps`` momentum-SGD updates on identical batches."""
    hist = train(classes, eta_Y, eta_Z, steps=steps, batch=BATCH, T=T, seed=seed, snapshot_steps=[steps])
    ref = ReferenceTrainer(classes.M, eta_Y, eta_Z, torch.float64)
    batches = our_batches(classes, seed)
    for _ in range(steps):
        ref.step(*next(batches))
    return float(max((hist.Y[0] - ref.Y).abs().max(), (hist.Z[0] - ref.Z).abs().max()))


# --------------------------------------------------------------------------------------------
# Timing.
# --------------------------------------------------------------------------------------------


def best_time(fn: Callable[[], object], repeats: int) -> float:
    """Shortest wall time (s) of ``repeats`` calls of ``fn``."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def ours_steps_per_s(classes: SequenceClasses, steps: int, repeats: int, dtype: torch.dtype) -> float:
    """Steps/s of ``train`` on one configuration (eta_Y = eta_Z = 1), after a one-step warm-up."""

    def run(n: int) -> None:
        train(classes, 1.0, 1.0, steps=n, batch=BATCH, T=T, momentum=MOMENTUM, seed=1, dtype=dtype)

    run(1)
    return steps / best_time(lambda: run(steps), repeats)


def reference_steps_per_s(classes: SequenceClasses, steps: int, repeats: int) -> float:
    """Steps/s of the reference loop on one configuration (float32), after a one-step warm-up."""
    random.seed(1)
    torch.manual_seed(1)
    data = ReferenceData(classes, T)
    trainer = ReferenceTrainer(classes.M, 1.0, 1.0)
    trainer.step(*data.generate(BATCH))

    def run() -> None:
        for _ in range(steps):
            trainer.step(*data.generate(BATCH))

    return steps / best_time(run, repeats)


def sweep_configs(grid: int, seeds: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(eta_Y, eta_Z, seed)``, each ``(grid**2 * seeds,)``: pairs from geomspace(0.1, 10) x seeds 1.."""
    etas = torch.tensor(np.geomspace(0.1, 10.0, grid))
    eta_Y, eta_Z = (a.flatten() for a in torch.meshgrid(etas, etas, indexing="ij"))
    seed = torch.arange(1, seeds + 1).repeat_interleave(len(eta_Y))
    return eta_Y.repeat(seeds), eta_Z.repeat(seeds), seed


def max_rss_mib() -> float:
    """Peak resident memory of this process so far (``ru_maxrss``, KiB on Linux), in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def time_batched(
    classes: SequenceClasses, cfg: tuple[torch.Tensor, ...], steps: int, dtype: torch.dtype
) -> float:
    """Seconds for one ``train`` call on all configurations, after a one-step warm-up call."""
    eta_Y, eta_Z, seed = cfg
    train(classes, eta_Y, eta_Z, steps=1, seed=seed, dtype=dtype)
    return best_time(lambda: train(classes, eta_Y, eta_Z, steps=steps, seed=seed, dtype=dtype), 1)


def time_reference_sample(
    classes: SequenceClasses, cfg: tuple[torch.Tensor, ...], steps: int, sample: int, device: str = "cpu"
) -> tuple[float, int]:
    """Mean seconds per reference configuration on ``device``, over ``sample`` configurations spread over the
    list."""
    eta_Y, eta_Z, seed = cfg
    picks = np.unique(np.linspace(0, len(seed) - 1, sample).round().astype(int))
    reference_run(classes, 1.0, 1.0, 1, 0, device)  # warm-up
    total = 0.0
    for i in picks:
        lrs = float(eta_Y[i]), float(eta_Z[i])
        total += best_time(lambda lrs=lrs, i=i: reference_run(classes, *lrs, steps, int(seed[i]), device), 1)
    return total / len(picks), len(picks)


# --------------------------------------------------------------------------------------------
# Report.
# --------------------------------------------------------------------------------------------


def print_header(threads: int, quick: bool) -> None:
    """Versions, thread count and CPU."""
    cpu = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    print(f"torch {torch.__version__}, python {platform.python_version()}, CPU: {cpu}")
    print(f"torch threads: {threads}{'   (--quick: smoke run, small sizes)' if quick else ''}")
    print("times measured inside the process, after imports and one warm-up step\n")


def part_validation(classes: SequenceClasses) -> None:
    """Print the reference-vs-ours errors (float64)."""
    print("Validation (float64): reference loop vs scansnap, Syn-Small, batch 128, T 128")
    print(f"  max |grad diff| on one identical batch, random (Y, Z):       {gradient_error(classes):.2e}")
    err = trajectory_error(classes, eta_Y=3.0, eta_Z=0.5)
    print(f"  max |(Y, Z) diff| after 5 SGD steps, eta_Y=3, eta_Z=0.5:      {err:.2e}\n")


def part_single(classes: SequenceClasses, s: Settings) -> None:
    """Part 1: one configuration."""
    print(f"Part 1: one configuration, Syn-Small, batch {BATCH}, T {T}, SGD momentum {MOMENTUM}, "
          f"eta_Y = eta_Z = 1, zero init, {s.single_steps} steps (best of {s.repeats})")
    ref = reference_steps_per_s(classes, s.single_steps, s.repeats)
    ours64 = ours_steps_per_s(classes, s.single_steps, s.repeats, torch.float64)
    ours32 = ours_steps_per_s(classes, s.single_steps, s.repeats, torch.float32)
    print(f"  reference (authors' loop, float32): {ref:8.1f} steps/s")
    for name, value in (("float64 (default)", ours64), ("float32", ours32)):
        label = f"ours train(), {name}:"
        print(f"  {label:35s} {value:8.1f} steps/s   ratio ours/reference {value / ref:5.1f}x")
    print()


def part_sweep(classes: SequenceClasses, s: Settings) -> None:
    """Part 2: a learning-rate x seed sweep, batched against one-after-another."""
    cfg = sweep_configs(s.grid, s.seeds)
    C = len(cfg[2])
    print(f"Part 2: {s.grid} x {s.grid} learning-rate pairs in geomspace(0.1, 10) x {s.seeds} seeds = "
          f"{C} configurations, {s.sweep_steps} steps each, batch {BATCH}, T {T}")
    rss_before = max_rss_mib()
    ours64 = time_batched(classes, cfg, s.sweep_steps, torch.float64)
    rss_after = max_rss_mib()
    ours32 = time_batched(classes, cfg, s.sweep_steps, torch.float32)
    per_config, measured = time_reference_sample(classes, cfg, s.sweep_steps, s.reference_sample)
    ref = per_config * C
    print(f"  reference (float32), one after another: {ref:8.2f} s   "
          f"(reference: measured on {measured} configs, {per_config:.2f} s each, extrapolated to {C})")
    for name, value in (("float64", ours64), ("float32", ours32)):
        label = f"ours, one train() call, {name}:"
        print(f"  {label:40s} {value:8.2f} s   ratio reference/ours {ref / value:6.1f}x")
    print(f"  peak RSS (ru_maxrss) after the float64 batched run: {rss_after:.0f} MiB "
          f"(before it: {rss_before:.0f} MiB)")


def main() -> None:
    """Parse the arguments and run the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fast smoke run with small sizes")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    settings = QUICK if args.quick else FULL
    classes = syn_small()
    start = time.perf_counter()
    print_header(torch.get_num_threads(), args.quick)
    part_validation(classes)
    part_single(classes, settings)
    part_sweep(classes, settings)
    print(f"\nbenchmark wall time (in process, after imports): {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
