"""Independent runs (seeds, learning rates, datasets of a sweep) fanned out through ``joblib``, and through a Dask
cluster past one machine.

:func:`fan_out` calls ``fn(item)`` for every item and returns the results in the items' order:

- by default (``jobs`` 1) one after another in this process;
- with ``--jobs N`` / ``$SCANSNAP_JOBS`` = N > 1, in N worker processes of joblib's ``loky`` backend;
- with ``$SCANSNAP_DASK`` = a scheduler address (``tcp://host:8786``), on that Dask cluster through joblib's
  ``dask`` backend (``dask.distributed``: ``pip install scansnap[cluster]``).

Every run executes on one intra-op torch thread (:func:`scansnap._threads.one_thread`) wherever it runs, so its
float32 sums are taken in one order and a result is bit for bit that of the same run made alone in this process.
Each result comes back with where it ran (host and process, or the Dask worker's address): :attr:`Fanned.where`,
for the provenance of a stored run.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from scansnap._threads import one_thread

__all__ = ["DASK", "JOBS", "Fanned", "dask_address", "fan_out", "jobs", "recording"]

JOBS = "SCANSNAP_JOBS"
"""Environment variable: how many runs execute at once on this machine (default 1: one after another, in this
process). Each run is on one thread, so the results do not depend on it."""

DASK = "SCANSNAP_DASK"
"""Environment variable: the address of a Dask scheduler (``tcp://host:port``); when set, runs go to its workers."""

RETIRED = "SCANSNAP_SEED_PROCESSES"
"""The variable :data:`JOBS` replaces (Chapter 8's two hand-written process pools read it); set, it is refused."""
_CONNECT_TIMEOUT = "20s"
_ADDRESS = re.compile(r"^(tcp|tls)://[^\s/:]+:\d+$")
_records: list[list[str]] = []

A = TypeVar("A")
T = TypeVar("T")


@dataclass(frozen=True)
class Fanned(Generic[T]):
    """The runs of one :func:`fan_out`.

    Attributes:
        results: one per item, in the items' order.
        where: one per item: ``"<host> pid <pid>"`` for a run on this machine, the worker's address
            (``"tcp://10.0.0.5:40123"``) for a run on a Dask cluster.
        backend: ``"sequential"``, ``"loky, N processes"`` or ``"dask <scheduler address>"``.
    """

    results: list[T]
    where: tuple[str, ...]
    backend: str


def jobs(value: int | str | None = None) -> int:
    """How many runs at once: ``value`` if given (``--jobs``), else ``$SCANSNAP_JOBS``, else 1. Raises
    ``ValueError`` naming the setting unless it is a whole number >= 1."""
    if os.environ.get(RETIRED):
        raise ValueError(f"{RETIRED}: retired; set {JOBS} (or --jobs) instead: the runs at once, one process each")
    name = "--jobs" if value is not None else JOBS
    raw = value if value is not None else ((os.environ.get(JOBS) or "").strip() or "1")
    try:
        n = int(str(raw).strip())
    except ValueError:
        n = 0
    if n < 1 or str(raw).strip() != str(n):
        raise ValueError(f"{name}: must be a whole number >= 1 (runs at once, one process each); got {raw!r}")
    return n


def dask_address(value: str | None = None) -> str | None:
    """The Dask scheduler's address: ``value`` if given, else ``$SCANSNAP_DASK``; ``None`` when neither is set.
    Raises ``ValueError`` naming the setting for an address that is not ``tcp://host:port`` (or ``tls://``), and
    ``ImportError`` saying what to install when ``dask.distributed`` is missing."""
    name = "dask" if value is not None else DASK
    address = value if value is not None else os.environ.get(DASK, "").strip()
    if not address:
        return None
    if not _ADDRESS.match(address):
        raise ValueError(f"{name}: must be a Dask scheduler address such as tcp://127.0.0.1:8786; got {address!r}")
    try:
        import distributed  # noqa: F401
    except ImportError as err:
        raise ImportError(f"{name} is set ({address}), but dask.distributed is not installed: "
                          "pip install 'scansnap[cluster]'") from err
    return address


def _where() -> str:
    """Where this code runs: the Dask worker's address inside one, else the host and process id."""
    with contextlib.suppress(ImportError, ValueError):
        from distributed import get_worker

        return str(get_worker().address)
    return f"{socket.gethostname()} pid {os.getpid()}"


def _placed(fn: Callable[[A], T], item: A) -> tuple[T, str]:
    """``(fn(item), where it ran)``, computed on one intra-op thread."""
    with one_thread():
        return fn(item), _where()


def fan_out(fn: Callable[[A], T], items: Sequence[A], *, n_jobs: int | None = None, dask: str | None = None,
            here: Callable[[A], T] | None = None) -> Fanned[T]:
    """``fn(item)`` for every item, in the items' order (see the module's text for where they run).

    Args:
        fn: a picklable function of one argument (a module-level function or a ``functools.partial`` of one) when
            the runs leave this process.
        items: the runs' arguments.
        n_jobs: runs at once on this machine (:func:`jobs`: default ``$SCANSNAP_JOBS``, else 1).
        dask: a scheduler address (:func:`dask_address`: default ``$SCANSNAP_DASK``); it takes precedence over
            ``n_jobs``: the cluster's workers decide how many run at once.
        here: what to call instead of ``fn`` when the runs stay in this process (one at a time): the same run,
            free to use what does not travel to another process (data already read, a progress bar).
    """
    items = list(items)
    address = dask_address(dask)
    n = min(jobs(n_jobs), max(len(items), 1))
    if address is not None:
        placed, backend = _on_dask(fn, items, address), f"dask {address}"
    elif n == 1:
        placed, backend = [_placed(here or fn, x) for x in items], "sequential"
    else:
        joblib = _joblib(f"{JOBS} = {n}")
        with joblib.parallel_config(backend="loky", n_jobs=n, inner_max_num_threads=1):
            placed = joblib.Parallel()(joblib.delayed(_placed)(fn, x) for x in items)
        backend = f"loky, {n} processes"
    fanned = Fanned([r for r, _ in placed], tuple(w for _, w in placed), backend)
    for record in _records:
        record.extend(fanned.where)
    return fanned


def _joblib(setting: str) -> Any:
    """joblib, imported only when runs leave this process (a run here needs nothing beyond torch)."""
    try:
        import joblib
    except ImportError as err:
        raise ImportError(f"{setting}: runs in other processes need joblib, a dependency of scansnap that is not "
                          "installed here: pip install joblib") from err
    return joblib


def _on_dask(fn: Callable[[Any], Any], items: list[Any], address: str) -> list[tuple[Any, str]]:
    joblib = _joblib(f"{DASK} = {address}")
    from distributed import Client

    try:
        client = Client(address, timeout=_CONNECT_TIMEOUT, set_as_default=False)
    except OSError as err:
        raise OSError(f"{DASK}: no Dask scheduler answered at {address} ({err})") from err
    with client, joblib.parallel_config(backend="dask", client=client, wait_for_workers_timeout=60):
        return joblib.Parallel(n_jobs=-1)(joblib.delayed(_placed)(fn, x) for x in items)


@contextlib.contextmanager
def recording() -> Iterator[list[str]]:
    """Collects, in a list, where every run fanned out inside the block ran (:attr:`Fanned.where`, in order)."""
    record: list[str] = []
    _records.append(record)
    try:
        yield record
    finally:
        _records.remove(record)
