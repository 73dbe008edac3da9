"""scansnap.findings: "What this book found" is read from the recorded verdicts and checked against the lock; nothing
on it is written by hand (a recorded verdict or a lock entry that changes changes the page)."""

from __future__ import annotations

import json

import pytest
from verdict_fixtures import Cfg, Err

from scansnap import claims, findings, ledger
from scansnap.verdicts import Rule, at_least


@pytest.fixture(autouse=True)
def _artifacts(tmp_path, monkeypatch):
    monkeypatch.setenv("SCANSNAP_ARTIFACTS", str(tmp_path / "artifacts"))


def _record(claim: str, evidence: str, share: float, control: float = 0.1) -> None:
    """A verdict on a made-up share (``err`` of :class:`verdict_fixtures.Err`, read as a share here)."""
    rule = Rule(claim, evidence, Err, (at_least("err", "a share", 0.9, 0.5),), "no effect")
    claims.record(rule.judge(Err(share), Cfg(), control=None if evidence == "derivation" else Err(control)))


def test_the_page_shows_each_level_and_number_recorded_and_follows_them(tmp_path) -> None:
    _record("P1", "training-population", 0.95)
    _record("C24", "derivation", 0.99)
    _record("C24", "training-population", 0.2)
    _record("C26", "training-sampled", 0.95, control=0.95)  # the control passes too
    lock = tmp_path / "lock.json"
    ledger.write_lock("test", lock)
    page = findings.page(lock_path=lock)
    assert 'class="lp-pill v-verified" href="claims.html#P1"' in page and "err = 0.95" in page
    assert 'href="claims.html#C24"' in page and "not reproduced" in page
    assert "the control passes too" in page and "#C26" in page
    assert "equals the locked ledger" in page
    _record("P1", "training-population", 0.6)  # the run now gives another number
    again = findings.page(lock_path=lock)
    assert "err = 0.6" in again and 'class="lp-pill v-partly-verified" href="claims.html#P1"' in again
    assert "differs from the locked ledger" in again and "P1 (locked: verified)" in again


def test_a_changed_lock_entry_changes_the_page(tmp_path) -> None:
    _record("P2", "real-data", 0.95)
    lock = tmp_path / "lock.json"
    ledger.write_lock("test", lock)
    before = findings.page(lock_path=lock)
    data = json.loads(lock.read_text())
    data["verdicts"]["P2"]["headline"] = "not reproduced"
    lock.write_text(json.dumps(data))
    after = findings.page(lock_path=lock)
    assert before != after and "P2 (locked: not reproduced)" in after


def test_no_verdict_word_is_written_by_hand() -> None:
    """With nothing recorded, the page says that nothing was judged: no level appears that no rule made."""
    page = findings.page()
    assert "No run has judged it yet." in page
    for level in ("verified", "not reproduced"):
        assert f"lp-pill v-{level.replace(' ', '-')}" not in page
