"""CITATION.cff: valid YAML with the keys Citation File Format 1.2.0 requires, the version of the
package, and the paper the book re-executes among its references."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
# Required at the top level by the CFF 1.2.0 schema.
REQUIRED = {"cff-version", "message", "title", "authors"}


@pytest.fixture(scope="module")
def cff() -> dict:
    data = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf8"))
    assert isinstance(data, dict), "CITATION.cff is not a YAML mapping"
    return data


def test_required_keys(cff: dict) -> None:
    assert cff.keys() >= REQUIRED, f"missing {sorted(REQUIRED - cff.keys())}"
    assert cff["cff-version"] == "1.2.0"
    assert isinstance(cff["message"], str) and cff["message"].strip()
    assert isinstance(cff["authors"], list) and cff["authors"]
    for author in cff["authors"]:
        assert "name" in author or "family-names" in author, f"author without a name: {author}"


def test_book_metadata(cff: dict) -> None:
    assert cff["title"] == "Scan and Snap, executed: an executable companion"
    assert cff["type"] == "software"
    assert cff["license"] == "MIT"
    assert cff["repository-code"] == "https://github.com/scansnap/scansnap"


def test_version_matches_pyproject(cff: dict) -> None:
    # the [project] version line (a regex: tomllib is not in Python 3.10, which scansnap supports)
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf8")
    project = pyproject.split("[project]", 1)[1].split("\n[", 1)[0]
    version = re.search(r'^version\s*=\s*"([^"]+)"', project, re.M)
    assert version, "no version in the [project] table of pyproject.toml"
    # YAML would read an unquoted 1.0 as a float: compare as text
    assert str(cff["version"]) == version.group(1)


def test_cites_the_paper(cff: dict) -> None:
    refs = list(cff.get("references", []))
    if "preferred-citation" in cff:
        refs.append(cff["preferred-citation"])
    papers = [r for r in refs if "Scan and Snap" in r.get("title", "")]
    assert papers, "neither references nor preferred-citation cites the paper"
    paper = papers[0]
    assert [a["family-names"] for a in paper["authors"]] == ["Tian", "Wang", "Chen", "Du"]
    assert paper["year"] == 2023
    assert "NeurIPS 2023" in paper["conference"]["name"]
    ids = {i["value"] for i in paper.get("identifiers", [])}
    assert "arXiv:2305.16380" in ids
    assert "2305.16380" in paper["url"]
