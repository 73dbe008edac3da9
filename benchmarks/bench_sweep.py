"""The whole Syn-Medium sweep of Chapter 7 (the paper's Figure 6), batched, against one run per configuration.

Ours: the chapter's own code path, :func:`scansnap.sweep.train_grid` (what
``scansnap.experiments.ch07_syn_medium.SWEEP`` runs per dataset), i.e. ONE ``scansnap.train.train`` call per
dataset over all its (eta_Z, eta_Y / eta_Z, seed) configurations (float32, closed-form Lemma 1 gradients,
one intra-op thread), plus the final entropies. The recall curves the experiment measures after training
are not timed.

Reference: the reference loop of ``bench_train.py`` (the authors' ``Dataset2`` / ``Model2`` protocol with
torch autograd and two ``torch.optim.SGD`` optimizers, one configuration per run, float32), imported
from there, not copied. Running it on all 640 configurations would take tens of minutes, so it is
timed on ``--sample`` configurations per dataset (spread over that dataset's list) and extrapolated
linearly to all of them; the printout says so. The reference starts from zero weights and ours from
the uniform initialization: a step costs the same either way.

Before timing, the reference is checked against ours on Syn-Medium (float64): gradients on one batch
and five SGD steps, with ``bench_train``'s own checks.

Usage: ``python benchmarks/bench_sweep.py [--quick] [--sample N] [--threads N]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench_train.py is a sibling script
import bench_train  # noqa: E402

from scansnap import data, sweep  # noqa: E402
from scansnap.experiments import ch07_syn_medium as ch7  # noqa: E402


def sweep_params(quick: bool) -> sweep.GridConfig:
    """The paper's sweep (book and paper profiles are the same), or a small one with ``quick``."""
    params = ch7.SweepConfig.preset("paper")
    if quick:
        params = params.replace(num_query=(1, 3), eta_Z=(0.5, 2.0), ratio=(1.0, 5.0), seeds=(1, 2), steps=10)
    if (params.batch, params.T, params.momentum) != (bench_train.BATCH, bench_train.T, bench_train.MOMENTUM):
        raise ValueError("params: batch, T and momentum must match bench_train's reference")
    return params


def validate() -> None:
    """``bench_train``'s checks on Syn-Medium (3 queries, M = 79), float64."""
    classes = data.syn_medium(3)
    print("Validation (float64): reference loop vs scansnap, Syn-Medium q = 3, batch 128, T 128")
    print(f"  max |grad diff| on one identical batch, random (Y, Z):   {bench_train.gradient_error(classes):.2e}")
    err = bench_train.trajectory_error(classes, eta_Y=3.0, eta_Z=0.5)
    print(f"  max |(Y, Z) diff| after 5 SGD steps, eta_Y=3, eta_Z=0.5:  {err:.2e}\n")


def time_ours(q: int, params: sweep.GridConfig) -> float:
    """Seconds for the chapter's batched run of dataset ``q``, after a one-step warm-up run."""
    sweep.train_grid(q, params.replace(steps=1))
    start = time.perf_counter()
    sweep.train_grid(q, params)
    return time.perf_counter() - start


def main() -> None:
    """Parse the arguments and run the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fast smoke run with a small sweep")
    parser.add_argument("--sample", type=int, default=2, help="reference configurations timed per dataset")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads of the reference (default 1)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    params = sweep_params(args.quick)
    start = time.perf_counter()
    bench_train.print_header(torch.get_num_threads(), args.quick)
    validate()
    C = len(params.eta_Z) * len(params.ratio) * len(params.seeds)
    print(f"Sweep: Syn-Medium q in {list(params.num_query)}, eta_Z in {list(params.eta_Z)}, eta_Y/eta_Z in "
          f"{list(params.ratio)}, seeds {params.seeds[0]}..{params.seeds[-1]}: {C} configurations per dataset, "
          f"{params.steps} SGD steps each, batch {params.batch}, T {params.T}")
    total_ours = total_ref = 0.0
    for q in params.num_query:
        classes = data.syn_medium(q)
        ours = time_ours(q, params)
        cfg = sweep.configurations(params)
        per_config, measured = bench_train.time_reference_sample(
            classes, (cfg["eta_Y"], cfg["eta_Z"], cfg["seed"]), params.steps, args.sample)
        ref = per_config * C
        total_ours, total_ref = total_ours + ours, total_ref + ref
        print(f"  q = {q:2d} (M = {classes.M:3d}): ours, one train() call: {ours:7.1f} s   reference: "
              f"{ref:8.1f} s (measured on {measured} configs, {per_config:.2f} s each, extrapolated to {C})   "
              f"ratio {ref / ours:5.1f}x")
    print(f"\nWhole sweep ({C * len(params.num_query)} runs): ours {total_ours:.1f} s in "
          f"{len(params.num_query)} batched calls; reference one at a time {total_ref:.0f} s "
          f"(extrapolated from {args.sample} configs per dataset); ratio reference/ours {total_ref / total_ours:.1f}x")
    print(f"benchmark wall time (in process, after imports): {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
