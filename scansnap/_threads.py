"""Torch's intra-op thread count, set for a block of code."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

__all__ = ["one_thread"]


@contextmanager
def one_thread() -> Iterator[None]:
    """Run the block on one intra-op torch thread, and restore the previous count afterwards.

    For loops of tiny tensor operations (an ODE right-hand side, one small SGD step), a thread pool
    costs far more than it saves, above all on a busy machine; one thread also fixes the order of
    torch's reductions, so float32 results do not depend on the machine's core count.
    """
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
