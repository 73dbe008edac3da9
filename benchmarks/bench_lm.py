"""Training speed of Chapter 8's language model against torch's own ``nn.TransformerEncoder`` of the same size.

Ours: :class:`scansnap.lm.TransformerLM` and :func:`scansnap.lm.sgd_step` (the chapter's code path: SDPA
attention while training, maps only at checkpoints). Reference: :func:`scansnap.lm.reference`, the same
embedding, positional encoding and decoder around ``torch.nn.TransformerEncoder`` layers holding the same
weights; both train with the same SGD step (no momentum, clip 0.5, lr 5 with 10 on ``linear1``/``linear2``: the
authors' Figure 7 notebook) on the same batches (batch 20 x bptt 35), float32, dropout 0.3.

The default vocabulary is that of the ``paper`` profile's Figure 7 data on this machine (the full vocabulary of its
training text: ``train.txt`` when the WikiText-2 folder has it, else valid + test less every tenth article), read
from ``$SCANSNAP_WIKITEXT``; without the data, pass ``--vocab``. The printout ends with the projected wall time of
``ch8-freeze``'s paper run (its seeds x steps) at the measured rate: one process per seed on one thread each
against the seeds one after another on two threads.

Before timing, the two are checked to compute the same logits (float64, dropout off). Timing is done
inside this process (torch's import is not counted), in alternating blocks of steps, so that a busy
machine slows both alike; the printout gives tokens per second, the ratio, the share of a step spent in
the vocabulary decoder (linear layer + cross-entropy, forward and backward), the thread counts tried,
and bf16 autocast (its speed, and whether its losses agree with float32).

On another device (``--device cuda``) both models, their batches and every step run there (float32, TF32 off:
:func:`scansnap.device.full_precision`), and the CPU-only parts (the thread counts, the projection of the paper run
on this machine's two cores) are left out; ``--threads`` fixes torch's intra-op CPU threads (printed).

Usage: ``python benchmarks/bench_lm.py [--device cpu] [--threads 1 2] [--vocab V] [--layers 1 3] [--steps N]
[--blocks N] [--quick]``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F  # noqa: N812

from scansnap import device, lm

BATCH, BPTT = 20, 35
LR, FF_LR, DROPOUT = 5.0, 10.0, 0.3
DEVICE = torch.device("cpu")
"""Where the models and batches are (``--device``)."""


def paper_vocab() -> int:
    """The vocabulary of ``ch8-freeze``'s paper data (reads and verifies WikiText-2)."""
    from scansnap.experiments import ch08_wikitext as ch8

    return ch8.FreezeConfig.preset("paper").replace(eval_sequences=2).corpus()[0].vocab.__len__()


def batches(vocab: int, n: int, seed: int = 0) -> list[tuple[torch.Tensor, torch.Tensor]]:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randint(0, vocab, (n, BATCH, BPTT + 1), generator=gen).to(DEVICE)
    return [(b[:, :-1], b[:, 1:]) for b in x]


def make(vocab: int, layers: int) -> tuple[lm.TransformerLM, torch.nn.Module]:
    torch.manual_seed(0)
    ours = lm.TransformerLM(vocab, layers=layers, dropout=DROPOUT, max_len=BPTT)
    torch.manual_seed(0)
    ref = lm.reference(lm.TransformerLM(vocab, layers=layers, dropout=DROPOUT, max_len=BPTT))
    return ours.to(DEVICE), ref.to(DEVICE)


def check_same(vocab: int, layers: int) -> float:
    ours, ref = make(vocab, layers)
    ours, ref = ours.double().eval(), ref.double().eval()
    x, _ = batches(vocab, 1)[0]
    with torch.no_grad():
        return (ours(x)[0] - ref(x)[0]).abs().max().item()


def sync() -> None:
    """Wait for the device's queued work (a CUDA step returns before it is done; ``sgd_step``'s ``.item()`` waits
    too)."""
    if DEVICE.type == "cuda":
        torch.cuda.synchronize(DEVICE)


def time_block(model: torch.nn.Module, data: list, bf16: bool = False) -> float:
    sync()
    start = time.perf_counter()
    for x, y in data:
        with torch.autocast(DEVICE.type, dtype=torch.bfloat16, enabled=bf16):
            lm.sgd_step(model, x, y, lr=LR, ff_lr=FF_LR)
    sync()
    return time.perf_counter() - start


def tokens_per_s(vocab: int, layers: int, steps: int, blocks: int) -> tuple[float, float]:
    """Median tokens/s of ours and of the reference over alternating blocks (after a warm-up block)."""
    ours, ref = make(vocab, layers)
    data = batches(vocab, steps)
    time_block(ours, data[:2]), time_block(ref, data[:2])
    t_ours, t_ref = [], []
    for _ in range(blocks):
        t_ours.append(time_block(ours, data))
        t_ref.append(time_block(ref, data))
    tokens = steps * BATCH * BPTT
    return tokens / statistics.median(t_ours), tokens / statistics.median(t_ref)


def decoder_share(vocab: int, layers: int, steps: int) -> float:
    """Time of the decoder's forward + backward (with the loss) over the time of a whole step."""
    ours, _ = make(vocab, layers)
    data = batches(vocab, steps)
    h = torch.randn(BATCH, BPTT, ours.d, device=DEVICE)
    step = time_block(ours, data) / steps
    sync()
    start = time.perf_counter()
    for _, y in data:
        hidden = h.clone().requires_grad_()
        loss = F.cross_entropy(ours.decoder(hidden).reshape(-1, vocab), y.reshape(-1))
        loss.backward()
    sync()
    return (time.perf_counter() - start) / steps / step


def bf16_check(vocab: int, steps: int) -> tuple[float, float]:
    """(speed-up of bf16 autocast, max relative difference of its training losses from float32)."""
    data = batches(vocab, steps)
    a, _ = make(vocab, 1)
    b, _ = make(vocab, 1)
    t32 = time_block(a, data)
    t16 = time_block(b, data, bf16=True)
    torch.manual_seed(1)
    la = [lm.sgd_step(a, x, y, lr=LR, ff_lr=FF_LR) for x, y in data]
    torch.manual_seed(1)
    with torch.autocast(DEVICE.type, dtype=torch.bfloat16):
        lb = [lm.sgd_step(b, x, y, lr=LR, ff_lr=FF_LR) for x, y in data]
    return t32 / t16, max(abs(p - q) / p for p, q in zip(la, lb, strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vocab", type=int, default=0, help="vocabulary (0: that of ch8-freeze's paper data)")
    parser.add_argument("--layers", type=int, nargs="+", default=[1])
    parser.add_argument("--bf16", action="store_true", help="also time bf16 autocast")
    parser.add_argument("--steps", type=int, default=10, help="steps per timed block")
    parser.add_argument("--blocks", type=int, default=3, help="alternating timed blocks per model")
    parser.add_argument("--quick", action="store_true", help="tiny sizes (a smoke run of this script)")
    parser.add_argument("--device", default="cpu", help="where both models train (default cpu)")
    parser.add_argument("--threads", type=int, nargs="+", default=None,
                        help="torch intra-op CPU threads to time (default: 1 and 2 on the CPU, 1 on another device)")
    args = parser.parse_args()
    global DEVICE
    DEVICE = device.resolve(args.device)
    threads = args.threads or ([1, 2] if DEVICE.type == "cpu" else [1])
    if args.quick:
        args.vocab, args.layers, args.steps, args.blocks = 200, [1], 2, 1
    args.vocab = args.vocab or paper_vocab()
    torch.set_num_threads(threads[0])
    print(f"device {device.describe(DEVICE)}; torch {torch.__version__}, {torch.backends.cpu.get_cpu_capability()}; "
          f"CPU threads {threads}; batch {BATCH} x bptt {BPTT}, "
          f"d 200, vocabulary {args.vocab}; timed inside the process, median of {args.blocks} blocks of "
          f"{args.steps} steps")
    with device.full_precision():
        measure(args, threads)


def measure(args: argparse.Namespace, threads: list[int]) -> None:
    """Time the models of ``args.layers`` at every thread count, then the projection and bf16 (``--bf16``)."""
    rate = {}
    for layers in args.layers:
        print(f"\n{layers} layer(s): max |logits ours - torch.nn.TransformerEncoder| (float64) "
              f"{check_same(args.vocab, layers):.1e}")
        for n in threads:
            torch.set_num_threads(n)
            ours, ref = tokens_per_s(args.vocab, layers, args.steps, args.blocks)
            rate[layers, n] = ours
            print(f"  {DEVICE.type}, {n} CPU thread(s): ours {ours:8.0f} tokens/s, torch.nn.TransformerEncoder "
                  f"{ref:8.0f} tokens/s, ratio ours/torch {ours / ref:.2f}")
        torch.set_num_threads(threads[0])
        share = decoder_share(args.vocab, layers, args.steps)
        print(f"  share of a step in the vocabulary decoder ({threads[0]} thread(s)): {share:.0%}")
    if 1 in args.layers and DEVICE.type == "cpu" and {1, 2} <= set(threads):
        project(rate[1, 1], rate[1, 2])
    if not args.bf16:
        return
    speed, diff = bf16_check(args.vocab, args.steps)
    print(f"\nbf16 autocast on {DEVICE.type}, 1 layer, {threads[0]} thread(s): speed-up {speed:.2f}x; max relative "
          "loss difference from float32 "
          f"over {args.steps} steps {diff:.1e}. Kept: float32 and 1 thread unless both columns above say otherwise.")


def project(one_thread: float, two_threads: float) -> None:
    """Projected training time of ch8-freeze's paper run (checkpoints not counted; they add a few per cent)."""
    from scansnap.experiments import ch08_wikitext as ch8

    c = ch8.FreezeConfig.preset("paper")
    tokens = c.steps * BATCH * BPTT
    n = len(c.seeds)
    parallel = -(-n // 2) * tokens / one_thread  # two processes at a time, one thread each
    serial = n * tokens / two_threads
    print(f"\nch8-freeze paper run ({n} seeds x {c.steps} steps, training only): one process per seed on 1 thread "
          f"each, 2 at a time: {parallel / 60:.1f} min; the seeds one after another on 2 threads: {serial / 60:.1f} "
          "min (if the two cores are free)")


if __name__ == "__main__":
    main()
