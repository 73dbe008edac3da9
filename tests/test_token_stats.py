"""scansnap.token_stats and scansnap.lm_train: commonness, received attention, rank statistics, training."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import names

from scansnap import lm, lm_train, token_stats


def test_next_token_entropy_separates_a_common_token_from_a_distinct_one() -> None:
    gen = torch.Generator().manual_seed(0)
    # token 0 ("common") precedes anything; token 1 ("distinct") is always followed by token 2
    body = torch.randint(3, 20, (4000,), generator=gen)
    body[::10], body[5::10], body[6::10] = 0, 1, 2
    h = token_stats.next_token_entropy(body, 20, window=1, pairs=100)
    assert h[1] == 0.0 and h[0] > 2.0
    assert np.isnan(token_stats.next_token_entropy(body, 25, window=1, pairs=100)[22])  # never seen
    assert h.max() <= np.log(100) + 1e-12


def test_document_frequency_and_received_attention_of_uniform_maps() -> None:
    ids = torch.tensor([3, 4, 0, 3, 3, 0, 5, 0])  # 0 = <eos>: lines [3 4], [3 3], [5]
    np.testing.assert_allclose(token_stats.document_frequency(ids, 6, eos=0)[[3, 4, 5]], [2 / 3, 1 / 3, 1 / 3])
    T = 6
    uniform = torch.ones(T, T).tril()
    uniform = (uniform / uniform.sum(1, keepdim=True)).expand(4, T, T)
    x = torch.randint(0, 10, (4, T), generator=torch.Generator().manual_seed(1))
    score, count = token_stats.received_attention(uniform, x, 10)
    seen = count > 0
    np.testing.assert_allclose(score[seen], 1.0, atol=1e-6)
    assert count.sum() == 4 * T * (T + 1) / 2


def test_rank_statistics() -> None:
    x = np.array([1.0, 2.0, 4.0, 8.0])
    assert token_stats.share_decreasing(x, -x) == 1.0 and token_stats.share_decreasing(x, x) == 0.0
    assert token_stats.share_decreasing(x, np.array([4.0, 3.0, 1.0, 2.0])) == pytest.approx(5 / 6)


def test_train_measures_checkpoints_and_is_deterministic() -> None:
    streams = torch.randint(0, 30, (4, 200), generator=torch.Generator().manual_seed(0))
    heldout = torch.randint(0, 30, (6, 9), generator=torch.Generator().manual_seed(1))
    vocab = lm_train.wikitext.Vocabulary(tuple(str(i) for i in range(30)))
    data = lm_train.Corpus(vocab, streams.reshape(-1), streams, heldout, "valid", "test", "synthetic")

    def run() -> lm_train.Trajectory:
        torch.manual_seed(0)
        model = lm.TransformerLM(30, d=8, d_hid=8, max_len=8)
        return lm_train.train(model, data, lr=1.0, steps=6, checkpoints=[0, 3, 6], bptt=8)

    a, b = run(), run()
    assert a.train_loss.shape == (6,) and a.freeze.shape == (2,) and a.probe_maps.shape == (3, 8, 8)
    assert a.entropy[0] <= np.mean(np.log(np.arange(1, 9))) + 1e-6  # row i spreads over i + 1 keys at most
    np.testing.assert_array_equal(a.heldout_loss, b.heldout_loss)
    np.testing.assert_array_equal(a.probe_maps, b.probe_maps)
    with pytest.raises(ValueError, match=names("checkpoints")):
        lm_train.train(lm.TransformerLM(30, d=8, max_len=8), data, lr=1.0, steps=4, checkpoints=[0, 5], bptt=8)


def test_row_entropy_of_uniform_causal_rows() -> None:
    T = 5
    uniform = torch.ones(T, T).tril()
    uniform = uniform / uniform.sum(1, keepdim=True)
    assert lm_train.row_entropy(uniform).item() == pytest.approx(np.mean(np.log(np.arange(1, T + 1))))
