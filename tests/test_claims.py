"""scansnap.claims: the registry (explicit, stable ids), recording verdicts made by rules, and the ledger."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import names
from verdict_fixtures import Cfg, Err

from scansnap import claims, provenance
from scansnap.verdicts import TRAINING_KINDS, Rule, Verdict, at_most

NOTES = Path(__file__).resolve().parents[2] / "shared" / "paper" / "notes.md"
SOURCE = Path(claims.__file__).read_text()
LEDGER = Path(__file__).resolve().parent / "data" / "notes_ledger.json"


@pytest.fixture(autouse=True)
def artifacts(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("SCANSNAP_ARTIFACTS", str(tmp_path))
    return tmp_path



def _verdict(claim: str, evidence: str, err: float, control: float = 1.0) -> Verdict:
    rule = Rule(claim, evidence, Err, (at_most("err", "error", 1e-10, 1e-6),), "errors at the scale of the numbers")
    return rule.judge(Err(err), Cfg(), control=Err(control) if evidence in TRAINING_KINDS else None,
                      link=f"book/chapters/01-setting.html#{claim.lower()}")


def test_ids_are_explicit_unique_and_cover_the_notes_ledger() -> None:
    ids = [c.id for c in claims.CLAIMS]
    assert len(ids) == len(set(ids))
    # the notes' C33 holds two statements: split into C33a (decoupling) and C33b (local fates)
    # C40 (Figure 7) likewise: C40a (becomes sparse) and C40b (freezes), judged apart (issue 26)
    expected = [f"C{i}" for i in range(1, 44) if i not in (33, 40)]
    expected[32:32] = ["C33a", "C33b"]
    expected[40:40] = ["C40a", "C40b"]
    assert [i for i in ids if i.startswith("C")] == expected
    assert all(re.fullmatch(r"[CXP]\d+[ab]?", i) for i in ids)
    assert [c.id for c in claims.CENTRAL] == [i for i in ids if i.startswith("P")]
    # every id is written out in the source, not derived from a list position
    assert all(re.search(rf'Claim\("{i}",', SOURCE) for i in ids)
    assert "enumerate(" not in SOURCE
    assert all(c.statement and c.where for c in claims.CLAIMS)
    assert all(re.fullmatch(r"book/chapters/0\d-[a-z-]+", c.chapter) for c in claims.CLAIMS)


def test_book_claims_are_marked() -> None:
    assert claims.get("C43").origin == "book"
    assert all(c.origin == "book" for c in claims.CLAIMS if c.id.startswith("X"))


def test_registry_matches_the_notes_ledger() -> None:
    """The notes number C1..C43 and tag each T (theory) or E (experiment) (kept in ``tests/data/notes_ledger.json``):
    same ids, same kinds, with two documented departures: C33 is split in two (C33a, C33b), and C34 (Figure 3,
    which the paper calls a numerical simulation) is a claim of the theory, decided by simulation."""
    tagged = json.loads(LEDGER.read_text())["claims"]
    ours = {c.id.rstrip("ab"): c.kind for c in claims.CLAIMS if c.id.startswith("C")}
    assert sorted(tagged, key=lambda c: int(c[1:])) == sorted(ours, key=lambda c: int(c[1:]))
    departures = {i for i, k in tagged.items() if ours[i] != {"T": "theory", "E": "experiment"}[k]}
    assert departures == {"C34"}
    assert claims.get("C33a").kind == claims.get("C33b").kind == "theory"
    assert claims.get("C40a").kind == claims.get("C40b").kind == "experiment"


@pytest.mark.skipif(not NOTES.exists(), reason="the reconstruction notes live outside the repository")
def test_the_kept_ledger_equals_the_notes() -> None:
    assert json.loads(LEDGER.read_text())["claims"] == dict(re.findall(r"\*\*(C\d+)\*\* ([TE]):", NOTES.read_text()))


def test_unrecorded_claim_is_not_yet_checked() -> None:
    assert claims.verdicts("C7") == [] and claims.headline("C7") == "not yet checked"
    assert all(head == "not yet checked" for _, head, _ in claims.ledger())


def test_record_and_read_back(artifacts: Path) -> None:
    claims.record(_verdict("C4", "derivation", 1e-8))
    (v,) = claims.verdicts("C4")
    assert (v.level, v.evidence) == ("partly verified", "derivation") and v.recorded
    assert v.commit == provenance.git_commit()  # a citer can say at which commit a verdict was reached
    on_disk = json.loads((artifacts / "verdicts" / "C4.json").read_text())
    assert on_disk["claim"] == "C4" and on_disk["verdicts"][0]["level"] == "partly verified"
    assert not list((artifacts / "verdicts").glob("*.tmp"))  # written through a temporary file, then renamed


def test_verdicts_of_another_version_are_refused_by_name(artifacts: Path, capsys) -> None:
    """A referee whose scansnap is older or newer than the build they read gets the file and what to do (exit 2 from
    ``claims``), not a traceback."""
    from scansnap.cli import main

    claims.record(_verdict("C4", "derivation", 0.0))
    path = artifacts / "verdicts" / "C4.json"
    data = json.loads(path.read_text())
    data["verdicts"][0]["a_later_field"] = "x"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"^verdicts: .*C4.json was recorded by another version of scansnap"):
        claims.verdicts("C4")
    assert main(["claims"]) == 2
    assert "rebuild the book with this one (make book)" in capsys.readouterr().err


def test_one_verdict_per_evidence_kind_and_the_headline_is_the_weakest() -> None:
    claims.record(_verdict("C19", "derivation", 0.0))
    assert claims.headline("C19") == "verified"
    claims.record(_verdict("C19", "simulation", 1e-8))
    assert claims.headline("C19") == "partly verified"
    claims.record(_verdict("C19", "simulation", 0.0))  # replaces the earlier simulation verdict
    assert [v.evidence for v in claims.verdicts("C19")] == ["derivation", "simulation"]
    assert claims.headline("C19") == "verified"
    assert {v.profile for v in claims.verdicts("C19")} == {"book"}  # stamped with the profile


def test_training_evidence_never_decides_a_theory_claim() -> None:
    """Does the theorem describe training? is shown beside the headline, never as it."""
    claims.record(_verdict("C24", "derivation", 0.0), _verdict("C24", "training-population", 1.0))
    assert claims.headline("C24") == "verified"
    (beside,) = claims.describes_training("C24")
    assert beside.level == "not reproduced" and beside.evidence == "training-population"
    claims.record(_verdict("C25", "training-sampled", 0.0))
    assert claims.headline("C25") == "not yet checked"


def test_a_claim_about_training_is_decided_by_training_evidence_only() -> None:
    claims.record(_verdict("C38", "simulation", 0.0))
    assert claims.headline("C38") == "not yet checked"
    claims.record(_verdict("C38", "training-sampled", 1.0))
    assert claims.headline("C38") == "not reproduced"
    claims.record(_verdict("C38", "training-sampled", 0.0, control=0.0))  # the control passes too
    assert claims.headline("C38") == "inconclusive"
    assert claims.describes_training("C38") == []


def test_record_takes_only_verdicts_made_by_rules() -> None:
    with pytest.raises(ValueError, match=names("made")):
        claims.record("C1", "verified", "trust me")
    with pytest.raises(ValueError, match=names("level")):
        Verdict("C1", "true", "derivation", "rule")


def test_get_rejects_unknown_ids() -> None:
    for bad in ("C0", "C33", "C44", "X999"):
        with pytest.raises(ValueError, match=names("claim_id")):
            claims.get(bad)


def test_recording_waits_for_another_process_holding_the_verdicts_lock(tmp_path, monkeypatch) -> None:
    """Chapters 5 and 8 both judge P3 and may execute at once: a process records only while no other reads and
    writes the verdicts (so neither loses the other's verdict of the same claim)."""
    import multiprocessing
    import time

    ctx = multiprocessing.get_context("spawn")
    claims.record(_verdict("P3", "real-data", 0.0))
    child = ctx.Process(target=_record_one, args=(str(tmp_path), "training-sampled"))
    with claims._exclusive():
        child.start()
        time.sleep(1.5)  # the child is blocked on the lock: nothing of it written yet
        assert {v.evidence for v in claims.verdicts("P3")} == {"real-data"} and child.is_alive()
    child.join(60)
    assert child.exitcode == 0
    assert {v.evidence for v in claims.verdicts("P3")} == {"training-sampled", "real-data"}


def _record_one(artifacts: str, kind: str) -> None:
    import os

    os.environ["SCANSNAP_ARTIFACTS"] = artifacts
    claims.record(_verdict("P3", kind, 1.0))


def test_sources_fit_the_ledgers_claim_column() -> None:
    """A claim's source (``where``) sits under its id in the ledger's narrowest column (``tests/test_site_ledger.py``
    checks that no column is cut at 740 and 1300 px): no unbreakable word of it longer than 10 characters (a hyphen
    breaks one), so that a source cannot widen that column past the page. What a source needs more words for (a
    formula that is this book's reconstruction) goes in the statement."""
    long = {c.id: w for c in claims.CLAIMS for w in c.where.split() if max(map(len, w.split("-"))) > 10}
    assert not long, long
