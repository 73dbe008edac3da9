"""A stored run records no absolute path of the machine that made it (issue 25): a store is published with the
book, and a reader's machine has none of the maker's folders. Checked: every ``stores/**/provenance.json`` and
every text a store's ``result.npz`` keeps (its ``__meta__``: the configuration and the run's note, which a chapter
prints)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
STORES = sorted(p.parent.relative_to(ROOT).as_posix() for p in (ROOT / "stores").glob("*/*/provenance.json"))
# an absolute POSIX path of two or more parts (not inside a URL or a relative path), or a Windows drive path
ABSOLUTE = re.compile(r"(?<![\w.:/~-])/(?:[\w.@+-]+/)+[\w.@+-]*|\b[A-Za-z]:\\\\?[\w.-]+")


def absolute_paths(text: str) -> list[str]:
    """The absolute paths in ``text``."""
    return sorted(set(ABSOLUTE.findall(text)))


def test_the_pattern_finds_paths_and_leaves_urls_and_relative_paths() -> None:
    assert absolute_paths("train.txt is not in /work/shared/data/wikitext-2: could NOT") == [
        "/work/shared/data/wikitext-2"]
    assert absolute_paths('{"data": "/home/ann/wt2/", "x": "C:\\\\Users\\\\ann"}') == ["/home/ann/wt2/", "C:\\\\Users"]
    assert absolute_paths("https://raw.githubusercontent.com/pytorch/examples/main/x.txt, "
                          "word_language_model/data/wikitext-2/, ~/.cache/scansnap, 1/2/3, a / b, valid/test") == []


def test_there_are_stores() -> None:
    assert STORES, "no stores/<experiment>/<profile>/provenance.json"


@pytest.mark.parametrize("store", STORES)
def test_a_stores_provenance_names_no_absolute_path(store: str) -> None:
    text = (ROOT / store / "provenance.json").read_text(encoding="utf8")
    assert not absolute_paths(text), f"{store}/provenance.json: {absolute_paths(text)}"


@pytest.mark.parametrize("store", STORES)
def test_a_stores_result_texts_name_no_absolute_path(store: str) -> None:
    found = []
    with np.load(ROOT / store / "result.npz", allow_pickle=False) as npz:
        for key in npz.files:
            if npz[key].dtype.kind in "US":
                found += [(key, p) for item in np.atleast_1d(npz[key]) for p in absolute_paths(str(item))]
    assert not found, f"{store}/result.npz keeps absolute paths of the machine that made it: {found}"
