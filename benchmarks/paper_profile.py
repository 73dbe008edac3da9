"""What the ``paper`` profile costs: every experiment of the book at the paper's protocol, timed or projected.

For each experiment of :mod:`scansnap.manifest` (or those named), the ``paper`` preset is run on this machine with a
fixed thread count, and its progress callback (one call per unit of work: a training step, a run of a sweep,
``experiment.work(config)`` units in all) is timed. A run that finishes within ``--budget`` seconds is reported as
measured; otherwise it is stopped there and its total is projected from the measured rate (units done per second,
after the first unit: set-up such as data loading is counted once) and labelled "projected". An experiment without
progress units (``work`` 0) is run whole, up to ``--budget`` (then "more than" the budget). A stored run (``stores/``)
also reports the wall time its provenance recorded. Per-chapter sums follow.

The numbers are this machine's, at this moment: the printout starts with the thread count, the CPU and the load
average, and a table made while other jobs ran says so. Compare machines by ratios, not seconds.

Usage: ``python benchmarks/paper_profile.py [--budget S] [--threads N] [experiment ...]``.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from collections import defaultdict

import torch

from scansnap import experiments, manifest


class _BudgetSpentError(Exception):
    """Raised from the progress callback when the budget is spent."""


def time_one(exp_id: str, budget: float) -> tuple[str, float, int, int]:
    """``(kind, seconds, units done, units in all)`` of the paper run of ``exp_id``: kind ``"measured"`` (the whole
    run within ``budget`` seconds), ``"projected"`` (seconds projected from the rate) or ``"over"`` (no progress
    units, stopped at the budget: seconds is a lower bound)."""
    exp = experiments.get(exp_id)
    config = exp.config.preset("paper")
    total = exp.work(config)
    done, marks = [0], []
    start = time.perf_counter()

    def progress(_step: int = 0) -> None:  # one unit per call (the argument is a step index for some runs)
        done[0] += 1
        marks.append((time.perf_counter(), done[0]))
        if time.perf_counter() - start > budget:
            raise _BudgetSpentError

    try:
        if total:
            exp.run(config, progress)
        else:
            import signal

            signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(_BudgetSpentError()))
            signal.setitimer(signal.ITIMER_REAL, budget)
            try:
                exp.run(config, None)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
    except _BudgetSpentError:
        if not total or not marks:
            return "over", time.perf_counter() - start, done[0], total
        if len(marks) < 2:  # one unit in the budget: its time (set-up included) times the units
            return "projected", (marks[0][0] - start) * total, done[0], total
        (t0, u0), (t1, u1) = marks[0], marks[-1]
        rate = (u1 - u0) / (t1 - t0)
        return "projected", (t0 - start) + (total - u0) / rate, done[0], total
    return "measured", time.perf_counter() - start, done[0], total


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget", type=float, default=30.0, help="seconds per experiment before projecting")
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads (fixed, printed)")
    ap.add_argument("ids", nargs="*", help="experiment ids (default: every experiment of the manifest)")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    print(f"paper profile on {platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch "
          f"{torch.__version__}, {torch.get_num_threads()} intra-op thread(s), load average "
          f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}, budget {args.budget:g} s per experiment")
    ids = args.ids or list(manifest.entries())
    by_chapter: dict[int, list[float]] = defaultdict(list)
    print(f"{'experiment':<18} {'kind':<10} {'minutes':>9} {'units':>14}  stored run")
    for exp_id in ids:
        entry = manifest.entry(exp_id)
        kind, seconds, done, total = time_one(exp_id, args.budget)
        by_chapter[entry.chapter].append(seconds)
        stored = ""
        if entry.stored:
            from scansnap import store

            prov = store.load(experiments.get(exp_id), "paper").provenance
            stored = f"{prov.wall_s / 60:.1f} min recorded ({prov.date}, {prov.device})"
        units = f"{done}/{total}" if total else "-"
        print(f"{exp_id:<18} {kind:<10} {seconds / 60:>9.2f} {units:>14}  {stored}", flush=True)
    print("chapter totals (minutes, measured + projected): " + ", ".join(
        f"{n}: {sum(v) / 60:.1f}" for n, v in sorted(by_chapter.items())))
    print(f"load average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
