"""Stored evidence: a run too long for the build, made once, stored with its provenance, checked by the build.

A run at the paper's protocol can take an hour on a 2-core machine; the book's build has minutes. Such a run
is made once (``python -m scansnap reproduce <figure-id> --profile paper --store``) and stored under
``evidence/<experiment-id>/<profile>/`` at the root of the book's checkout:

* ``result.npz``: the typed result (:func:`scansnap.results.save`): the curves and checkpointed maps the
  figures, tables and verdicts read, never model weights;
* ``provenance.json`` (:class:`Provenance`): the configuration and its hash, a hash of the library sources the
  experiment runs (:func:`scansnap.closure.library_hash`, the closure the page cache uses, without the
  registry of other chapters' experiments), the commit, scansnap and torch versions, device, CPU model,
  threads, wall time, date, the command that re-makes it, and a SHA-256 digest of every stored array.

A page shows it with :func:`scansnap.book.evidence`, which calls :func:`load`: a store whose configuration or
library hash differs from the current code raises :class:`StaleEvidenceError` (naming the store and the command that
refreshes it), so the strict build fails rather than show stale evidence; an array whose digest differs raises
:class:`TamperedEvidenceError`. :func:`verify` re-runs the first steps of a stored run from its recorded seeds
(:attr:`scansnap.experiments.base.Experiment.prefix`) and compares them with the stored checkpoints up to
:data:`HORIZON` (past it, another machine's float sums have made SGD diverge: the later checkpoints are held by
their digests, and re-made, not re-compared).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import torch

import scansnap
from scansnap import provenance, results
from scansnap._checks import check_choice, check_int
from scansnap._io import atomic_write, dump_json, source_checkout
from scansnap.closure import library_closure, library_hash
from scansnap.experiments.base import Experiment

__all__ = ["MAX_BYTES", "Provenance", "StaleEvidenceError", "Stored", "TamperedEvidenceError", "check",
           "HORIZON", "config_of", "evidence_dir", "load", "read", "size", "sources", "store",
           "stored_ids", "verify"]

MAX_BYTES = 20 * 2**20
"""The most the whole ``evidence/`` folder may hold in git (``tests/test_evidence.py`` enforces it)."""
RTOL, ATOL = 1e-4, 1e-6
""":func:`verify`'s tolerance: a re-run on another CPU (or a GPU against a CPU) differs in the last bits of its
float sums (about 1e-7 relative at initialization and in the first steps); a wrong seed, rate, text or code
differs at O(1)."""
HORIZON = 5
""":func:`verify` compares the checkpoints at steps up to this one (step 0: the initialization and the data;
steps 1-5: the first training losses). SGD on the Chapter 8 language model grows a last-bit difference about
tenfold every two or three steps: a re-run of ``ch8-freeze-deep`` on another 2-core AMD EPYC host than the one
that made it differed from the store by 6e-7 relative at step 5, 4e-5 at step 12, 2e-3 at step 16 and 5e-2 at
step 50, where the default re-run used to be compared (and failed at 1e3 times the tolerance). On the machine
that made a store, a larger horizon compares more (``--horizon``)."""
_PACKAGE_ROOT = Path(scansnap.__file__).resolve().parent.parent


class StaleEvidenceError(RuntimeError):
    """Stored evidence made by another configuration or other library code than the current one."""


class TamperedEvidenceError(ValueError):
    """A stored array whose digest differs from the one its provenance recorded."""


@dataclass(frozen=True)
class Provenance:
    """How a stored result was made (``provenance.json``). ``digests``: array name -> SHA-256 of its dtype,
    shape and bytes; ``modules``: the library modules whose sources ``library_hash`` covers."""

    experiment: str
    profile: str
    config: dict[str, Any]
    config_hash: str
    library_hash: str
    modules: list[str]
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

    def describe(self) -> str:
        """One paragraph for the page: when, where and in how long, and the command that re-makes it."""
        return (f"Stored evidence `{self.experiment}` ({self.profile} profile), made on {self.date} on {self.device} "
                f"({self.cpu}, {self.threads} thread(s)) in {self.wall_s / 60:.1f} min, at commit "
                f"`{self.commit[:12]}` with torch {self.torch}. Re-make it: `{self.command}`; check it: "
                f"`python -m scansnap evidence verify {self.experiment}`.")


@dataclass(frozen=True)
class Stored:
    """A stored result (of the experiment's result type) with its :class:`Provenance`."""

    result: Any
    provenance: Provenance


def evidence_dir(root: Path | None = None) -> Path:
    """``<root>/evidence`` (default root: the book's source checkout, else the current directory)."""
    base = root if root is not None else (source_checkout() or Path.cwd())
    return Path(base) / "evidence"


def _folder(exp: Experiment, profile: str, root: Path | None) -> Path:
    return evidence_dir(root) / exp.id / profile


def _hash(obj: object) -> str:
    return hashlib.sha256(dump_json(obj)).hexdigest()[:16]


def sources(exp: Experiment) -> tuple[str, list[str]]:
    """``(hash, modules)`` of the library sources ``exp`` runs: the closure of the module defining its ``run``
    (and that module's own file when it lies outside the library, e.g. a test's)."""
    module = sys.modules[exp.run.__module__]
    text = Path(module.__file__).read_text()
    own = "" if module.__name__.startswith("scansnap.") else hashlib.sha256(text.encode()).hexdigest()[:16]
    names = library_closure(_PACKAGE_ROOT, f"import {module.__name__}\n{text}", registries=False)
    digest = library_hash(_PACKAGE_ROOT, f"import {module.__name__}\n{text}", registries=False)
    return (digest + own if own else digest), names


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


def store(exp: Experiment, config: Any, result: Any, wall_s: float, *, profile: str = "paper",
          figure: str | None = None, root: Path | None = None) -> Path:
    """Store ``result`` (made by ``exp.run(config)`` in ``wall_s`` seconds) with its provenance under
    ``evidence/<exp.id>/<profile>/``; the folder is written whole or not at all. Returns the folder."""
    check_choice("profile", profile, ("smoke", "book", "paper"))
    folder = _folder(exp, profile, root)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{profile}-"))
    try:
        results.save(result, tmp / "result.npz")
        lib, modules = sources(exp)
        target = figure or (exp.figures[0].id if exp.figures else exp.id)
        prov = Provenance(exp.id, profile, config.to_dict(), _hash(config.to_dict()), lib, modules,
                          provenance.git_commit(), provenance.version(), torch.__version__,
                          "cpu" if not torch.cuda.is_available() else torch.cuda.get_device_name(0), _cpu(),
                          torch.get_num_threads(), float(wall_s), time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                          f"python -m scansnap reproduce {target} --profile {profile} --store",
                          _digests(tmp / "result.npz"))
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


def _provenance(exp: Experiment, profile: str, root: Path | None) -> Provenance:
    folder = _folder(exp, profile, root)
    if not (folder / "provenance.json").exists():
        raise FileNotFoundError(f"{exp.id}: no stored evidence at {folder}; make it with python -m scansnap "
                                f"reproduce {exp.figures[0].id if exp.figures else exp.id} --profile {profile} --store")
    return Provenance(**json.loads((folder / "provenance.json").read_text()))


def read(exp: Experiment, profile: str = "paper", root: Path | None = None) -> Stored:
    """The stored result and provenance as they are on disk, unchecked (:func:`load` checks them)."""
    prov = _provenance(exp, profile, root)
    return Stored(results.load(exp.result, _folder(exp, profile, root) / "result.npz"), prov)


def check(exp: Experiment, profile: str = "paper", root: Path | None = None) -> list[str]:
    """Every reason the store of ``exp`` cannot be shown (empty: it is current and intact)."""
    folder = _folder(exp, profile, root)
    try:
        prov = _provenance(exp, profile, root)
    except FileNotFoundError as e:
        return [str(e)]
    refresh = f"refresh it: {prov.command}"
    problems = []
    now = exp.config.preset(profile).to_dict()
    if _hash(now) != prov.config_hash:
        changed = sorted(k for k in now if now[k] != prov.config.get(k))
        problems.append(f"{exp.id}/{profile}: stale: the {profile} configuration changed ({', '.join(changed)}) since "
                        f"the evidence was stored; {refresh}")
    lib, _ = sources(exp)
    if lib != prov.library_hash:
        problems.append(f"{exp.id}/{profile}: stale: the library code it runs changed since it was stored (modules: "
                        f"{', '.join(prov.modules)}); {refresh}")
    digests = _digests(folder / "result.npz")
    bad = sorted(k for k in {*digests, *prov.digests} if prov.digests.get(k) != digests.get(k))
    if bad:
        problems.append(f"{exp.id}/{profile}: arrays {bad} differ from their recorded digests; {refresh}")
    return problems


def load(exp: Experiment, profile: str = "paper", root: Path | None = None) -> Stored:
    """The stored result of ``exp``, after :func:`check`: raises :class:`TamperedEvidenceError` on an altered array and
    :class:`StaleEvidenceError` when the configuration or the library code it runs changed."""
    problems = check(exp, profile, root)
    if any("differ from their recorded digests" in p for p in problems):
        raise TamperedEvidenceError("; ".join(problems))
    if problems:
        raise StaleEvidenceError("; ".join(problems))
    return read(exp, profile, root)


def stored_ids(root: Path | None = None) -> list[tuple[str, str]]:
    """``(experiment id, profile)`` of every store under ``evidence/``."""
    base = evidence_dir(root)
    return sorted((p.parent.parent.name, p.parent.name) for p in base.glob("*/*/provenance.json"))


def verify(exp: Experiment, profile: str = "paper", steps: int | None = None, root: Path | None = None,
           rtol: float = RTOL, atol: float = ATOL, horizon: int = HORIZON) -> list[str]:
    """Re-run the first ``steps`` steps of the stored run (default ``horizon``, which the experiment's
    :attr:`~scansnap.experiments.base.Experiment.prefix` rounds up to its first checkpoint; the whole run when it
    has no prefix) from its recorded configuration and compare every checkpointed curve at the steps both runs
    have, up to step ``horizon``, within ``rtol``/``atol`` (a curve with no step up to ``horizon`` is left out;
    none at all is a mismatch). Returns the mismatches (empty: equal)."""
    horizon = check_int("horizon", horizon, low=0)
    stored = load(exp, profile, root)
    config = config_of(exp, stored)
    if exp.prefix is not None:
        steps = max(horizon, 1) if steps is None else check_int("steps", steps, low=1)
        config = exp.prefix(config, steps)
    again = exp.run(config, None)
    pick = exp.checkpoints or _all_arrays
    old, new = pick(stored.result), pick(again)
    problems, compared = [], 0
    for name, (s_new, v_new) in new.items():
        s_old, v_old = old[name]
        s_new = np.asarray(s_new)
        if not (s_new <= horizon).any():
            continue  # a curve that starts later (a rate between checkpoints): nothing of it within the horizon
        common, i_old, i_new = np.intersect1d(np.asarray(s_old), s_new[s_new <= horizon], return_indices=True)
        a, b = np.asarray(v_old)[i_old], np.asarray(v_new)[i_new]
        if not common.size:
            problems.append(f"{name}: no common checkpoint up to step {horizon}")
            continue
        compared += 1
        bad = ~np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True).reshape(len(common), -1).all(axis=1)
        if bad.any():
            err = np.nanmax(np.abs(a - b) / (atol + rtol * np.abs(a)))
            problems.append(f"{name}: differs at steps {common[bad].tolist()[:5]} (of {common.tolist()[:8]}) "
                            f"by up to {err:.3g} x the tolerance")
    return problems if compared else problems + [f"no curve has a checkpoint up to step {horizon}"]


def _tuples(v: Any) -> Any:
    return tuple(_tuples(x) for x in v) if isinstance(v, list) else v


def config_of(exp: Experiment, stored: Stored) -> Any:
    """The configuration that made ``stored`` (JSON lists back to the config's tuples)."""
    return exp.config(**{k: _tuples(v) for k, v in stored.provenance.config.items()})


def _all_arrays(result: Any) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Every numeric array field of a result, as one checkpoint (step 0): for experiments without ``checkpoints``."""
    out = {}
    for f in fields(result):
        v = getattr(result, f.name)
        if isinstance(v, np.ndarray | torch.Tensor) or (isinstance(v, float | int) and not isinstance(v, bool)):
            out[f.name] = (np.array([0]), np.asarray(v)[None])
    return out


def size(root: Path | None = None) -> int:
    """Bytes under ``evidence/`` (every file)."""
    base = evidence_dir(root)
    return sum(p.stat().st_size for p in base.rglob("*") if p.is_file()) if base.exists() else 0
