"""Stored runs: a run too long for the build, made once, stored with its provenance, checked by the build.

A run at the paper's protocol can take an hour on a 2-core machine; the book's build has minutes. Such a run
is made once (``python -m scansnap reproduce <figure-id> --profile paper --store``) and stored under
``stores/<experiment-id>/<profile>/`` at the root of the book's checkout:

* ``result.npz``: the typed result (:func:`scansnap.results.save`): the curves and checkpointed maps the
  figures, tables and verdicts read, never model weights;
* ``provenance.json`` (:class:`Provenance`): the configuration and its hash, the library functions the run
  executes and a hash of their syntax without docstrings (:func:`code`, :mod:`scansnap.codehash`), the commit,
  scansnap and torch versions, device, float settings and the devices it can be verified on, CPU model, threads,
  wall time, date, the command that re-makes it, and a SHA-256 digest of every stored array.

A store holds what the run computes; measures, rules, figures and prose are computed from it at build time. So its
code hash covers only what the run executes, at the grain of functions: a docstring, a comment, a rule, a figure or
a page edit leaves hours of stored runs current, and a one-token change of the run's arithmetic makes them stale.

A page shows it with :func:`scansnap.book.stored`, which calls :func:`load`: a store whose configuration or
library hash differs from the current code raises :class:`StaleStoreError` (naming the store and the command that
refreshes it), so the strict build fails rather than show a stale run; an array whose digest differs raises
:class:`TamperedStoreError`. :func:`scansnap.store_verify.verify` re-runs the first steps of a stored run
from its recorded seeds (:attr:`scansnap.experiments.base.Experiment.prefix`: exactly the compared steps) and compares
them with the stored checkpoints up to :data:`HORIZON` (past it, another machine's float sums have made SGD diverge:
the later checkpoints are held by their digests, and re-made, not re-compared), on a device its provenance allows
(:attr:`Provenance.verifiable_on`).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import tempfile
import time
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import torch

import scansnap
from scansnap import codehash, parallel, provenance, results
from scansnap import device as device_mod
from scansnap._checks import check_choice
from scansnap._io import atomic_write, dump_json, source_checkout
from scansnap.experiments.base import Experiment

__all__ = ["HORIZON", "MAX_BYTES", "DirtyCheckoutError", "Problem", "Provenance", "StaleStoreError", "Stored",
           "TamperedStoreError", "UnverifiableError", "check", "code", "config_of", "load", "problems", "read",
           "read_provenance", "size", "store", "store_dir", "stored_ids"]

MAX_BYTES = 20 * 2**20
"""The most the whole ``stores/`` folder may hold in git (``tests/test_store.py`` enforces it)."""
HORIZON = 5
""":func:`scansnap.store_verify.verify` compares the checkpoints at steps up to this one (step 0: the initialization
and the data; steps 1-5: the first training losses). SGD on the Chapter 8 language model grows a last-bit
difference about tenfold every two or three steps: a re-run of ``ch8-freeze-deep`` on another 2-core AMD EPYC host
than the one that made it differed from the store by 6e-7 relative at step 5, 4e-5 at step 12, 2e-3 at step 16 and
5e-2 at step 50, where the default re-run used to be compared (and failed at 1e3 times the tolerance). On the
machine that made a store, a larger horizon compares more (``--horizon``)."""
_PACKAGE_ROOT = Path(scansnap.__file__).resolve().parent.parent


class StaleStoreError(RuntimeError):
    """A stored run made by another configuration or other library code than the current one."""


class TamperedStoreError(ValueError):
    """A stored array whose digest differs from the one its provenance recorded, a ``result.npz`` that cannot be
    read, or a ``provenance.json`` whose ``config`` or ``functions`` no longer give its recorded hash."""


class UnverifiableError(ValueError):
    """A :func:`scansnap.store_verify.verify` asked on a device the store cannot be verified on
    (:attr:`Provenance.verifiable_on`)."""


@dataclass(frozen=True)
class Provenance:
    """How a stored result was made (``provenance.json``). ``digests``: array name -> SHA-256 of its dtype,
    shape and bytes; ``functions``: the library functions the run executes (``"module:qualname"``) and the
    hash of the docstring-free syntax of each (:func:`scansnap.codehash.function_hash`), which ``code_hash``
    combines; ``record``: dated notes on the store made after it (e.g. a change of the hash scheme), oldest first;
    ``where``: where each of its independent runs ran (:attr:`scansnap.parallel.Fanned.where`, in order; empty for
    a store made before it was recorded).

    ``device``: the kind of device the run computed on (:func:`scansnap.device.kind`: ``"cpu"``, ``"mps"``,
    ``"cuda (<GPU model>)"``); ``floats``: the process's float settings when it was stored
    (:func:`scansnap.device.floats`: matmul precision, TF32, deterministic algorithms, default dtype; ``{}``: not
    recorded, as in stores made before 2026-11-27). ``verifiable_on``: the device kinds
    :func:`scansnap.store_verify.verify` may re-run it on; a store that does not record it reads as its own
    ``device``. The rule: a store made on a CPU is verified on any CPU (another CPU's float sums differ in their last
    bits, within :data:`scansnap.store_verify.RTOL` / :data:`scansnap.store_verify.ATOL` up to :data:`HORIZON`); a
    store made on a GPU on that GPU model only, since draws made on the device (e.g. dropout from its generator) and
    its float sums are not the CPU's, and no test has shown them to agree within the tolerance. A kind is added only
    where a test shows agreement."""

    experiment: str
    profile: str
    config: dict[str, Any]
    config_hash: str
    code_hash: str
    functions: dict[str, str]
    commit: str
    version: str
    torch: str
    device: str
    cpu: str
    threads: int
    wall_s: float
    date: str
    command: str
    digests: dict[str, str]
    record: list[str] = field(default_factory=list)
    where: list[str] = field(default_factory=list)
    floats: dict[str, Any] = field(default_factory=dict)
    verifiable_on: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.verifiable_on:  # not recorded: the store's own device (a bare GPU name: that CUDA model)
            own = self.device if self.device.split(" ")[0] in device_mod.KINDS else f"cuda ({self.device})"
            object.__setattr__(self, "verifiable_on", [own])

    def describe(self) -> str:
        """One paragraph for the page: when, where and in how long, the float settings (when recorded), and the
        commands that re-make and check it."""
        floats = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in self.floats.items())
        return (f"Stored run `{self.experiment}` ({self.profile} profile), made on {self.date} on {self.device} "
                f"({self.cpu}, {self.threads} thread(s)) in {self.wall_s / 60:.1f} min, at commit "
                f"`{self.commit[:12]}` with torch {self.torch}"
                + (f"; float settings: {floats}; verifiable on {', '.join(self.verifiable_on)}" if floats else "")
                + f". Re-make it: `{self.command}`; check it: `python -m scansnap store verify {self.experiment}`.")


@dataclass(frozen=True)
class Stored:
    """A stored result (of the experiment's result type) with its :class:`Provenance`."""

    result: Any
    provenance: Provenance


def store_dir(root: Path | None = None) -> Path:
    """``<root>/stores`` (default root: the book's source checkout, else the current directory)."""
    base = root if root is not None else (source_checkout() or Path.cwd())
    return Path(base) / "stores"


def _folder(exp: Experiment, profile: str, root: Path | None) -> Path:
    return store_dir(root) / exp.id / profile


def _hash(obj: object) -> str:
    return hashlib.sha256(dump_json(obj)).hexdigest()[:16]


def code(exp: Experiment, config: Any) -> tuple[str, dict[str, str]]:
    """``(hash, {function: its hash})`` of the code ``exp``'s run executes (:func:`scansnap.codehash.trace`), found
    by running the prefix :func:`scansnap.store_verify.verify` re-runs
    (:attr:`~scansnap.experiments.base.Experiment.prefix` at :data:`HORIZON` steps; the whole run of ``config`` when
    it has none) in this process on one thread. A prefix executes the same functions as the whole run
    (``tests/test_store.py`` checks it for every stored experiment)."""
    run_config = exp.prefix(config, HORIZON) if exp.prefix is not None else config
    alone = {parallel.JOBS: "1", parallel.DASK: ""}  # runs in another process are not traced
    with mock.patch.dict(os.environ, alone), torch.random.fork_rng():
        _, functions = codehash.trace(exp.run, run_config, None, modules=[exp.run.__module__])
    table = codehash.hashes(functions)
    return codehash.code_hash(table), table


def _digests(path: Path) -> dict[str, str]:
    with np.load(path, allow_pickle=False) as npz:
        return {k: hashlib.sha256(f"{npz[k].dtype}{npz[k].shape}".encode() + np.ascontiguousarray(npz[k]).tobytes())
                .hexdigest() for k in sorted(npz.files)}


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


class DirtyCheckoutError(RuntimeError):
    """A store refused because tracked files of the checkout have uncommitted changes."""


def store(exp: Experiment, config: Any, result: Any, wall_s: float, *, profile: str = "paper",
          figure: str | None = None, root: Path | None = None, allow_dirty: bool = False,
          where: list[str] | None = None) -> Path:
    """Store ``result`` (made by ``exp.run(config)`` in ``wall_s`` seconds) with its provenance under
    ``stores/<exp.id>/<profile>/``; the folder is written whole or not at all. Returns the folder.

    Refuses (:class:`DirtyCheckoutError`) when tracked files of the checkout have uncommitted changes (the commit
    would read ``+dirty``: no one could check out the code that made the run); ``allow_dirty`` is for tests that store
    into a temporary folder. ``where``: where each of the run's fanned-out runs ran
    (:func:`scansnap.parallel.recording`), for the provenance."""
    check_choice("profile", profile, ("smoke", "book", "paper"))
    state = provenance.checkout()
    commit = str(state)
    if state.dirty and not allow_dirty:
        raise DirtyCheckoutError(
            f"{exp.id}: not stored: the checkout has uncommitted changes to tracked files (commit {commit}), so the "
            f"provenance could not name the code that made the run. Commit or stash them (git status), then make "
            f"the run again: python -m scansnap reproduce {figure or (exp.figures[0].id if exp.figures else exp.id)} "
            f"--profile {profile} --store")
    folder = _folder(exp, profile, root)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{profile}-"))
    try:
        results.save(result, tmp / "result.npz")
        lib, functions = code(exp, config)
        target = figure or (exp.figures[0].id if exp.figures else exp.id)
        kind = device_mod.kind(device_mod.resolve())  # the device every trainer of the run read
        prov = Provenance(exp.id, profile, config.to_dict(), _hash(config.to_dict()), lib, functions,
                          commit, provenance.version(), torch.__version__, kind, _cpu(),
                          torch.get_num_threads(), float(wall_s), time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                          f"python -m scansnap reproduce {target} --profile {profile} --store",
                          _digests(tmp / "result.npz"), floats=device_mod.floats(), verifiable_on=[kind],
                          where=list(where or ()))
        atomic_write(tmp / "provenance.json", dump_json(asdict(prov)))
        old = folder.with_name(f".{profile}-old")
        shutil.rmtree(old, ignore_errors=True)
        if folder.exists():
            os.replace(folder, old)
        os.replace(tmp, folder)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder


def read_provenance(exp: Experiment, profile: str = "paper", root: Path | None = None) -> Provenance:
    """The provenance of the store of ``exp`` as it is on disk, unchecked."""
    folder = _folder(exp, profile, root)
    if not (folder / "provenance.json").exists():
        raise FileNotFoundError(f"{exp.id}: no stored run at {folder}; make it with python -m scansnap "
                                f"reproduce {exp.figures[0].id if exp.figures else exp.id} --profile {profile} --store")
    return Provenance(**json.loads((folder / "provenance.json").read_text()))


def read(exp: Experiment, profile: str = "paper", root: Path | None = None) -> Stored:
    """The stored result and provenance as they are on disk, unchecked (:func:`load` checks them)."""
    prov = read_provenance(exp, profile, root)
    return Stored(results.load(exp.result, _folder(exp, profile, root) / "result.npz"), prov)


@dataclass(frozen=True)
class Problem:
    """Why a store cannot be shown: ``error``, the exception :func:`load` raises for it (:class:`StaleStoreError`,
    :class:`TamperedStoreError`, or :class:`FileNotFoundError` for a missing store); ``text``, in words."""

    error: type[Exception]
    text: str


def problems(exp: Experiment, profile: str = "paper", root: Path | None = None) -> list[Problem]:
    """Every reason the store of ``exp`` cannot be shown, typed (empty: it is current and intact)."""
    folder = _folder(exp, profile, root)
    try:
        prov = read_provenance(exp, profile, root)
    except FileNotFoundError as e:
        return [Problem(FileNotFoundError, str(e))]
    refresh = f"refresh it: {prov.command}"
    found = [Problem(TamperedStoreError, f"{exp.id}/{profile}: provenance.json was altered: the hash of its {what} "
                                         f"differs from its recorded {key}; {refresh}")
             for what, key, ok in (("config", "config_hash", _hash(prov.config) == prov.config_hash),
                                   ("functions", "code_hash", codehash.code_hash(prov.functions) == prov.code_hash))
             if not ok]
    now = exp.config.preset(profile).to_dict()
    if _hash(now) != prov.config_hash:
        changed = sorted(k for k in now if now[k] != prov.config.get(k))
        found.append(Problem(StaleStoreError, f"{exp.id}/{profile}: stale: the {profile} configuration changed "
                                              f"({', '.join(changed)}) since the run was stored; {refresh}"))
    now_code = codehash.hashes(prov.functions)
    if codehash.code_hash(now_code) != prov.code_hash:
        changed = [f for f in now_code if now_code[f] != prov.functions[f]]
        found.append(Problem(StaleStoreError, f"{exp.id}/{profile}: stale: the library code it runs changed since it "
                                              f"was stored ({', '.join(changed) or 'the functions it executes'}); "
                                              f"{refresh}"))
    try:
        digests = _digests(folder / "result.npz")
    except (OSError, ValueError, zipfile.BadZipFile) as e:  # missing, truncated or not an npz
        return [*found, Problem(TamperedStoreError, f"{exp.id}/{profile}: result.npz cannot be read ({e}); {refresh}")]
    bad = sorted(k for k in {*digests, *prov.digests} if prov.digests.get(k) != digests.get(k))
    if bad:
        found.append(Problem(TamperedStoreError, f"{exp.id}/{profile}: arrays {bad} differ from their recorded "
                                                 f"digests; {refresh}"))
    return found


def check(exp: Experiment, profile: str = "paper", root: Path | None = None) -> list[str]:
    """Every reason the store of ``exp`` cannot be shown, in words (empty: it is current and intact)."""
    return [p.text for p in problems(exp, profile, root)]


def load(exp: Experiment, profile: str = "paper", root: Path | None = None) -> Stored:
    """The stored result of ``exp``, after :func:`problems`: raises :class:`TamperedStoreError` on an altered array,
    :class:`StaleStoreError` when the configuration or the library code it runs changed, and
    :class:`FileNotFoundError` when there is no store."""
    found = problems(exp, profile, root)
    for error in (FileNotFoundError, TamperedStoreError, StaleStoreError):
        if any(p.error is error for p in found):
            raise error("; ".join(p.text for p in found))
    return read(exp, profile, root)


def stored_ids(root: Path | None = None) -> list[tuple[str, str]]:
    """``(experiment id, profile)`` of every store under ``stores/``."""
    base = store_dir(root)
    return sorted((p.parent.parent.name, p.parent.name) for p in base.glob("*/*/provenance.json"))


def _tuples(v: Any) -> Any:
    return tuple(_tuples(x) for x in v) if isinstance(v, list) else v


def config_of(exp: Experiment, stored: Stored) -> Any:
    """The configuration that made ``stored`` (JSON lists back to the config's tuples)."""
    return exp.config(**{k: _tuples(v) for k, v in stored.provenance.config.items()})


def size(root: Path | None = None) -> int:
    """Bytes under ``stores/`` (every file)."""
    base = store_dir(root)
    return sum(p.stat().st_size for p in base.rglob("*") if p.is_file()) if base.exists() else 0
