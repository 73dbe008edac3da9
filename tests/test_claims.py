"""scansnap.claims: the registry of C1..C43, recording verdicts, and the ledger."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from scansnap import claims

NOTES = Path(__file__).resolve().parents[2] / "shared" / "paper" / "notes.md"


@pytest.fixture(autouse=True)
def artifacts(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("SCANSNAP_ARTIFACTS", str(tmp_path))
    return tmp_path


def test_registry_has_43_claims_in_order() -> None:
    assert [c.id for c in claims.CLAIMS] == [f"C{i}" for i in range(1, 44)]
    assert all(c.kind in ("theory", "experiment") and c.statement and c.where for c in claims.CLAIMS)
    assert all(re.fullmatch(r"book/chapters/0\d-[a-z-]+", c.chapter) for c in claims.CLAIMS)


@pytest.mark.skipif(not NOTES.exists(), reason="the reconstruction notes live outside the repository")
def test_registry_matches_the_notes_ledger() -> None:
    """The notes number C1..C43 and tag each T (theory) or E (experiment): same ids, same kinds."""
    tagged = dict(re.findall(r"\*\*(C\d+)\*\* ([TE]):", NOTES.read_text()))
    assert sorted(tagged, key=lambda c: int(c[1:])) == [c.id for c in claims.CLAIMS]
    assert all(claims.get(i).kind == {"T": "theory", "E": "experiment"}[k] for i, k in tagged.items())


def test_unrecorded_claim_is_not_yet_checked() -> None:
    v = claims.verdict("C7")
    assert v.verdict == "not yet checked" and v.evidence == ""
    assert all(v.verdict == "not yet checked" for _, v in claims.ledger())


def test_record_and_read_back(artifacts: Path) -> None:
    claims.record("C4", "partly verified", "slope -0.49 +- 0.02", link="book/chapters/02-x.html#fig")
    v = claims.verdict("C4")
    assert (v.verdict, v.evidence, v.link) == ("partly verified", "slope -0.49 +- 0.02", "book/chapters/02-x.html#fig")
    on_disk = json.loads((artifacts / "verdicts" / "C4.json").read_text())
    assert on_disk["verdict"] == "partly verified" and on_disk["claim"] == "C4"
    assert not list((artifacts / "verdicts").glob("*.tmp"))  # written through a temporary file, then renamed


def test_ledger_markdown_lists_every_claim_with_links() -> None:
    claims.record("C1", "verified", "err 1e-16 | within tolerance", link="book/chapters/01-setting.html#lemma-1")
    md = claims.ledger_markdown(base="../")
    rows = [r for r in md.splitlines()[2:]]
    assert len(rows) == 43 and all(r.count(" | ") == 5 for r in rows)  # the '|' in evidence is escaped
    assert '<a href="../book/chapters/01-setting.html#lemma-1">' in rows[0] and "**verified**" in rows[0]
    assert "planned: `03-decoder-dynamics`" in rows[6] and "**not yet checked**" in rows[6]


@pytest.mark.parametrize(
    ("args", "param"),
    [
        (("C0", "verified", "x"), "claim_id"),
        (("C44", "verified", "x"), "claim_id"),
        (("C1", "true", "x"), "verdict"),
        (("C1", "not yet checked", "x"), "verdict"),
        (("C1", "verified", "  "), "evidence"),
    ],
)
def test_record_rejects(args: tuple, param: str) -> None:
    with pytest.raises(ValueError, match=rf"^{param}\b"):
        claims.record(*args)
