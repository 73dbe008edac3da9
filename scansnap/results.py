"""Typed configurations and results of experiments, and saving and loading them.

An experiment's configuration is a frozen dataclass deriving from :class:`Config` (validated when
made, with a preset per profile); its result is a dataclass of arrays, numbers, strings, tuples and
nested dataclasses (the configuration among them). :func:`save` writes a result as one ``.npz`` file
(arrays as arrays, everything else as JSON inside it), through a temporary file and a rename;
:func:`load` reads it back into the same type, so a chapter, the command line and a test can reuse
one run.

Supported field types: ``numpy.ndarray``, ``torch.Tensor``, ``int``, ``float``, ``bool``, ``str``,
``None``, tuples and lists of those, ``dict[str, ...]`` of those, and nested dataclasses.
"""

from __future__ import annotations

import dataclasses
import io
import json
import types
import typing
from pathlib import Path
from typing import Any, ClassVar, Protocol, TypeVar

import numpy as np
import torch

from scansnap import params, profiles
from scansnap._checks import check_choice
from scansnap._io import atomic_write, jsonable

__all__ = ["AsMade", "Config", "Cut", "Judged", "load", "save"]

R = TypeVar("R")
_META = "__meta__"


@dataclasses.dataclass(frozen=True)
class Config:
    """Base of experiment configurations: frozen, with presets per profile.

    A subclass declares its fields with :func:`scansnap.params.param` (each with its check and its protocol
    wording) and sets ``PRESETS``: profile -> field overrides applied to its defaults (the ``paper`` values are the
    defaults where the paper gives them). Making one runs every field's check (an error names the field and its
    allowed range), then :meth:`~scansnap.results.Config.validate` (cross-field checks).
    """

    PRESETS: ClassVar[dict[str, dict[str, Any]]] = {}

    PROTOCOL: ClassVar[str | None] = None
    """A template of :meth:`~scansnap.results.Config.protocol`, or ``None`` (the fields' phrases joined by ``"; "``):
    ``{name}`` stands for the field's worded phrase (:func:`scansnap.params.phrase`), or for its value (a format
    spec allowed) when it has no wording, or for any other attribute of the configuration; ``{self.name}`` for the
    value itself (e.g. ``{self.etas[0]}``)."""

    def __post_init__(self) -> None:
        forgot = [name for name in dir(type(self)) if isinstance(getattr(type(self), name, None), dataclasses.Field)]
        if forgot:
            raise ValueError(f"{type(self).__name__}: {forgot} are declared with param() but the class is not a "
                             f"dataclass: decorate it with @dataclass(frozen=True)")
        for f in dataclasses.fields(self):  # a list for a tuple field: kept as a tuple (hashable, reloads equal)
            if isinstance(getattr(self, f.name), list):
                object.__setattr__(self, f.name, tuple(getattr(self, f.name)))
        named = {f.name for f in dataclasses.fields(self)}
        for what, listed in (("GATED", self.GATED), ("NOT_GATED", tuple(self.NOT_GATED))):
            unknown = sorted(set(listed) - named)
            if unknown:
                raise ValueError(f"{what}: {type(self).__name__} names {unknown}, not its fields ({sorted(named)})")
        params.validate(self)
        self.validate()

    def validate(self) -> None:
        """Cross-field checks (raise ``ValueError`` naming the fields); the fields' own checks have run."""

    @classmethod
    def preset(cls, profile: str | None = None):
        """The configuration for ``profile`` (default: the active profile, ``SCANSNAP_PROFILE``)."""
        profile = profiles.current() if profile is None else check_choice("profile", profile, profiles.PROFILES)
        return cls(**cls.PRESETS.get(profile, {}))

    def replace(self, **changes: Any):
        """A copy with ``changes`` (validated again); a name that is not a field is an error naming the fields."""
        named = [f.name for f in dataclasses.fields(self)]
        unknown = sorted(set(changes) - set(named))
        if unknown:
            raise ValueError(f"{', '.join(unknown)}: not a field of {type(self).__name__}; its fields are {named}")
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The fields as JSON-ready values (tuples become lists)."""
        return jsonable(dataclasses.asdict(self))

    GATED: ClassVar[tuple[str, ...]] = ()
    """The fields on which a run below the paper's protocol (the ``paper`` preset) is a reduced protocol: its
    verdicts are labelled with the cut in both directions (:meth:`~scansnap.results.Config.cuts`); a rule that names
    the field in its ``depends_on`` makes such a verdict inconclusive (:meth:`scansnap.verdicts.Rule.judge`)."""

    NOT_GATED: ClassVar[dict[str, str]] = {}
    """Fields whose ``book`` and ``paper`` presets differ but that no rule of this configuration depends on, each
    with why (e.g. a sweep's resolution that only draws a figure). Every field where the two presets differ is in
    :attr:`~scansnap.results.Config.GATED` or here (``tests/test_results.py`` checks)."""

    def protocol(self) -> str:
        """How a run with this configuration is made, in words: the one text verdicts, captions' provenance
        and the ledger use, derived from the fields' wordings (or filled into
        :attr:`~scansnap.results.Config.PROTOCOL`)."""
        if self.PROTOCOL is not None:
            return self.PROTOCOL.format_map(_Phrases(self))
        values = self.to_dict()
        return "; ".join(params.phrase(self, f.name, values[f.name]) for f in dataclasses.fields(self))

    def shortfall(self) -> tuple[str, ...]:
        """The phrases of :meth:`cuts` (empty: at or above the paper's protocol)."""
        return tuple(cut.phrase for cut in self.cuts())

    def cuts(self) -> tuple[Cut, ...]:
        """What this configuration cuts from the ``paper`` preset (the paper's protocol; for a claim of the book,
        its full protocol), one :class:`Cut` per :attr:`GATED` field below it (empty: at or above it). A number
        below the preset's, fewer items than its tuple, or a limit where it has none (``None``) is a cut."""
        paper = self.preset("paper")
        return tuple(cut for cut in (Cut.of(name, getattr(self, name), getattr(paper, name)) for name in self.GATED)
                     if cut is not None)


@dataclasses.dataclass(frozen=True)
class Cut:
    """One field of a run below the paper's protocol, as a verdict's label carries it.

    Attributes:
        field: the configuration field (a :attr:`Config.GATED` name, or a fact of the run such as ``"convergence"``).
        value: the run's value; paper: the ``paper`` preset's (``None``: no limit).
        phrase: the label in words, e.g. ``"steps 10 (paper profile: 100)"`` (what :attr:`Verdict.reduced
            <scansnap.verdicts.Verdict.reduced>` stores).
    """

    field: str
    value: Any
    paper: Any
    phrase: str

    @classmethod
    def of(cls, name: str, mine: Any, ref: Any) -> Cut | None:
        """The cut of field ``name`` at ``mine`` against the paper's ``ref`` (``None`` when it is no cut): a limit
        where the paper has none, fewer items than its tuple, another choice, or a smaller number."""
        if ref is None:
            cut, phrase = mine is not None, f"{name} {mine} (paper profile: no limit)"
        elif isinstance(ref, tuple | list):
            cut, phrase = len(mine) < len(ref), f"{name}: {len(mine)} (paper profile: {len(ref)})"
        elif isinstance(ref, bool | str):
            cut, phrase = mine != ref, f"{name} {mine} (paper profile: {ref})"
        else:
            cut, phrase = mine is None or mine < ref, f"{name} {mine} (paper profile: {ref})"
        return cls(name, mine, ref, phrase) if cut else None


class Judged(Protocol):
    """What :meth:`scansnap.verdicts.Rule.judge` reads of a run's configuration (:class:`Config`, or :class:`AsMade`
    where the run's own record adds cuts)."""

    @property
    def GATED(self) -> tuple[str, ...]:  # noqa: N802 (a configuration's class constant, read-only here)
        """The fields whose cut from the paper's protocol labels a verdict (:attr:`Config.GATED`)."""

    def protocol(self) -> str:
        """How the run was made, in words."""

    def cuts(self) -> tuple[Cut, ...]:
        """What the run cut from the paper's protocol."""


@dataclasses.dataclass(frozen=True)
class AsMade:
    """A configuration with the cuts its run's own record adds (what the configuration alone does not fix, e.g. the
    training text a stored run had, or runs that had not converged): what :meth:`scansnap.verdicts.Rule.judge`
    reads in place of the configuration (:class:`Judged`)."""

    config: Config
    extra: tuple[Cut, ...] = ()

    @property
    def GATED(self) -> tuple[str, ...]:  # noqa: N802 (the configuration's class constant)
        """The configuration's gated fields."""
        return self.config.GATED

    def protocol(self) -> str:
        """The protocol of the run as it was made: the configuration's, with each field a cut names (e.g. the
        training text a stored run had) at the run's value."""
        names = {f.name for f in dataclasses.fields(self.config)}
        made = {cut.field: cut.value for cut in self.extra if cut.field in names}
        return (dataclasses.replace(self.config, **made) if made else self.config).protocol()

    def cuts(self) -> tuple[Cut, ...]:
        """The configuration's cuts, then :attr:`extra`."""
        return self.config.cuts() + tuple(self.extra)

    def shortfall(self) -> tuple[str, ...]:
        """The phrases of :meth:`cuts`."""
        return tuple(cut.phrase for cut in self.cuts())


class _Phrases(dict):
    """The names a :attr:`Config.PROTOCOL` template reads: a worded field's phrase, else the attribute."""

    def __init__(self, config: Config) -> None:
        super().__init__()
        self.config = config

    def __missing__(self, name: str) -> Any:
        if name == "self":
            return self.config
        value = getattr(self.config, name)
        worded = params.declared(type(self.config), name, "words") is not None
        return params.phrase(self.config, name, value) if worded else value


def save(result: object, path: Path) -> Path:
    """Write the dataclass ``result`` to ``path`` (``.npz``), atomically. Returns the path."""
    if not dataclasses.is_dataclass(result) or isinstance(result, type):
        raise ValueError(f"result: must be a dataclass instance; got {type(result).__name__}")
    arrays: dict[str, np.ndarray] = {}
    meta = _encode(result, "", arrays)
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays, **{_META: np.array(json.dumps(meta, sort_keys=True))})
    path = Path(path)
    atomic_write(path, buf.getvalue())
    return path


def load(cls: type[R], path: Path) -> R:
    """Read a result of dataclass type ``cls`` written by :func:`save`."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"path: no saved result at {path}")
    with np.load(path, allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    meta = json.loads(str(arrays.pop(_META)))
    return _decode(cls, meta, arrays)


def _encode(value: object, key: str, arrays: dict[str, np.ndarray]) -> object:
    if isinstance(value, torch.Tensor | np.ndarray):
        name = key or "value"
        arrays[name] = value.detach().cpu().numpy() if isinstance(value, torch.Tensor) else value
        return {"__array__": name}
    if dataclasses.is_dataclass(value):
        return {f.name: _encode(getattr(value, f.name), f"{key}.{f.name}".lstrip("."), arrays)
                for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {"__dict__": {str(k): _encode(v, f"{key}[{k}]", arrays) for k, v in value.items()}}
    if isinstance(value, list | tuple):
        return [_encode(v, f"{key}[{i}]", arrays) for i, v in enumerate(value)]
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise ValueError(f"result field {key!r}: cannot save a {type(value).__name__}")


def _decode(tp: object, meta: object, arrays: dict[str, np.ndarray]) -> Any:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if isinstance(meta, dict) and "__array__" in meta:
        arr = arrays[meta["__array__"]]
        return torch.from_numpy(arr.copy()) if _is(tp, torch.Tensor) else arr
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp)
        return tp(**{f.name: _decode(hints[f.name], meta[f.name], arrays)
                     for f in dataclasses.fields(tp) if f.init})
    if origin in (types.UnionType, typing.Union):
        if meta is None:
            return None
        options = [a for a in args if a is not type(None)]
        return _decode(options[0] if len(options) == 1 else Any, meta, arrays)
    if isinstance(meta, dict) and "__dict__" in meta:
        value_type = args[1] if origin is dict and len(args) == 2 else Any
        key_type = args[0] if origin is dict and args else str
        return {key_type(k): _decode(value_type, v, arrays) for k, v in meta["__dict__"].items()}
    if isinstance(meta, list):
        if origin is tuple:
            items = [args[0]] * len(meta) if len(args) == 2 and args[1] is Ellipsis else list(args)
            return tuple(_decode(t, v, arrays) for t, v in zip(items or [Any] * len(meta), meta, strict=True))
        item = args[0] if args else Any
        return [_decode(item, v, arrays) for v in meta]
    return meta


def _is(tp: object, cls: type) -> bool:
    return tp is cls or cls in typing.get_args(tp)
