"""scansnap.claims: the registry (explicit, stable ids), recording verdicts made by rules, and the ledger."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import names

from scansnap import claims
from scansnap.verdicts import Rule, Verdict, at_most

NOTES = Path(__file__).resolve().parents[2] / "shared" / "paper" / "notes.md"
SOURCE = Path(claims.__file__).read_text()


@pytest.fixture(autouse=True)
def artifacts(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("SCANSNAP_ARTIFACTS", str(tmp_path))
    return tmp_path


def _verdict(claim: str, evidence: str, err: float) -> Verdict:
    rule = Rule(claim, evidence, (at_most("err", "error", 1e-10, 1e-6),))
    return rule.judge({"err": err}, protocol="test", link=f"book/chapters/01-setting.html#{claim.lower()}")


def test_ids_are_explicit_unique_and_cover_the_notes_ledger() -> None:
    ids = [c.id for c in claims.CLAIMS]
    assert len(ids) == len(set(ids))
    assert [i for i in ids if i.startswith("C")] == [f"C{i}" for i in range(1, 44)]
    assert all(re.fullmatch(r"[CX]\d+", i) for i in ids)
    # every id is written out in the source, not derived from a list position
    assert all(re.search(rf'Claim\("{i}",', SOURCE) for i in ids)
    assert "enumerate(" not in SOURCE
    assert all(c.statement and c.where for c in claims.CLAIMS)
    assert all(re.fullmatch(r"book/chapters/0\d-[a-z-]+", c.chapter) for c in claims.CLAIMS)


def test_book_claims_are_marked() -> None:
    assert claims.get("C43").origin == "book"
    assert all(c.origin == "book" for c in claims.CLAIMS if c.id.startswith("X"))


@pytest.mark.skipif(not NOTES.exists(), reason="the reconstruction notes live outside the repository")
def test_registry_matches_the_notes_ledger() -> None:
    """The notes number C1..C43 and tag each T (theory) or E (experiment): same ids, same kinds."""
    tagged = dict(re.findall(r"\*\*(C\d+)\*\* ([TE]):", NOTES.read_text()))
    assert sorted(tagged, key=lambda c: int(c[1:])) == [c.id for c in claims.CLAIMS if c.id.startswith("C")]
    assert all(claims.get(i).kind == {"T": "theory", "E": "experiment"}[k] for i, k in tagged.items())


def test_unrecorded_claim_is_not_yet_checked() -> None:
    assert claims.verdicts("C7") == [] and claims.headline("C7") == "not yet checked"
    assert all(head == "not yet checked" for _, head, _ in claims.ledger())


def test_record_and_read_back(artifacts: Path) -> None:
    claims.record(_verdict("C4", "derivation", 1e-8))
    (v,) = claims.verdicts("C4")
    assert (v.level, v.evidence) == ("partly verified", "derivation") and v.recorded
    on_disk = json.loads((artifacts / "verdicts" / "C4.json").read_text())
    assert on_disk["claim"] == "C4" and on_disk["verdicts"][0]["level"] == "partly verified"
    assert not list((artifacts / "verdicts").glob("*.tmp"))  # written through a temporary file, then renamed


def test_one_verdict_per_evidence_kind_and_the_headline_is_the_weakest() -> None:
    claims.record(_verdict("C19", "derivation", 0.0))
    assert claims.headline("C19") == "verified"
    claims.record(_verdict("C19", "training-sampled", 1e-8))
    assert claims.headline("C19") == "partly verified"
    claims.record(_verdict("C19", "training-sampled", 0.0))  # replaces the earlier training verdict
    assert [v.evidence for v in claims.verdicts("C19")] == ["derivation", "training-sampled"]
    assert claims.headline("C19") == "verified"


def test_a_claim_about_training_is_decided_by_training_evidence_only() -> None:
    claims.record(_verdict("C38", "simulation", 0.0))
    assert claims.headline("C38") == "not yet checked"
    claims.record(_verdict("C38", "training-sampled", 1.0))
    assert claims.headline("C38") == "not reproduced"


def test_record_takes_only_verdicts_made_by_rules() -> None:
    with pytest.raises(ValueError, match=names("made")):
        claims.record("C1", "verified", "trust me")
    with pytest.raises(ValueError, match=names("level")):
        Verdict("C1", "true", "derivation", "rule")


def test_ledger_markdown_lists_every_claim_with_evidence_kinds_and_links() -> None:
    claims.record(_verdict("C1", "derivation", 0.0), _verdict("C38", "simulation", 0.0))
    md = claims.ledger_markdown(base="../")
    rows = [r for r in md.split("\n\n")[0].splitlines()[2:]]
    assert len(rows) == len(claims.CLAIMS)
    assert all(len(re.findall(r"(?<!\\)\|", r)) == 7 for r in rows)  # a '|' inside a cell is escaped
    assert '<a href="../book/chapters/01-setting.html#c1">' in rows[0] and "*derivation*: **verified**" in rows[0]
    assert "planned: `03-decoder-dynamics`" in rows[6] and "**not yet checked**" in rows[6]
    assert "(does not decide this claim)" in rows[37]
    assert "C43 (this book)" in rows[42]
    assert "rule: verified when every number reaches its threshold" in md


def test_get_rejects_unknown_ids() -> None:
    for bad in ("C0", "C44", "X999"):
        with pytest.raises(ValueError, match=names("claim_id")):
            claims.get(bad)
