"""scansnap.verdicts: criteria, rules, and every rule of the library made to pass, partly pass and fail."""

from __future__ import annotations

import math

import pytest
from conftest import names

from scansnap import claims
from scansnap.verdicts import EVIDENCE, LEVELS, Criterion, Rule, Verdict, all_rules, at_least, at_most, worst

RULES = all_rules()


def _value(c: Criterion, score: int) -> float:
    """A number that gives criterion ``c`` the score ``score`` (2 verified, 1 partly, 0 fail)."""
    sign = 1.0 if c.op == ">=" else -1.0
    if score == 2:
        return c.verified
    if score == 1:
        return c.partly
    edge = c.partly if c.partly is not None else c.verified
    return edge - sign * max(abs(edge) * 0.5, 1e-3)


def _numbers(rule: Rule, scores: dict[str, int]) -> dict[str, float]:
    return {c.name: _value(c, scores.get(c.name, 2)) for c in rule.criteria}


def test_the_library_has_rules() -> None:
    assert len(RULES) >= 3


@pytest.mark.parametrize("rule", RULES, ids=lambda r: f"{r.claim}-{r.evidence}")
def test_every_rule_passes_partly_passes_and_fails(rule: Rule) -> None:
    """Numbers at every verified threshold verify; one number at its partly threshold gives partly verified;
    a required number below its partly threshold (or every number below) gives not reproduced."""
    claims.get(rule.claim)  # the claim exists
    assert rule.evidence in EVIDENCE
    assert rule.level(_numbers(rule, {})) == "verified"
    for c in rule.criteria:
        if c.partly is not None:
            assert rule.level(_numbers(rule, {c.name: 1})) == "partly verified", c.name
        failing = rule.level(_numbers(rule, {c.name: 0}))
        if c.required or len(rule.criteria) == 1:
            assert failing == "not reproduced", c.name
        else:
            assert failing == "partly verified", c.name
    assert rule.level(_numbers(rule, {c.name: 0 for c in rule.criteria})) == "not reproduced"


@pytest.mark.parametrize("rule", RULES, ids=lambda r: f"{r.claim}-{r.evidence}")
def test_every_rule_states_itself_with_its_thresholds(rule: Rule) -> None:
    text = rule.text()
    for c in rule.criteria:
        assert c.meaning in text and f"{c.verified:g}" in text


def test_rules_per_claim_and_evidence_are_unique() -> None:
    keys = [(r.claim, r.evidence) for r in RULES]
    assert len(keys) == len(set(keys))


def test_criterion_scores() -> None:
    c = at_least("share", "share of rows", 1.0, 0.5)
    assert [c.score(v) for v in (1.0, 0.7, 0.5, 0.49, math.nan)] == [2, 1, 1, 0, 0]
    e = at_most("err", "error", 1e-8, 1e-4)
    assert [e.score(v) for v in (0.0, 1e-8, 1e-5, 1e-3)] == [2, 2, 1, 0]
    assert at_most("err", "error", 1e-8).score(1e-5) == 0  # no partial credit


def test_criterion_rejects_thresholds_in_the_wrong_order() -> None:
    with pytest.raises(ValueError, match=names("share")):
        at_least("share", "share of rows", 0.5, 0.9)
    with pytest.raises(ValueError, match=names("err: op")):
        Criterion("err", "error", "==", 1.0)


def test_rule_combines_required_and_optional_criteria() -> None:
    rule = Rule("C38", "training-sampled", (at_least("a", "a", 1.0, 0.5), at_least("b", "b", 1.0, 0.5,
                                                                                    required=False)))
    assert rule.level({"a": 1.0, "b": 1.0}) == "verified"
    assert rule.level({"a": 1.0, "b": 0.0}) == "partly verified"  # optional part fails
    assert rule.level({"a": 0.0, "b": 1.0}) == "not reproduced"  # required part fails
    assert rule.level({"a": 0.6, "b": 1.0}) == "partly verified"


def test_rule_rejects_missing_or_bad_numbers_and_empty_protocol() -> None:
    rule = Rule("C1", "derivation", (at_most("err", "error", 1e-10),))
    with pytest.raises(ValueError, match=names("numbers")):
        rule.level({})
    with pytest.raises(ValueError, match=r"^numbers\['err'\]:"):
        rule.level({"err": "small"})
    with pytest.raises(ValueError, match=names("protocol")):
        rule.judge({"err": 0.0}, protocol=" ")
    with pytest.raises(ValueError, match=names("evidence")):
        Rule("C1", "hearsay", (at_most("err", "error", 1e-10),))


def test_judge_returns_a_verdict_with_rule_numbers_and_protocol() -> None:
    rule = Rule("C1", "derivation", (at_most("err", "max error", 1e-10, 1e-6),), note="a note")
    v = rule.judge({"err": 3e-8, "n": 200}, protocol="200 instances", link="book/chapters/x.html#a")
    assert isinstance(v, Verdict)
    assert (v.claim, v.level, v.evidence) == ("C1", "partly verified", "derivation")
    assert v.numbers == {"err": 3e-8, "n": 200} and "max error <= 1e-10" in v.rule and "a note" in v.rule
    assert v.summary() == "err = 3.0e-08; n = 200"


def test_worst() -> None:
    assert worst(["verified", "partly verified"]) == "partly verified"
    assert worst(["verified"]) == "verified"
    assert worst(list(LEVELS)) == "not reproduced"
    with pytest.raises(ValueError, match=names("levels")):
        worst([])
