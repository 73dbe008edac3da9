"""Chapter 7's Syn-Medium grid (the paper's Figure 6 protocol) on a chosen device: ours against the reference loop
on the same device, and ours on the device against ours on this machine's CPU, ratios measured in one run.

Ours: :func:`scansnap.sweep.train_grid` (one batched ``train`` call over every configuration of a dataset), with
``SCANSNAP_DEVICE`` set (:mod:`scansnap.device`: batches drawn on the CPU, moved to the device; float32 with TF32
off). Reference: ``bench_train``'s authors'-protocol loop (one configuration per run, torch autograd and
``torch.optim.SGD``), its model on the same device, timed on ``--sample`` configurations and extrapolated to all
(the printout says so). Before timing, ours on the device is checked against ours on the CPU (final entropies).

Usage: ``python benchmarks/bench_device.py [--device cuda] [--q 3] [--sample 2] [--threads N]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_train  # noqa: E402

from scansnap import data, device, sweep  # noqa: E402
from scansnap.experiments import ch07_syn_medium as ch7  # noqa: E402


def time_ours(q: int, params: sweep.GridConfig, where: str) -> tuple[float, sweep.GridRun]:
    """Seconds of the chapter's batched run of dataset ``q`` on ``where`` (after a one-step warm-up), and the run."""
    os.environ[device.ENV] = where
    sweep.train_grid(q, params.replace(steps=1))
    start = time.perf_counter()
    run, _ = sweep.train_grid(q, params)
    return time.perf_counter() - start, run


def main() -> None:
    """Parse the arguments and run the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", help="the device to time (default cuda)")
    parser.add_argument("--q", type=int, default=3, help="Syn-Medium's number of queries (the dataset)")
    parser.add_argument("--sample", type=int, default=2, help="reference configurations timed")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch intra-op threads of the reference on the CPU (default 1; ours runs on one)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    dev = device.resolve(args.device)
    params = ch7.SweepConfig.preset("paper")
    classes, cfg = data.syn_medium(args.q), sweep.configurations(params)
    C = len(cfg["seed"])
    print(f"device {device.describe(dev)}; CPU threads {torch.get_num_threads()}; torch {torch.__version__}")
    print(f"Syn-Medium q = {args.q} (M = {classes.M}): {C} configurations, {params.steps} SGD steps, batch "
          f"{params.batch}, T {params.T}, {params.dtype}")
    on_dev, run_dev = time_ours(args.q, params, str(dev))
    on_cpu, run_cpu = time_ours(args.q, params, "cpu")
    err = np.nanmax(np.abs(run_dev.entropy - run_cpu.entropy) / np.maximum(np.abs(run_cpu.entropy), 1e-6))
    print(f"  check: final entropy, {dev.type} against cpu: max relative difference {err:.2e}")
    per_config, measured = bench_train.time_reference_sample(
        classes, (cfg["eta_Y"], cfg["eta_Z"], cfg["seed"]), params.steps, args.sample, str(dev))
    ref = per_config * C
    print(f"  ours on {dev.type}: {on_dev:7.2f} s    ours on cpu (one thread: train_grid pins it): {on_cpu:7.2f} s"
          f"    ratio cpu/{dev.type} {on_cpu / on_dev:6.1f}x")
    print(f"  reference on {dev.type}: {ref:8.1f} s (measured on {measured} configs, {per_config:.2f} s each, "
          f"extrapolated to {C})    ratio reference/ours on {dev.type} {ref / on_dev:6.1f}x")


if __name__ == "__main__":
    main()
