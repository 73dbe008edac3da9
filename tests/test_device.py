"""scansnap.device: one device setting reaches every tensor the Y/Z trainer makes; draws stay on the CPU, so a seed
draws the same on every device; GPU runs (marker ``gpu``, skipped without one) agree with the CPU's."""

from __future__ import annotations

import sys

import pytest
import torch
from conftest import names
from torch.overrides import TorchFunctionMode

from scansnap import data, device, experiments, sweep, train
from scansnap.model_options import ModelOptions
from scansnap.positions import margin_family

FACTORIES = {torch.zeros, torch.ones, torch.empty, torch.full, torch.arange, torch.linspace, torch.eye, torch.tensor,
             torch.as_tensor, torch.rand, torch.randn, torch.randint, torch.Generator}
CPU_BY_DESIGN = {
    "scansnap.data:SequenceClasses.sample": "draws a batch with the seed's CPU generator (moved to the device after)",
    "scansnap.positions:PositionalClasses.sample": "the same, for the positional data",
    "scansnap.model:init_params": "draws the initial (Y, Z) with the seed's CPU generator",
    "scansnap.model_options:head_params": "the same, for the options model",
    "scansnap.train:train": "the seeds' CPU generators, and the History's snapshot steps (results come back to CPU)",
    "scansnap.train:_broadcast_configs": "the learning rates and seeds as given (moved to the device by train)",
    "scansnap.sweep:configurations": "the grid's learning rates and seeds (CPU inputs of train)",
    "scansnap.model_options:OptionsModel.__init__": "the model is built on the CPU and moved whole (train: .to)",
    "scansnap.data:sequence_classes": "the data family is built on the CPU (train moves it: SequenceClasses.to)",
    "scansnap.positions:margin_family": "the same, for the positional data",
}


class FactoryCalls(TorchFunctionMode):
    """Records ``(caller "module:qualname", factory, device argument)`` of every tensor factory and generator made
    inside the block by the library."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: set[tuple[str, str, str | None]] = set()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in FACTORIES:
            frame = sys._getframe(1)
            module = frame.f_globals.get("__name__", "")
            if module.startswith("scansnap"):
                dev = kwargs.get("device")
                self.calls.add((f"{module}:{frame.f_code.co_qualname}", getattr(func, "__name__", str(func)),
                                None if dev is None else str(dev)))
        return func(*args, **kwargs)


def _runs() -> dict[str, callable]:
    small, pos = data.syn_small(), margin_family((0.6, 0.9))
    return {
        "sampled": lambda: train.train(small, 1.0, [1.0, 2.0], steps=3, batch=8, T=12, init="uniform"),
        "population": lambda: train.train(small, 1.0, 1.0, steps=3, limit="population", optimizer="adam"),
        "heads": lambda: train.train(small, 1.0, 1.0, steps=3, batch=8, T=12,
                                     options=ModelOptions(heads=2, residual=True, z_std=0.1), init="uniform"),
        "positions": lambda: train.train(pos, 1.0, 1.0, steps=3, batch=8, T=10,
                                         options=ModelOptions(residual=True, positions=9)),
        "sweep": lambda: sweep.train_grid(1, sweep.GridConfig.preset("smoke")),
    }


@pytest.mark.parametrize("run", list(_runs()), ids=str)
def test_every_tensor_the_trainer_makes_is_made_on_the_runs_device(run: str) -> None:
    """Outside the CPU draws (:data:`CPU_BY_DESIGN`), every tensor factory a run calls names its device: on a GPU
    none is left on the CPU to meet a CUDA tensor."""
    call = _runs()[run]
    with FactoryCalls() as mode:
        call()
    undeclared = sorted(c for c in mode.calls if c[2] is None and c[0] not in CPU_BY_DESIGN)
    assert not undeclared, f"tensor factories that ignore the run's device: {undeclared}"
    assert any(c[2] == "cpu" for c in mode.calls), "the run made no tensor on its device"


def test_resolve_reads_the_argument_then_the_variable_then_defaults_to_the_cpu(monkeypatch) -> None:
    monkeypatch.delenv(device.ENV, raising=False)
    assert device.resolve() == torch.device("cpu")
    monkeypatch.setenv(device.ENV, "cpu")
    assert device.resolve() == torch.device("cpu") and device.resolve("cpu").type == "cpu"
    monkeypatch.setenv(device.ENV, "tpu")
    with pytest.raises(ValueError, match=names(device.ENV)):
        device.resolve()
    with pytest.raises(ValueError, match=names("device") + ".*cpu, cuda, mps"):
        device.resolve("meta")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match=names("device") + ".*CUDA GPU"):
            device.resolve("cuda")


def test_full_precision_turns_tf32_off_and_restores_it() -> None:
    before = (torch.backends.cuda.matmul.allow_tf32, torch.get_float32_matmul_precision())
    torch.backends.cuda.matmul.allow_tf32 = True
    try:
        with device.full_precision():
            assert not torch.backends.cuda.matmul.allow_tf32
            assert torch.get_float32_matmul_precision() == "highest"
        assert torch.backends.cuda.matmul.allow_tf32
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before[0]
        torch.set_float32_matmul_precision(before[1])


def test_a_cpu_run_is_the_same_whether_the_device_is_named_or_defaulted(monkeypatch) -> None:
    monkeypatch.delenv(device.ENV, raising=False)
    small = data.syn_small()
    a = train.train(small, 1.0, [1.0, 2.0], steps=5, batch=8, T=12, seed=[0, 1], init="uniform")
    b = train.train(small, 1.0, [1.0, 2.0], steps=5, batch=8, T=12, seed=[0, 1], init="uniform", device="cpu")
    assert torch.equal(a.loss, b.loss) and torch.equal(a.Z, b.Z) and torch.equal(a.attention, b.attention)


def test_the_cli_refuses_a_device_this_machine_lacks(capsys) -> None:
    from scansnap.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["reproduce", "fig-paper-6", "--profile", "smoke", "--device", "tpu"])
    assert exit_info.value.code == 2 and "--device: must be one of cpu, cuda, mps" in capsys.readouterr().err


GPU = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU on this machine")


@pytest.mark.gpu
@GPU
@pytest.mark.parametrize("limit", ["sampled", "population"])
def test_gpu_training_equals_the_cpus_within_float64_rounding(limit: str) -> None:
    """float64, the same draws (made on the CPU): the GPU's losses and maps equal the CPU's to 1e-10 relative."""
    small = data.syn_small()
    kw = dict(steps=50, batch=32, T=32, seed=[0, 1, 2], limit=limit, init="uniform")
    cpu = train.train(small, 1.0, [0.5, 1.0, 2.0], device="cpu", **kw)
    gpu = train.train(small, 1.0, [0.5, 1.0, 2.0], device="cuda", **kw)
    assert gpu.Z.device.type == "cpu"  # results come back to the CPU
    torch.testing.assert_close(gpu.loss, cpu.loss, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(gpu.attention, cpu.attention, rtol=1e-10, atol=1e-12)


@pytest.mark.gpu
@GPU
def test_gpu_chapter_7_grid_agrees_with_the_cpu(monkeypatch) -> None:
    """Chapter 7's grid (float32, as the authors ran it; TF32 off): the GPU's final entropies and losses agree with
    the CPU's to 1e-4 relative (float32 sums in another order)."""
    c = sweep.GridConfig.preset("smoke")
    cpu, _ = sweep.train_grid(1, c)
    monkeypatch.setenv(device.ENV, "cuda")
    gpu, _ = sweep.train_grid(1, c)
    torch.testing.assert_close(torch.as_tensor(gpu.entropy), torch.as_tensor(cpu.entropy), rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(torch.as_tensor(gpu.loss), torch.as_tensor(cpu.loss), rtol=1e-4, atol=1e-5)


@pytest.mark.gpu
@GPU
def test_gpu_runs_a_chapter_experiment(monkeypatch) -> None:
    """Chapter 7's Figure 6 experiment at its smoke preset on the GPU: same figure data as the CPU's, to 1e-4."""
    import numpy as np

    exp = experiments.resolve("fig-paper-6")
    config = exp.config.preset("smoke")
    cpu = exp.run(config, None)
    monkeypatch.setenv(device.ENV, "cuda")
    gpu = exp.run(config, None)
    for spec in exp.figures:
        for key, value in spec.table(cpu).items():
            other = spec.table(gpu)[key]
            if np.asarray(value).dtype.kind == "f":
                np.testing.assert_allclose(np.asarray(other), np.asarray(value), rtol=1e-4, atol=1e-5, err_msg=key)
