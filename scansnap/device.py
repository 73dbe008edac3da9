"""Where the trainers compute: one device setting for every run (``SCANSNAP_DEVICE``, ``--device``).

The book is built on CPUs; a reader with a GPU can run the paper's scale on it. The Y/Z trainer draws its
randomness on the CPU, from its seeds' CPU generators, and moves what it drew to the device: the same seed gives the
same draws on every device. The language model (:mod:`scansnap.lm_train`, :mod:`scansnap.lm_converge`) is built on
the CPU (the same initialization everywhere) and trained on the device (:func:`model_on`); its dropout draws come
from the device's own generator, which on a GPU is not the CPU's stream: a GPU run is reproducible on its device,
and equals the CPU's only with dropout off. A CPU run is bit for bit what it was before this setting existed.
Float32 matrix products on a CUDA device run in full precision (TF32 off, :func:`full_precision`), so a GPU run
differs from the CPU's in the last bits of its sums only. Results come back to the CPU for the measures, figures and
verdicts.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

import torch

__all__ = ["ENV", "describe", "floats", "full_precision", "kind", "model_on", "resolve"]

ENV = "SCANSNAP_DEVICE"
"""Environment variable: the device of every run (``cpu``, the default; ``cuda``, ``cuda:1``, ``mps``)."""

KINDS = ("cpu", "cuda", "mps")


def resolve(device: str | torch.device | None = None) -> torch.device:
    """The device of a run: ``device`` if given, else ``$SCANSNAP_DEVICE``, else the CPU. Raises ``ValueError``
    naming the setting when it is not a device of this machine."""
    name = "device" if device is not None else ENV
    value = device if device is not None else (os.environ.get(ENV) or "cpu")
    try:
        dev = torch.device(value)
    except (RuntimeError, TypeError) as err:
        raise ValueError(f"{name}: must be one of {', '.join(KINDS)} (cuda:N for one GPU); got {value!r}") from err
    if dev.type not in KINDS:
        raise ValueError(f"{name}: must be one of {', '.join(KINDS)} (cuda:N for one GPU); got {value!r}")
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"{name}: {value!r} asks for a CUDA GPU, and torch sees none on this machine; use cpu")
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise ValueError(f"{name}: {value!r}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"{name}: {value!r} asks for Apple's MPS, which torch does not see here; use cpu")
    return dev


@contextlib.contextmanager
def full_precision() -> Iterator[None]:
    """Float32 matrix products in full precision inside the block (TF32 off on CUDA), restored after."""
    old_matmul, old_cudnn = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    old_precision = torch.get_float32_matmul_precision()
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old_matmul, old_cudnn
        torch.set_float32_matmul_precision(old_precision)


@contextlib.contextmanager
def model_on(model: torch.nn.Module, device: str | torch.device | None = None) -> Iterator[torch.device]:
    """Inside the block ``model`` is on the run's device (:func:`resolve` of ``device``) with float32 products in
    full precision (:func:`full_precision`); the block gets the device. After it (an error too) the model is back
    where it was: a trainer of the language model hands its caller the model where the caller made it (the
    CPU, for every caller of the library). On the CPU nothing moves."""
    dev = resolve(device)
    home = next(model.parameters()).device
    model.to(dev)
    try:
        with full_precision():
            yield dev
    finally:
        model.to(home)


def describe(device: torch.device) -> str:
    """The device in words for a provenance record, e.g. ``"cuda:0 (NVIDIA H200), TF32 off"`` or ``"cpu"``."""
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        return f"cuda:{index} ({torch.cuda.get_device_name(index)}), TF32 off"
    return device.type


def kind(device: torch.device) -> str:
    """The device as a stored run's numbers depend on it: ``"cpu"`` (any CPU), ``"mps"``, or
    ``"cuda (<GPU model>)"`` (any index of that model), e.g. ``"cuda (NVIDIA H100 80GB HBM3)"``."""
    if device.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(device.index if device.index is not None else 0)})"
    return device.type


def floats() -> dict[str, Any]:
    """This process's float settings that change a run's sums, for a provenance record: float32 matmul precision
    (``"highest"``, ``"high"``, ``"medium"``), TF32 in CUDA matmuls and in cuDNN, deterministic algorithms, and the
    default dtype (e.g. ``"float32"``). The Y/Z trainer computes in full precision whatever they say
    (:func:`full_precision`)."""
    return {"float32_matmul_precision": torch.get_float32_matmul_precision(),
            "cuda_matmul_allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
            "cudnn_allow_tf32": bool(torch.backends.cudnn.allow_tf32),
            "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
            "default_dtype": str(torch.get_default_dtype()).removeprefix("torch.")}
