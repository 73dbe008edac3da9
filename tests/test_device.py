"""scansnap.device: one device setting reaches every tensor the Y/Z trainer makes; draws stay on the CPU, so a seed
draws the same on every device; GPU runs (marker ``gpu``, skipped without one) agree with the CPU's."""

from __future__ import annotations

import functools
import re
import sys

import pytest
import torch
from conftest import names
from torch.overrides import TorchFunctionMode

from scansnap import data, device, experiments, sweep, train
from scansnap.model_options import ModelOptions
from scansnap.positions import margin_family

FACTORIES = {torch.zeros, torch.ones, torch.empty, torch.full, torch.arange, torch.linspace, torch.logspace, torch.eye,
             torch.tensor, torch.as_tensor, torch.from_numpy, torch.scalar_tensor, torch.empty_strided, torch.rand,
             torch.randn, torch.randint, torch.randperm, torch.normal, torch.tril_indices, torch.triu_indices}
"""Torch's functions that make a tensor from nothing (the ``*_like`` factories and ``Tensor.new_*`` take their
input's device, so they follow the run). ``torch.Generator`` is a class, not a function torch dispatches through
``__torch_function__``: :class:`FactoryCalls` records it by wrapping it."""
COMPREHENSION = re.compile(r"\.<locals>\.<(listcomp|setcomp|dictcomp|genexpr)>$")
CPU_BY_DESIGN: dict[tuple[str, str], str] = {
    ("scansnap.data:SequenceClasses.sample", "randint"): "a batch drawn with the seed's CPU generator (moved after)",
    ("scansnap.positions:PositionalClasses.sample", "randint"): "the same, for the positional data",
    ("scansnap.model:init_params", "rand"): "the initial (Y, Z) drawn with the seed's CPU generator",
    ("scansnap.model:init_params", "zeros"): "the zero initialization, then moved with the drawn one",
    ("scansnap.model_options:head_params", "randn"): "the same, for the options model",
    ("scansnap.train:train", "Generator"): "the seeds' CPU generators: a seed draws the same on every device",
    ("scansnap.train:train", "tensor"): "the History's snapshot steps (results come back to the CPU)",
    ("scansnap.train:_broadcast_configs", "as_tensor"): "the learning rates and seeds as given (train moves them)",
    ("scansnap.sweep:configurations", "tensor"): "the grid's learning rates and seeds (CPU inputs of train)",
    ("scansnap.model_options:OptionsModel.__init__", "zeros"): "the model is built on the CPU and moved whole (.to)",
    ("scansnap.data:sequence_classes", "arange"): "the data family is built on the CPU (train: SequenceClasses.to)",
    ("scansnap.data:sequence_classes", "linspace"): "the same",
    ("scansnap.data:sequence_classes", "zeros"): "the same",
}
"""``(caller, factory)`` pairs that make their tensor on the CPU on purpose, each with its reason (keyed by the
factory too, so that a new factory in the same function that ignores the device is still caught)."""


class FactoryCalls(TorchFunctionMode):
    """Records ``(caller "module:qualname", factory, device argument)`` of every tensor factory (:data:`FACTORIES`)
    and ``torch.Generator`` the library calls inside the block; the device argument is ``None`` where the call
    names none (torch then uses the CPU).

    Why the device is checked by argument, on the CPU: a CPU tensor does not remember whether its maker asked for
    the run's device or for none, so a CPU run cannot tell the two apart by the tensors it made; the call can.
    The ``meta`` device (tensors without data) cannot stand in for a GPU either: the trainers read values (an
    index drawn on the CPU, a loss brought back by ``.cpu()``, a ``.item()``), which a meta tensor does not have,
    so a meta run stops at its first such read and leaves the rest of the code unchecked. A factory that names no
    device, outside the draws made on the CPU on purpose (:data:`CPU_BY_DESIGN`), is what leaves a tensor on the
    CPU of a GPU run; one that names a device other than the run's is caught by comparing with the setting.
    """

    def __init__(self) -> None:
        super().__init__()
        self.calls: set[tuple[str, str, str | None]] = set()

    def _record(self, depth: int, name: str, dev: object) -> None:
        frame = sys._getframe(depth + 1)
        module = frame.f_globals.get("__name__", "")
        if module.startswith("scansnap"):
            caller = COMPREHENSION.sub("", frame.f_code.co_qualname)  # a comprehension's frame: its function's
            self.calls.add((f"{module}:{caller}", name, None if dev is None else str(dev)))

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in FACTORIES:
            self._record(1, getattr(func, "__name__", str(func)), kwargs.get("device"))
        return func(*args, **kwargs)

    def generators(self, monkeypatch) -> None:
        """Record every ``torch.Generator(...)`` made inside the block too (by wrapping the class in ``torch``)."""
        real = torch.Generator

        def generator(device=None):
            self._record(1, "Generator", device)
            return real() if device is None else real(device)

        monkeypatch.setattr(torch, "Generator", generator)


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


@pytest.mark.parametrize("setting", ["variable", "argument"])
@pytest.mark.parametrize("run", list(_runs()), ids=str)
def test_every_tensor_the_trainer_makes_is_made_on_the_runs_device(run: str, setting: str, monkeypatch) -> None:
    """Outside the CPU draws (:data:`CPU_BY_DESIGN`), every tensor factory a run calls names the run's device,
    whether the setting comes from ``$SCANSNAP_DEVICE`` or the ``device`` argument: on a GPU none is left on the
    CPU to meet a CUDA tensor. The generators are all the seeds' CPU generators (the draws are made on the CPU)."""
    monkeypatch.setenv(device.ENV, "cpu")
    if setting == "argument":  # the variable names a device this machine lacks: only the argument can make it run
        monkeypatch.setenv(device.ENV, "tpu")
        monkeypatch.setattr(train, "train", functools.partial(train.train, device="cpu"))
    call = _runs()[run]
    with FactoryCalls() as mode:
        mode.generators(monkeypatch)
        call()
    undeclared = sorted(c for c in mode.calls if c[2] is None and c[:2] not in CPU_BY_DESIGN)
    assert not undeclared, f"tensor factories that ignore the run's device: {undeclared}"
    elsewhere = sorted(c for c in mode.calls if c[2] is not None and c[2] != "cpu")
    assert not elsewhere, f"tensor factories that name a device other than the run's: {elsewhere}"
    assert any(c[2] == "cpu" for c in mode.calls), "the run made no tensor on its device"
    gens = {c for c in mode.calls if c[1] == "Generator"}
    assert gens and {c[:2] for c in gens} <= set(CPU_BY_DESIGN), f"generators outside the declared CPU draws: {gens}"


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
