"""scansnap._threads: one intra-op thread inside the block, the previous count restored after it."""

from __future__ import annotations

import pytest
import torch

from scansnap._threads import one_thread


def test_one_thread_inside_and_restored_after() -> None:
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with one_thread():
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == 2
        with pytest.raises(RuntimeError), one_thread():
            raise RuntimeError("inside")
        assert torch.get_num_threads() == 2, "not restored after an exception"
    finally:
        torch.set_num_threads(before)
