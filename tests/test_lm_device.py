"""The language model's trainers on any device (issue 28 part 1): on the CPU their numbers are bit for bit those of
the code before the device setting (``tests/data/lm_cpu_main.npz``, made by :func:`_runs` with main at 9cc0ea5);
every tensor factory they call names the run's device; on a GPU (marker ``gpu``) they agree with the CPU."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from test_device import GPU, FactoryCalls

from scansnap import device, lm, lm_converge, lm_train, wikitext

BEFORE = Path(__file__).parent / "data" / "lm_cpu_main.npz"
CPU_BY_DESIGN = {
    ("scansnap.lm:sinusoidal", "arange"), ("scansnap.lm:sinusoidal", "zeros"),  # the model is built on the CPU
    ("scansnap.lm:SelfAttention.__init__", "empty"), ("scansnap.lm:SelfAttention.__init__", "zeros"),
    ("scansnap.lm:TransformerLM.__init__", "zeros"),
    ("scansnap.wikitext:Vocabulary.encode", "tensor"),  # the corpus is read on the CPU; train moves it
}


def _corpus(vocab: int = 30, n: int = 4000) -> lm_train.Corpus:
    gen = np.random.default_rng(0)
    words = [f"w{i}" for i in gen.zipf(1.5, size=n) % vocab]
    v = wikitext.Vocabulary.build(words)
    ids = v.encode(words)
    return lm_train.Corpus(v, ids, wikitext.batchify(ids, 4), ids[: 8 * 9].reshape(8, 9), "valid", "test",
                           "synthetic")


def _runs(dropout: float = 0.1, **kw) -> dict[str, np.ndarray]:
    """A short seeded run of each trainer (2 layers, every measure of :func:`lm_train.train`; 1 layer without
    positions to convergence), every array of their results by name."""
    data, out = _corpus(), {}
    torch.manual_seed(3)
    model = lm.TransformerLM(len(data.vocab), 16, 16, 2, dropout, max_len=8)
    t = lm_train.train(model, data, lr=1.0, steps=12, checkpoints=[0, 4, 8, 12], bptt=8, seed=3, ff_lr=2.0, window=4,
                       **kw)
    out.update({f"train.{k}": np.asarray(v) for k, v in vars(t).items()})
    assert next(model.parameters()).device.type == "cpu", "the model comes back where the caller made it"
    torch.manual_seed(1)
    model = lm.TransformerLM(len(data.vocab), 16, 16, 1, dropout, max_len=8, positional=False)
    rule = lm_converge.Convergence(every=5, min_steps=10, cap=20, tolerance=0.01)
    r = lm_converge.train_to_convergence(model, data, lr=1.0, bptt=8, seed=1, rule=rule, **kw)
    out.update({f"converge.{k}": np.asarray(v) for k, v in vars(r).items()})
    return out


def test_cpu_runs_are_bitwise_those_of_the_code_before_the_device_setting(monkeypatch) -> None:
    monkeypatch.delenv(device.ENV, raising=False)
    now = _runs()
    with np.load(BEFORE) as before:
        assert sorted(before.files) == sorted(now)
        for key in before.files:
            assert now[key].dtype == before[key].dtype, key
            np.testing.assert_array_equal(now[key], before[key], err_msg=key, strict=True)
    named = _runs(device="cpu")
    assert all(np.array_equal(named[k], now[k], equal_nan=True) for k in now)


def test_every_tensor_the_lm_trainers_make_is_made_on_the_runs_device(monkeypatch) -> None:
    """Outside building the model and reading the corpus (both on the CPU, then moved), every tensor factory of
    a run names the run's device (:class:`test_device.FactoryCalls` says why by argument)."""
    monkeypatch.setenv(device.ENV, "cpu")
    with FactoryCalls() as mode:
        mode.generators(monkeypatch)
        _runs()
    undeclared = sorted(c for c in mode.calls if c[2] is None and c[:2] not in CPU_BY_DESIGN)
    assert not undeclared, f"tensor factories that ignore the run's device: {undeclared}"
    assert not [c for c in mode.calls if c[2] not in (None, "cpu")]
    assert any(c[2] == "cpu" for c in mode.calls), "the run made no tensor on its device"


def test_a_device_this_machine_lacks_is_refused_before_training(monkeypatch) -> None:
    monkeypatch.setenv(device.ENV, "tpu")
    with pytest.raises(ValueError, match=f"^{device.ENV}: must be one of"):
        _runs()


@pytest.mark.gpu
@GPU
def test_gpu_lm_runs_agree_with_the_cpus_without_dropout() -> None:
    """Dropout off (its draws come from each device's own generator): the GPU's losses, entropies and maps equal
    the CPU's to float32 rounding (1e-4 relative) over the short runs; the results come back as CPU arrays."""
    cpu, gpu = _runs(0.0, device="cpu"), _runs(0.0, device="cuda")
    for key in cpu:
        if cpu[key].dtype.kind == "f":
            np.testing.assert_allclose(gpu[key], cpu[key], rtol=1e-4, atol=1e-5, err_msg=key)
        else:
            np.testing.assert_array_equal(gpu[key], cpu[key], err_msg=key)
