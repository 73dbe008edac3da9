"""scansnap.parallel: independent runs fanned out through joblib (loky processes) and a Dask cluster come back in
order, bit for bit equal to the same runs made one after another in this process, each with where it ran."""

from __future__ import annotations

import os
import re
import socket

import pytest
import torch
from conftest import names

from scansnap import data, parallel, train

SEEDS = [3, 0, 2, 1]


def _run(seed: int) -> train.History:
    """A short sampled run of Syn-Small: its float32 losses and maps depend on every step's sums."""
    return train.train(data.syn_small(), 1.0, [0.5, 2.0], steps=15, batch=8, T=12, seed=seed, init="uniform")


def _same(a: list[train.History], b: list[train.History]) -> bool:
    return len(a) == len(b) and all(
        torch.equal(x.loss, y.loss) and torch.equal(x.Z, y.Z) and torch.equal(x.Y, y.Y)
        and torch.equal(x.attention, y.attention) for x, y in zip(a, b, strict=True))


@pytest.fixture(scope="module")
def alone() -> list[train.History]:
    """The runs made one by one, without the module (the numbers every backend must give)."""
    return [_run(s) for s in SEEDS]


def test_sequential_runs_in_this_process_in_order(monkeypatch, alone) -> None:
    monkeypatch.delenv(parallel.JOBS, raising=False)
    monkeypatch.delenv(parallel.DASK, raising=False)
    fanned = parallel.fan_out(_run, SEEDS)
    assert fanned.backend == "sequential" and _same(fanned.results, alone)
    assert fanned.where == (f"{socket.gethostname()} pid {os.getpid()}",) * len(SEEDS)


def test_loky_processes_give_the_sequential_numbers_in_order(monkeypatch, alone) -> None:
    monkeypatch.setenv(parallel.JOBS, "2")
    monkeypatch.delenv(parallel.DASK, raising=False)
    with parallel.recording() as record:
        fanned = parallel.fan_out(_run, SEEDS)
    assert fanned.backend == "loky, 2 processes"
    assert _same(fanned.results, alone), "a run in a worker process differs from the same run made here"
    pids = {w.rsplit(" ", 1)[1] for w in fanned.where}
    assert str(os.getpid()) not in pids and 1 <= len(pids) <= 2, fanned.where
    assert record == list(fanned.where)


def test_a_local_dask_cluster_gives_the_sequential_numbers_and_names_its_workers(monkeypatch, alone) -> None:
    distributed = pytest.importorskip("distributed", reason="dask.distributed: pip install 'scansnap[cluster]'")
    monkeypatch.delenv(parallel.JOBS, raising=False)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        workers = set(cluster.scheduler_info["workers"])
        monkeypatch.setenv(parallel.DASK, cluster.scheduler_address)
        fanned = parallel.fan_out(_run, SEEDS)
    assert fanned.backend == f"dask {cluster.scheduler_address}"
    assert _same(fanned.results, alone), "a run on a Dask worker differs from the same run made here"
    assert len(workers) == 2 and set(fanned.where) <= workers, (fanned.where, workers)


@pytest.mark.parametrize("value", ["0", "-2", "two", "1.5", " "])
def test_a_bad_jobs_setting_is_refused_naming_it(monkeypatch, value: str) -> None:
    monkeypatch.setenv(parallel.JOBS, value)
    if value.strip():
        with pytest.raises(ValueError, match=names(parallel.JOBS) + ": must be a whole number >= 1"):
            parallel.jobs()
    else:
        assert parallel.jobs() == 1  # set but empty: the default
    with pytest.raises(ValueError, match=names("--jobs")):
        parallel.jobs(0)
    assert parallel.jobs(3) == 3


@pytest.mark.parametrize("value", ["localhost:8786", "tcp://host", "http://h:1", "tcp://a b:1"])
def test_a_bad_dask_address_is_refused_naming_it(monkeypatch, value: str) -> None:
    monkeypatch.setenv(parallel.DASK, value)
    with pytest.raises(ValueError, match=names(parallel.DASK) + ": must be a Dask scheduler address"):
        parallel.fan_out(_run, SEEDS)


def test_dask_without_distributed_says_what_to_install(monkeypatch) -> None:
    monkeypatch.setitem(__import__("sys").modules, "distributed", None)
    with pytest.raises(ImportError, match=r"pip install 'scansnap\[cluster\]'"):
        parallel.dask_address("tcp://127.0.0.1:8786")


def test_an_unreachable_scheduler_is_named(monkeypatch) -> None:
    pytest.importorskip("distributed", reason="dask.distributed: pip install 'scansnap[cluster]'")
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setattr(parallel, "_CONNECT_TIMEOUT", "2s")
    with pytest.raises(OSError, match=names(parallel.DASK) + f": no Dask scheduler answered at tcp://127.0.0.1:{port}"):
        parallel.fan_out(_run, SEEDS, dask=f"tcp://127.0.0.1:{port}")


def test_the_build_environment_installs_the_cluster_extra() -> None:
    """CI's venv (``make venv``: ``requirements.txt``) installs ``scansnap[cluster]``, so the LocalCluster test above
    runs there rather than skipping; joblib is a core dependency, dask.distributed only the extra's."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    pyproject = (root / "pyproject.toml").read_text()
    assert re.search(r'^dependencies = \[.*"joblib".*\]$', pyproject, re.M)
    assert re.search(r'^\[project\.optional-dependencies\]\ncluster = \["dask\[distributed\]"\]$', pyproject, re.M)
    lines = (root / "requirements.txt").read_text().splitlines()
    assert "-e .[cluster]" in lines and {"joblib", "dask", "distributed"} <= {ln.split("==")[0] for ln in lines}


def test_the_cli_sets_jobs_and_refuses_a_bad_value(monkeypatch, capsys) -> None:
    from scansnap.cli import main

    monkeypatch.delenv(parallel.JOBS, raising=False)
    with pytest.raises(SystemExit) as exit_info:
        main(["reproduce", "fig-paper-6", "--profile", "smoke", "--jobs", "0"])
    assert exit_info.value.code == 2 and "--jobs: must be a whole number >= 1" in capsys.readouterr().err


def test_the_retired_seed_processes_variable_is_refused_naming_its_successor(monkeypatch) -> None:
    monkeypatch.setenv(parallel.RETIRED, "2")
    with pytest.raises(ValueError, match=names(parallel.RETIRED) + f": retired; set {parallel.JOBS}"):
        parallel.jobs()
