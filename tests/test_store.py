"""scansnap.store: a store is current, stale (configuration or code) or tampered; verify re-runs a prefix, on a
device the store allows; a store records its float settings."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import module_from_source

from scansnap import book, experiments, manifest, store, store_verify
from scansnap.cli import main

WALK = '''
from dataclasses import dataclass, replace

import matplotlib.pyplot as plt
import numpy as np
import torch

from scansnap.experiments.base import Experiment, FigureSpec
from scansnap.results import Config


@dataclass(frozen=True)
class WalkConfig(Config):
    steps: int = 40
    every: int = 10
    seed: int = 0
    PRESETS = {"smoke": dict(steps=20), "book": {}, "paper": dict(steps=60)}

    def protocol(self) -> str:
        return f"a random walk of {self.steps} steps"


@dataclass(frozen=True)
class WalkResult:
    config: WalkConfig
    steps: np.ndarray
    position: np.ndarray


def run(c, progress=None):
    g = torch.Generator().manual_seed(c.seed)
    x, out, marks = torch.zeros(3, dtype=torch.float64), [torch.zeros(3, dtype=torch.float64)], [0]
    for t in range(1, c.steps + 1):
        x = x + 0.1 * torch.randn(3, generator=g, dtype=torch.float64)
        if t % c.every == 0:
            out.append(x.clone())
            marks.append(t)
    return WalkResult(c, np.array(marks), torch.stack(out).numpy())


def plot(r):
    fig, ax = plt.subplots()
    ax.plot(r.steps, r.position)
    return fig


EPS = 0.0  # a relative change of x0 in run_logistic: the last bits another machine's float sums would change


@dataclass(frozen=True)
class LogisticConfig(Config):
    steps: int = 60
    x0: float = 0.3
    r: float = 4.0
    PRESETS = {"smoke": {}, "book": {}, "paper": {}}

    def protocol(self) -> str:
        return f"the logistic map, {self.steps} steps"


@dataclass(frozen=True)
class LogisticResult:
    config: LogisticConfig
    x: np.ndarray


def run_logistic(c, progress=None):
    x = [c.x0 * (1 + EPS)]
    for _ in range(c.steps):
        x.append(c.r * x[-1] * (1 - x[-1]))
    return LogisticResult(c, np.array(x))


LOGISTIC = Experiment(id="test-logistic", config=LogisticConfig,
                      result=LogisticResult, run=run_logistic, figures=(), prefix=lambda c, n: replace(c, steps=n),
                      checkpoints=lambda r: {"x": (np.arange(len(r.x)), r.x)})

EXP = Experiment(id="test-walk", config=WalkConfig, result=WalkResult, run=run,
                 figures=(FigureSpec("fig-test-walk", "A random walk.", (), plot,
                                     lambda r: {"step": r.steps, "x": r.position[:, 0]}),),
                 prefix=lambda c, n: replace(c, steps=n), checkpoints=lambda r: {"position": (r.steps, r.position)})
'''


@pytest.fixture
def module(tmp_path: Path, monkeypatch):
    """Tiny experiments in a module of their own (so that editing its file makes their stores stale), shown by
    Chapter 1 for the test (an entry added to the manifest's table while it runs)."""
    table = {**manifest.entries(), **{i: manifest.Entry(i, "run", "Config", chapter=1)
                                      for i in ("test-walk", "test-logistic")}}
    monkeypatch.setattr(manifest, "entries", lambda: table)
    path = tmp_path / "walk.py"
    with module_from_source(path, WALK, "walk") as module:
        yield module, path


@pytest.fixture
def walk(module):
    """A random walk, checkpointed every 10 steps."""
    return module[0].EXP, module[1]


def _store(exp, root: Path) -> Path:
    config = exp.config.preset("paper")
    return store.store(exp, config, exp.run(config), 1.5, root=root, allow_dirty=True)


def test_a_fresh_store_is_current_and_loads_what_was_stored(walk, tmp_path: Path) -> None:
    exp, _ = walk
    folder = _store(exp, tmp_path)
    assert folder == tmp_path / "stores" / "test-walk" / "paper"
    assert sorted(p.name for p in folder.iterdir()) == ["provenance.json", "result.npz"]
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(".")]  # no temporary folder left
    assert store.check(exp, root=tmp_path) == []
    stored = store.load(exp, root=tmp_path)
    np.testing.assert_array_equal(stored.result.position, exp.run(exp.config.preset("paper")).position)
    prov = stored.provenance
    assert prov.config["steps"] == 60 and prov.wall_s == 1.5 and prov.threads >= 1 and prov.cpu and prov.torch
    assert {"position", "steps"} <= set(prov.digests)
    assert prov.command == "python -m scansnap reproduce fig-test-walk --profile paper --store"
    assert "re-make it" in prov.describe().lower() and "store verify test-walk" in prov.describe()
    assert store.stored_ids(tmp_path) == [("test-walk", "paper")]


def test_a_changed_configuration_makes_the_store_stale(walk, tmp_path: Path, monkeypatch) -> None:
    exp, _ = walk
    _store(exp, tmp_path)
    monkeypatch.setitem(exp.config.PRESETS, "paper", {"steps": 80})
    with pytest.raises(store.StaleStoreError, match=r"configuration changed \(steps\).*refresh it: python -m "
                                                          r"scansnap reproduce fig-test-walk --profile paper --store"):
        store.load(exp, root=tmp_path)


def test_an_edit_of_the_code_it_runs_makes_the_store_stale(walk, tmp_path: Path) -> None:
    exp, path = walk
    _store(exp, tmp_path)
    path.write_text(path.read_text().replace("0.1 * torch.randn", "0.2 * torch.randn"))
    with pytest.raises(store.StaleStoreError, match=r"code it runs changed since it was stored \(walk_\w+:run\); "
                                                          r"refresh it: python -m scansnap reproduce fig-test-walk"):
        store.load(exp, root=tmp_path)


@pytest.mark.parametrize("edit", [
    lambda s: s.replace("def run(c, progress=None):\n", 'def run(c, progress=None):\n    """Walks."""\n'),
    lambda s: s + "\n# an edit\n",
    lambda s: s.replace("ax.plot(r.steps, r.position)", "ax.plot(r.steps, r.position, lw=2)"),  # the figure
    lambda s: s + "\nRULE_THRESHOLD = 0.3\n",  # a rule beside the run, read by no function the run executes
    lambda s: s.replace('return f"a random walk of {self.steps} steps"', 'return f"a walk of {self.steps} steps"'),
], ids=["docstring", "comment", "figure", "rule", "protocol-words"])
def test_an_edit_of_what_the_run_does_not_execute_leaves_the_store_current(walk, tmp_path: Path, edit) -> None:
    exp, path = walk
    _store(exp, tmp_path)
    path.write_text(edit(path.read_text()))
    assert store.check(exp, root=tmp_path) == []


def test_the_strict_build_cannot_show_a_stale_store(walk, tmp_path: Path, monkeypatch) -> None:
    """book.stored (what a page calls) shows a current store and raises on a stale one, failing the page."""
    exp, path = walk
    monkeypatch.setenv("SCANSNAP_ARTIFACTS", str(tmp_path / "artifacts"))
    monkeypatch.setattr(store, "store_dir", lambda root=None: tmp_path / "stores")
    _store(exp, tmp_path)
    made = book.stored(exp)
    assert made.records["fig-test-walk"].protocol.startswith("a random walk of 60 steps; stored run made")
    assert (tmp_path / "artifacts" / "figures" / "fig-test-walk.png").is_file()
    path.write_text(path.read_text() + "\n# an edit\n")
    book.stored(exp)  # a comment is not code
    path.write_text(path.read_text().replace("0.1 * torch.randn", "0.1 / torch.randn"))
    with pytest.raises(store.StaleStoreError, match="python -m scansnap reproduce fig-test-walk"):
        book.stored(exp)


def test_verify_passes_on_a_fresh_store_and_fails_on_a_tampered_array(walk, tmp_path: Path, monkeypatch,
                                                                      capsys) -> None:
    exp, _ = walk
    folder = _store(exp, tmp_path)
    assert store_verify.verify(exp, steps=20, root=tmp_path) == []
    monkeypatch.setattr(experiments, "resolve", lambda target: exp)
    capsys.readouterr()
    assert main(["store", "verify", "test-walk", "--steps", "20", "--root", str(tmp_path)]) == 0
    assert f"(steps 0-{store.HORIZON} re-run and compared, " in capsys.readouterr().out  # what the OK stands for
    assert main(["store", "verify", "test-walk", "--steps", "3", "--root", str(tmp_path)]) == 0
    assert "(steps 0-3 re-run and compared, " in capsys.readouterr().out  # a shorter re-run compares less, and says so
    with np.load(folder / "result.npz") as npz:
        arrays = {k: npz[k] for k in npz.files}
    arrays["position"] = arrays["position"].copy()
    arrays["position"][1, 0] += 1e-3
    np.savez(folder / "result.npz", **arrays)
    with pytest.raises(store.TamperedStoreError, match="position"):
        store_verify.verify(exp, steps=20, root=tmp_path)
    assert main(["store", "verify", "test-walk", "--root", str(tmp_path)]) == 1


def _set_seed(folder: Path) -> None:
    prov = json.loads((folder / "provenance.json").read_text())
    prov["config"]["seed"] += 1
    (folder / "provenance.json").write_text(json.dumps(prov))


def _zero_function_hashes(folder: Path) -> None:
    prov = json.loads((folder / "provenance.json").read_text())
    prov["functions"] = {f: "0" * len(h) for f, h in prov["functions"].items()}
    (folder / "provenance.json").write_text(json.dumps(prov))


@pytest.mark.parametrize(("tamper", "words"), [
    (_set_seed, "provenance.json was altered: the hash of its config differs from its recorded config_hash"),
    (_zero_function_hashes, "the hash of its functions differs from its recorded code_hash"),
    (lambda f: (f / "result.npz").write_bytes((f / "result.npz").read_bytes()[:100]), "result.npz cannot be read"),
    (lambda f: (f / "result.npz").unlink(), "result.npz cannot be read"),
], ids=["config", "functions", "truncated-npz", "missing-npz"])
def test_a_tampered_provenance_or_unreadable_result_is_caught_by_name(walk, tmp_path: Path, monkeypatch, capsys,
                                                                     tamper, words: str) -> None:
    """A copy of a store altered by hand: another seed written into provenance.json (verify would re-run it and
    agree), a changed function table, a truncated or missing result.npz: each is named, with the command that
    re-makes the store; ``store list`` and ``verify`` exit 1 without a traceback."""
    exp, _ = walk
    tamper(_store(exp, tmp_path))
    assert any(words in p and "refresh it: python -m scansnap reproduce" in p for p in store.check(exp, root=tmp_path))
    with pytest.raises(store.TamperedStoreError, match=words.split(":")[0]):
        store.load(exp, root=tmp_path)
    monkeypatch.setattr(experiments, "resolve", lambda target: exp)
    for action in ("list", "verify"):
        assert main(["store", action, "test-walk", "--root", str(tmp_path)]) == 1
        assert words in capsys.readouterr().out


def test_verify_compares_the_checkpoints_of_the_rerun_prefix(walk, tmp_path: Path) -> None:
    """A re-run that differs (here: another seed) is caught at the checkpoints both runs have up to the horizon,
    and a re-run within the tolerance passes."""
    exp, _ = walk
    _store(exp, tmp_path)
    other = dataclasses.replace(exp, prefix=lambda c, n: dataclasses.replace(c, steps=n, seed=c.seed + 1))
    problems = store_verify.verify(other, steps=20, root=tmp_path, horizon=20)
    assert len(problems) == 1 and problems[0].startswith("position: differs at steps [10, 20] (of [0, 10, 20])")
    first = store_verify.verify(other, steps=20, root=tmp_path, horizon=15)[0]
    assert first.startswith("position: differs at steps [10]")
    jitter = dataclasses.replace(exp, checkpoints=lambda r: {"position": (r.steps, r.position * (1 + 1e-7))})
    assert store_verify.verify(jitter, steps=20, root=tmp_path, horizon=20) == []
    assert store_verify.verify(other, steps=20, root=tmp_path, horizon=5) == []  # every walk starts at 0
    late = dataclasses.replace(exp, checkpoints=lambda r: {"position": (r.steps[1:], r.position[1:])})
    assert store_verify.verify(late, steps=20, root=tmp_path) == ["no curve has a checkpoint up to step 5"]
    with pytest.raises(ValueError, match="horizon"):
        store_verify.verify(exp, root=tmp_path, horizon=-1)


def test_verify_stops_at_the_horizon_where_last_bits_have_grown_but_catches_a_wrong_run_within_it(
        module, tmp_path: Path) -> None:
    """The logistic map at r = 4 doubles a difference every step, as SGD on the Chapter 8 model grows one about
    tenfold every two or three: a 1e-9 change of the start (standing in for another machine's last bits) fails
    the whole run's comparison and passes the default horizon's; a wrong start or rate fails within it."""
    mod, _ = module
    exp = mod.LOGISTIC
    _store(exp, tmp_path)
    assert store_verify.verify(exp, root=tmp_path, horizon=60) == []
    mod.EPS = 1e-9
    assert store_verify.verify(exp, root=tmp_path, horizon=60)[0].startswith("x: differs at steps [")
    assert store_verify.verify(exp, root=tmp_path) == []
    mod.EPS = 0.0
    start = dataclasses.replace(exp, prefix=lambda c, n: dataclasses.replace(c, steps=n, x0=c.x0 + 1e-3))
    assert store_verify.verify(start, root=tmp_path)[0].startswith("x: differs at steps [0, 1, 2, 3, 4]")
    rate = dataclasses.replace(exp, prefix=lambda c, n: dataclasses.replace(c, steps=n, r=3.99))
    assert store_verify.verify(rate, root=tmp_path)[0].startswith("x: differs at steps [1, 2, 3, 4, 5] (of [0, 1, 2")


def test_a_failed_store_leaves_nothing_behind(walk, tmp_path: Path) -> None:
    exp, _ = walk
    with pytest.raises(ValueError, match="result"):
        store.store(exp, exp.config(), object(), 1.0, root=tmp_path, allow_dirty=True)
    assert not list((tmp_path / "stores" / "test-walk").iterdir())


@pytest.mark.parametrize("dirty", [True, False])
def test_a_store_is_refused_from_a_dirty_checkout(walk, tmp_path: Path, monkeypatch, dirty: bool) -> None:
    """Issue 26: a store from a checkout with uncommitted changes could not name the code that made it: refused with
    what to do (commit or stash, then re-make), and nothing is written; a clean checkout stores."""
    exp, _ = walk
    state = store.provenance.Checkout("0123abc", dirty)
    monkeypatch.setattr(store.provenance, "checkout", lambda root=None: state)
    config = exp.config()
    if dirty:
        with pytest.raises(store.DirtyCheckoutError, match=r"uncommitted changes.*Commit or stash.*--store"):
            store.store(exp, config, exp.run(config), 1.0, root=tmp_path)
        assert not (tmp_path / "stores" / "test-walk").exists()
    else:
        folder = store.store(exp, config, exp.run(config), 1.0, root=tmp_path)
        assert store.read(exp, root=tmp_path).provenance.commit == "0123abc" and folder.exists()


def test_a_missing_store_names_the_command_that_makes_it(walk, tmp_path: Path) -> None:
    exp, _ = walk
    assert store.check(exp, root=tmp_path) == [
        f"test-walk: no stored run at {tmp_path / 'stores' / 'test-walk' / 'paper'}; make it with "
        "python -m scansnap reproduce fig-test-walk --profile paper --store"]
    assert main(["store", "list", "--root", str(tmp_path)]) == 0


def test_the_repository_stores_fit_their_budget_and_are_current() -> None:
    """The whole stores/ folder stays within 20 MB in git, and every store in it can be shown."""
    assert store.size() <= store.MAX_BYTES
    for exp_id, profile in store.stored_ids():
        assert store.check(experiments.resolve(exp_id), profile) == []


@pytest.mark.parametrize("exp_id", [e for e, _ in store.stored_ids()])
def test_a_stored_experiments_prefix_executes_every_function_its_whole_run_does(exp_id: str) -> None:
    """The code hash of a store covers the functions its verify prefix executes (store.code): at the smoke
    preset, the whole run executes none that the prefix does not."""
    from scansnap import codehash

    exp = experiments.resolve(exp_id)
    config = exp.config.preset("smoke")
    whole = codehash.trace(exp.run, config, None)[1]
    prefix = codehash.trace(exp.run, exp.prefix(config, store.HORIZON), None)[1]
    assert set(whole) <= set(prefix), sorted(set(whole) - set(prefix))


def test_a_store_records_its_device_and_where_its_runs_ran(walk, tmp_path: Path, monkeypatch) -> None:
    exp, _ = walk
    monkeypatch.setenv("SCANSNAP_DEVICE", "cpu")
    config = exp.config.preset("paper")
    where = ["tcp://10.0.0.5:40123", "tcp://10.0.0.6:40321"]
    store.store(exp, config, exp.run(config), 1.0, root=tmp_path, allow_dirty=True, where=where)
    prov = store.load(exp, root=tmp_path).provenance
    assert prov.where == where and prov.device == "cpu"


def test_a_store_records_its_float_settings_and_the_devices_it_verifies_on(walk, tmp_path: Path) -> None:
    """Issue 28 part 3: the float settings of the process that stored the run (here a matmul precision other than
    the default) are written to provenance.json and read back; a CPU-made store is verifiable on the CPU."""
    exp, _ = walk
    old = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high")
    try:
        folder = _store(exp, tmp_path)
    finally:
        torch.set_float32_matmul_precision(old)
    raw = json.loads((folder / "provenance.json").read_text())
    assert raw["device"] == "cpu" and raw["verifiable_on"] == ["cpu"]
    assert raw["floats"] == {"float32_matmul_precision": "high", "cuda_matmul_allow_tf32": True,  # torch links them
                             "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32,
                             "deterministic_algorithms": False, "default_dtype": "float32"}
    prov = store.read_provenance(exp, root=tmp_path)
    assert prov == store.Provenance(**raw) and prov.floats == raw["floats"]
    text = prov.describe()
    assert "; float settings: " in text and "float32 matmul precision high" in text and "default dtype float32" in text
    assert "cuda matmul allow tf32 True" in text and "verifiable on cpu." in text
    assert store_verify.verify(exp, steps=20, root=tmp_path, device="cpu") == []


def test_a_provenance_made_before_float_settings_were_recorded_still_loads(walk, tmp_path: Path) -> None:
    """A provenance.json without ``floats`` and ``verifiable_on`` (as the repository's three stores) loads: no float
    settings recorded (the page's paragraph does not mention them), verifiable on its own device; it is current and
    verifies."""
    exp, _ = walk
    folder = _store(exp, tmp_path)
    raw = json.loads((folder / "provenance.json").read_text())
    old = {k: v for k, v in raw.items() if k not in ("floats", "verifiable_on")}
    (folder / "provenance.json").write_text(json.dumps(old))
    prov = store.read_provenance(exp, root=tmp_path)
    assert prov.floats == {} and prov.verifiable_on == ["cpu"]
    assert "float settings" not in prov.describe() and "verifiable on" not in prov.describe()
    assert store.check(exp, root=tmp_path) == [] and store_verify.verify(exp, steps=20, root=tmp_path) == []
    gpu = store.Provenance(**{**old, "device": "NVIDIA H100 80GB HBM3"})  # the GPU's bare name, as stored before
    assert gpu.verifiable_on == ["cuda (NVIDIA H100 80GB HBM3)"]


def test_verify_refuses_a_device_the_store_cannot_be_verified_on(walk, tmp_path: Path, monkeypatch, capsys) -> None:
    """A store made on a GPU is verified on that GPU model only: on the CPU, verify raises naming the parameter and
    the allowed devices before re-running anything, and the CLI prints REFUSED (exit 1), not a mismatch."""
    exp, _ = walk
    folder = _store(exp, tmp_path)
    raw = json.loads((folder / "provenance.json").read_text())
    gpu = "cuda (NVIDIA H100 80GB HBM3)"
    (folder / "provenance.json").write_text(json.dumps({**raw, "device": gpu, "verifiable_on": [gpu]}))

    def never(config, progress=None):
        raise AssertionError("verify ran the experiment on a device it refuses")

    unrun = dataclasses.replace(exp, run=never)
    message = (r"^device: test-walk/paper was made on cuda \(NVIDIA H100 80GB HBM3\) and can be verified on "
               r"cuda \(NVIDIA H100 80GB HBM3\) only; got cpu \(cpu\)")
    with pytest.raises(store.UnverifiableError, match=message) as err:
        store_verify.verify(unrun, steps=20, root=tmp_path, device="cpu")
    assert isinstance(err.value, ValueError)
    monkeypatch.setattr(experiments, "resolve", lambda target: unrun)
    capsys.readouterr()
    assert main(["store", "verify", "test-walk", "--root", str(tmp_path), "--device", "cpu"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("REFUSED: test-walk/paper") and "\n  device: test-walk/paper was made on cuda" in out
    assert main(["store", "list", "--root", str(tmp_path)]) == 0  # still current: listing does not re-run


def test_the_repository_stores_load_unchanged_and_verify_on_the_cpu(capsys) -> None:
    """The three stores were made on the CPU with the device-aware code: each records its float settings (float32
    matmuls at full precision, TF32 off), can be verified on a CPU, and ``store list`` prints OK for each."""
    items = store.stored_ids()
    assert len(items) == 3
    for exp_id, profile in items:
        prov = store.read_provenance(experiments.resolve(exp_id), profile)
        assert prov.device == "cpu" and prov.verifiable_on == ["cpu"]
        assert prov.floats["float32_matmul_precision"] == "highest" and prov.floats["cuda_matmul_allow_tf32"] is False
    capsys.readouterr()
    assert main(["store", "list"]) == 0
    assert capsys.readouterr().out.splitlines() == [f"OK: {e}/{p}" for e, p in items]
