"""scansnap.ledger: the locked rules (ledger/rules.json) and the locked book verdicts (ledger/verdicts-book.json)."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
from conftest import names
from verdict_fixtures import Cfg, Err

from scansnap import claims, ledger
from scansnap.cli import main
from scansnap.experiments import all_rules
from scansnap.verdicts import Rule, at_most

ROOT = Path(__file__).resolve().parent.parent
RULES_FILE = ROOT / "ledger" / "rules.json"
LOCK_FILE = ROOT / "ledger" / "verdicts-book.json"


@pytest.fixture(autouse=True)
def artifacts(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("SCANSNAP_ARTIFACTS", str(tmp_path / "artifacts"))
    monkeypatch.setenv("SCANSNAP_PROFILE", "book")
    return tmp_path / "artifacts"


def test_every_rule_of_the_code_equals_its_lock_and_every_change_has_a_reason() -> None:
    """A threshold edited in the code without `rules --write --reason` fails here."""
    assert ledger.check_rules() == []
    locked = ledger.read_rules()
    for rule in all_rules():
        history = locked[rule.key]["history"]
        assert history and all(h["reason"].strip() and h["date"] and h["change"] for h in history)
        assert history[-1]["fingerprint"] == rule.fingerprint()


def test_a_threshold_edit_without_a_history_entry_fails(tmp_path: Path) -> None:
    rules = all_rules()
    first = rules[0]
    c = first.criteria[0]
    moved = dataclasses.replace(c, verified=c.verified / 2 if c.op == "<=" else c.verified * 2)  # a tighter bar
    edited = [dataclasses.replace(first, criteria=(moved, *first.criteria[1:])), *rules[1:]]
    problems = ledger.check_rules(edited, RULES_FILE)
    assert len(problems) == 1 and problems[0].startswith(f"{first.key}: differs from the lock in criteria")
    # a hand edit of the lock that matches the code but skips the history fails too
    copy = tmp_path / "rules.json"
    data = json.loads(RULES_FILE.read_text())
    data["rules"][first.key]["criteria"][0]["verified"] = moved.verified
    copy.write_text(json.dumps(data))
    assert any("fingerprint" in p for p in ledger.check_rules(edited, copy))
    # recorded with a reason: it passes, and the history says what moved and why
    shutil.copy(RULES_FILE, copy)
    with pytest.raises(ValueError, match=names("reason")):
        ledger.write_rules("", edited, copy)
    assert ledger.write_rules("a test: the threshold doubles", edited, copy, today="2026-01-02") == [first.key]
    assert ledger.check_rules(edited, copy) == []
    last = ledger.rule_history(first.key, copy)[-1]
    assert last["date"] == "2026-01-02" and last["reason"] == "a test: the threshold doubles"
    assert f"{c.name}: verified {c.verified!r} -> {moved.verified!r}" in last["change"]
    # a rule the code no longer has is retired, with a reason, never silently dropped
    assert ledger.write_rules({edited[1].key: "gone"}, [edited[0], *edited[2:]], copy) == [edited[1].key]
    assert json.loads(copy.read_text())["rules"][edited[1].key]["retired"] is True


def test_a_review_of_an_unchanged_rule_is_recorded_in_its_history(tmp_path: Path) -> None:
    """A per-rule reason for a rule that did not change (issue 26: which cuts it depends on, and why) is kept as a
    "reviewed, unchanged" entry with the rule's fingerprint; the lock still equals the code."""
    rules = all_rules()
    copy = tmp_path / "rules.json"
    shutil.copy(RULES_FILE, copy)
    key = rules[0].key
    assert ledger.write_rules({key: "no cut of its protocol can hide the effect"}, rules, copy) == [key]
    last = ledger.rule_history(key, copy)[-1]
    assert last["change"] == "reviewed, unchanged" and last["fingerprint"] == rules[0].fingerprint()
    assert ledger.check_rules(rules, copy) == []
    assert ledger.write_rules("one text reviews nothing", rules, copy) == []


def test_cli_rules_check_exits_1_on_a_changed_rule(tmp_path: Path, capsys) -> None:
    assert main(["rules", "--check"]) == 0
    copy = tmp_path / "rules.json"
    data = json.loads(RULES_FILE.read_text())
    key = next(iter(data["rules"]))
    data["rules"][key]["criteria"][0]["verified"] = 12345.0
    copy.write_text(json.dumps(data))
    assert main(["rules", "--check", "--file", str(copy)]) == 1
    assert f"DIFFERS: {key}" in capsys.readouterr().out



def _record(claim: str, err: float) -> None:
    rule = Rule(claim, "derivation", Err, (at_most("err", "error", 1e-10, 1e-6),), "errors of order one")
    claims.record(rule.judge(Err(err), Cfg()))


def test_the_verdict_lock_catches_one_altered_verdict(tmp_path: Path, capsys) -> None:
    _record("C1", 0.0)
    _record("C2", 1e-8)
    lock = tmp_path / "verdicts-book.json"
    assert ledger.write_lock("first lock", lock, today="2026-01-01") != []
    assert ledger.check_lock(lock) == [] and main(["claims", "--check-lock", "--lock", str(lock)]) == 0
    data = json.loads(lock.read_text())
    data["verdicts"]["C1"]["headline"] = "partly verified"  # one verdict altered in the lock
    lock.write_text(json.dumps(data))
    assert ledger.check_lock(lock) == ["C1 headline: locked 'partly verified', now 'verified'"]
    assert main(["claims", "--check-lock", "--lock", str(lock)]) == 1
    assert "CHANGED: C1 headline" in capsys.readouterr().out
    # a new verdict re-locked: the change is kept with its reason
    _record("C2", 0.0)
    assert main(["claims", "--write-lock", "--lock", str(lock), "--reason", "C2 measured again"]) == 0
    changes = json.loads(lock.read_text())["changes"]
    want = {"claim": "C2", "what": "headline", "from": "partly verified", "to": "verified"}
    assert any(want.items() <= c.items() and c["reason"] == "C2 measured again" for c in changes)


def test_a_lock_takes_only_book_profile_verdicts(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SCANSNAP_PROFILE", "smoke")
    _record("C1", 0.0)
    with pytest.raises(ValueError, match=names("profile")):
        ledger.write_lock("smoke run", tmp_path / "lock.json")
    assert main(["claims", "--write-lock", "--reason", "x", "--lock", str(tmp_path / "lock.json")]) == 2
    assert main(["claims", "--check-lock"]) == 2  # against the repository's lock (a missing --lock is refused)
    assert not (tmp_path / "lock.json").exists()


def test_the_repository_lock_is_of_the_book_profile_and_covers_every_claim() -> None:
    data = json.loads(LOCK_FILE.read_text())
    assert data["profile"] == "book"
    assert set(data["verdicts"]) == {c.id for c in claims.CLAIMS}
    assert all(v["headline"] in claims.VERDICTS for v in data["verdicts"].values())
