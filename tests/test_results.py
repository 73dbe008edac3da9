"""scansnap.results: typed configurations with presets; results saved and loaded as the same type."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import names

from scansnap import params, results
from scansnap._checks import check_int
from scansnap.results import Config


@dataclass(frozen=True)
class Cfg(results.Config):
    steps: int = 100
    seeds: tuple[int, ...] = (1, 2, 3)
    PRESETS = {"smoke": dict(steps=5, seeds=(1,))}

    def __post_init__(self) -> None:
        check_int("steps", self.steps, low=1)


@dataclass(frozen=True)
class Inner:
    z: torch.Tensor
    label: str


@dataclass(frozen=True)
class Res:
    config: Cfg
    x: np.ndarray
    y: float
    inner: Inner
    per_q: dict[int, np.ndarray]
    names: tuple[str, ...]
    note: str | None = None
    extra: list[float] = field(default_factory=list)


def test_presets_and_validation() -> None:
    assert Cfg.preset("smoke") == Cfg(steps=5, seeds=(1,))
    assert Cfg.preset("paper") == Cfg()
    assert Cfg.preset("book").to_dict() == {"steps": 100, "seeds": [1, 2, 3]}
    with pytest.raises(ValueError, match=names("steps")):
        Cfg(steps=0)
    with pytest.raises(ValueError, match=names("steps")):
        Cfg().replace(steps=-1)
    with pytest.raises(ValueError, match=names("profile")):
        Cfg.preset("huge")


def test_save_load_round_trip(tmp_path: Path) -> None:
    r = Res(Cfg.preset("smoke"), np.arange(6.0).reshape(2, 3), 0.5, Inner(torch.ones(2, dtype=torch.float64), "a"),
            {1: np.array([1.0]), 10: np.array([2.0, 3.0])}, ("p", "q"), None, [1.0, 2.5])
    path = results.save(r, tmp_path / "r.npz")
    back = results.load(Res, path)
    assert back.config == r.config and back.y == 0.5 and back.names == ("p", "q") and back.note is None
    np.testing.assert_array_equal(back.x, r.x)
    assert isinstance(back.inner.z, torch.Tensor) and torch.equal(back.inner.z, r.inner.z)
    assert sorted(back.per_q) == [1, 10] and np.array_equal(back.per_q[10], [2.0, 3.0])
    assert back.extra == [1.0, 2.5]
    assert not list(tmp_path.glob("*.tmp"))


def test_save_rejects_what_it_cannot_write(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=names("result")):
        results.save({"a": 1}, tmp_path / "x.npz")
    with pytest.raises(FileNotFoundError, match=names("path")):
        results.load(Res, tmp_path / "missing.npz")


def _configs() -> list[type[Config]]:
    import importlib
    import pkgutil

    import scansnap.experiments as pkg

    for mod in pkgutil.iter_modules(pkg.__path__):
        importlib.import_module(f"{pkg.__name__}.{mod.name}")
    seen: list[type[Config]] = []
    todo = list(Config.__subclasses__())
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        if cls.__module__.startswith("scansnap.") and cls not in seen:
            seen.append(cls)
    return sorted(seen, key=lambda c: f"{c.__module__}.{c.__qualname__}")


@pytest.mark.parametrize("cls", _configs(), ids=lambda c: c.__qualname__)
def test_every_difference_between_book_and_paper_presets_is_gated_or_said_not_to_matter(cls) -> None:
    """Where a configuration's ``book`` and ``paper`` presets differ (steps, seeds, horizons, sizes), the field is
    gated (its verdicts labelled with the cut, :meth:`Config.cuts`) or listed in ``NOT_GATED`` with the reason no rule
    depends on it: a profile never changes a verdict silently."""
    book, paper = cls.preset("book"), cls.preset("paper")
    differ = [f.name for f in dataclasses.fields(cls) if getattr(book, f.name) != getattr(paper, f.name)]
    unsaid = [n for n in differ if n not in cls.GATED and not str(cls.NOT_GATED.get(n, "")).strip()]
    assert not unsaid, f"{cls.__module__}.{cls.__qualname__}: book and paper differ in {unsaid}, neither gated nor " \
                       f"in NOT_GATED with a reason"
    both = sorted(set(cls.GATED) & set(cls.NOT_GATED))
    assert not both, f"{cls.__qualname__}: {both} both gated and not"
    fields = {f.name for f in dataclasses.fields(cls)}
    assert set(cls.GATED) <= fields and set(cls.NOT_GATED) <= fields


@dataclass(frozen=True)
class Declared(results.Config):
    steps: int = params.param(10, params.Int(low=1), "{} steps")
    seeds: tuple[int, ...] = params.param((1, 2), params.Seeds(), params.seed_list)
    GATED = ("steps",)


def test_replace_names_an_unknown_field_and_its_fields() -> None:
    with pytest.raises(ValueError, match=r"^seed: not a field of Declared; its fields are \['steps', 'seeds'\]"):
        Declared().replace(seed=3)


def test_a_list_for_a_tuple_field_is_kept_as_a_tuple(tmp_path: Path) -> None:
    """A list given for a tuple field is stored as a tuple: the configuration stays hashable and its saved result
    reloads equal to it."""
    c = Declared(seeds=[3, 4])
    assert c.seeds == (3, 4) and c == Declared(seeds=(3, 4)) and hash(c) == hash(Declared(seeds=(3, 4)))
    assert Declared().replace(seeds=[5]).seeds == (5,)


def test_a_gated_name_that_is_no_field_is_refused_when_made() -> None:
    @dataclass(frozen=True)
    class Typo(results.Config):
        steps: int = params.param(10, params.Int(low=1))
        GATED = ("step",)

    with pytest.raises(ValueError, match=r"^GATED: Typo names \['step'\], not its fields \(\['steps'\]\)"):
        Typo()


def test_a_config_declared_with_param_but_not_a_dataclass_is_refused() -> None:
    class Bare(results.Config):  # @dataclass(frozen=True) forgotten: steps would be a dataclasses.Field
        steps: int = params.param(10, params.Int(low=1))

    with pytest.raises(ValueError, match=r"^Bare: \['steps'\] .* @dataclass\(frozen=True\)"):
        Bare()
