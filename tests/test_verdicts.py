"""scansnap.verdicts: criteria, rules on typed measures, controls and protocol gates, and every rule of the
library made to pass, partly pass, fail, and be undone by its control or a reduced protocol."""

from __future__ import annotations

import dataclasses
import math
import typing
from dataclasses import dataclass
from typing import ClassVar

import pytest
from conftest import names

from scansnap import claims
from scansnap.experiments import all_rules
from scansnap.results import Config
from scansnap.verdicts import (
    EVIDENCE,
    LEVELS,
    TRAINING_KINDS,
    Criterion,
    Outcome,
    Rule,
    Verdict,
    at_least,
    at_most,
    worst,
)

RULES = all_rules()
IDS = [r.key for r in RULES]


@dataclass(frozen=True)
class Full(Config):
    """A run at the paper's protocol (nothing gated)."""

    steps: int = 100

    def protocol(self) -> str:
        return f"{self.steps} steps"


@dataclass(frozen=True)
class Gated(Config):
    """A run whose ``steps`` the paper's protocol sets a minimum on."""

    steps: int = 100
    vocab: int | None = None
    GATED: ClassVar[tuple[str, ...]] = ("steps", "vocab")
    PRESETS = {"smoke": dict(steps=10, vocab=50)}


def _value(c: Criterion, score: int) -> float:
    """A number that gives criterion ``c`` the score ``score`` (2 verified, 1 partly, 0 fail)."""
    sign = 1.0 if c.op == ">=" else -1.0
    if score == 2:
        return c.verified
    if score == 1:
        return c.partly
    edge = c.partly if c.partly is not None else c.verified
    return edge - sign * max(abs(edge) * 0.5, 1e-3)


def _measures(rule: Rule, scores: dict[str, int] | int = 2):
    """An instance of the rule's measures: each criterion at the given score, every other field 1."""
    hints = typing.get_type_hints(rule.measures)
    values = {}
    for f in dataclasses.fields(rule.measures):
        values[f.name] = 1 if hints[f.name] is int else 1.0
    for c in rule.criteria:
        s = scores if isinstance(scores, int) else scores.get(c.name, 2)
        value = _value(c, s)
        values[c.name] = int(round(value)) if hints[c.name] is int and value == int(value) else value
        if hints[c.name] is int and value != int(value):
            values[c.name] = math.floor(value) if c.op == ">=" else math.ceil(value)
    return rule.measures(**values)


def _full(rule: Rule) -> Config:
    """A run at the paper's protocol that gates every field the rule depends on (none cut)."""
    if not rule.depends_on:
        return Full()
    extra = [(n, int, dataclasses.field(default=1)) for n in rule.depends_on if n != "steps"]
    cls = dataclasses.make_dataclass("FullFor" + rule.claim, extra, bases=(Full,), frozen=True,
                                     namespace={"GATED": tuple(rule.depends_on)})
    return cls()


def _judge(rule: Rule, measures, control=None, config=None, too_small: str = ""):
    config = _full(rule) if config is None else config
    if rule.evidence in TRAINING_KINDS and control is None:
        control = _measures(rule, 0)
    return rule.judge(measures, config, control=control, too_small=too_small)


@pytest.mark.parametrize("rule", RULES, ids=IDS)
def test_every_rule_passes_partly_passes_and_fails(rule: Rule) -> None:
    """Measures at every verified threshold verify; one at its partly threshold gives partly verified;
    a required one below its partly threshold (or every one below) gives not reproduced (with a failing control
    and at the paper's protocol)."""
    claims.get(rule.claim)  # the claim exists
    assert _judge(rule, _measures(rule)).level == "verified"
    for c in rule.criteria:
        if c.partly is not None:
            assert _judge(rule, _measures(rule, {c.name: 1})).level == "partly verified", c.name
        failing = _judge(rule, _measures(rule, {c.name: 0})).level
        if c.required or len(rule.criteria) == 1:
            assert failing == "not reproduced", c.name
        else:
            assert failing == "partly verified", c.name
    assert _judge(rule, _measures(rule, 0)).level == "not reproduced"


@pytest.mark.parametrize("rule", [r for r in RULES if r.evidence in TRAINING_KINDS],
                         ids=[r.key for r in RULES if r.evidence in TRAINING_KINDS])
def test_every_training_rule_is_judged_on_its_control(rule: Rule) -> None:
    """A control that reaches the same level makes the verdict inconclusive; a failing control leaves it; the
    verdict carries the control's numbers and level; a rule on training evidence cannot be judged without it."""
    v = _judge(rule, _measures(rule), control=_measures(rule))
    assert (v.level, v.reason, v.control_level) == ("inconclusive", "the control passes too", "verified")
    assert v.criteria_level == "verified" and "(the criteria alone: verified)" in v.summary()
    assert set(v.control) == {f.name for f in dataclasses.fields(rule.measures)}
    weaker = [c for c in rule.criteria if c.partly is not None]
    if weaker:
        partly = _measures(rule, {weaker[0].name: 1})
        assert _judge(rule, partly, control=partly).level == "inconclusive"  # same level: inconclusive
        assert _judge(rule, partly, control=_measures(rule)).level == "inconclusive"  # control better
    ok = _judge(rule, _measures(rule), control=_measures(rule, 0))
    assert (ok.level, ok.control_level, ok.reason, ok.criteria_level) == ("verified", "not reproduced", "", "")
    with pytest.raises(ValueError, match=names("control")):
        rule.judge(_measures(rule), Full())
    assert rule.control.strip() and "Control:" in rule.text()


@pytest.mark.parametrize("rule", [r for r in RULES if r.evidence in TRAINING_KINDS],
                         ids=[r.key for r in RULES if r.evidence in TRAINING_KINDS])
def test_every_training_rule_labels_a_reduced_protocol_in_both_directions(rule: Rule) -> None:
    """Below the paper's protocol a pass and a fail alike keep their level and carry the cuts: "not reproduced
    (reduced protocol: ...)" as "verified (reduced protocol: ...)" (a gate that lets a cut run confirm but never
    refute is a bias)."""
    reduced = Gated.preset("smoke")
    assert reduced.shortfall() == ("steps 10 (paper profile: 100)", "vocab 50 (paper profile: no limit)")
    assert [(c.field, c.value, c.paper) for c in reduced.cuts()] == [("steps", 10, 100), ("vocab", 50, None)]
    plain = dataclasses.replace(rule, depends_on={})
    failing = _judge(plain, _measures(rule, 0), config=reduced)
    assert (failing.level, failing.reason) == ("not reproduced", "")
    assert failing.label().startswith("not reproduced (reduced protocol: steps 10")
    passing = _judge(plain, _measures(rule), config=reduced)
    assert passing.level == "verified" and passing.label().startswith("verified (reduced protocol: steps 10")
    assert failing.reduced == passing.reduced == reduced.shortfall()
    assert _judge(plain, _measures(rule, 0), config=Gated()).label() == "not reproduced"


@pytest.mark.parametrize("rule", [r for r in RULES if r.evidence in TRAINING_KINDS],
                         ids=[r.key for r in RULES if r.evidence in TRAINING_KINDS])
def test_a_cut_the_rule_depends_on_makes_a_pass_and_a_fail_inconclusive(rule: Rule) -> None:
    """A cut the rule names in ``depends_on`` (before the run, with why) makes the verdict inconclusive whichever way
    the criteria go; a cut it does not name only labels; a name that is not a gated field is refused."""
    needs = dataclasses.replace(rule, depends_on={"steps": "the effect needs the paper's horizon"})
    reduced = Gated.preset("smoke")
    for scores in (2, 0):
        v = _judge(needs, _measures(rule, scores), config=reduced)
        assert v.level == "inconclusive" and v.reason.startswith("reduced protocol: steps 10"), scores
        assert "the effect needs the paper's horizon" in v.reason
    assert _judge(needs, _measures(rule), config=Gated()).level == "verified"
    assert _judge(needs, _measures(rule, 0), config=Gated()).level == "not reproduced"
    other = dataclasses.replace(rule, depends_on={"vocab": "why"})
    assert _judge(other, _measures(rule), config=Gated(steps=10)).label().startswith("verified (reduced protocol")
    with pytest.raises(ValueError, match=names("depends_on")):
        _judge(dataclasses.replace(rule, depends_on={"nope": "why"}), _measures(rule), config=reduced)
    for name in rule.depends_on:  # the library's own: said with a reason
        assert rule.depends_on[name].strip() and name in rule.text()


@pytest.mark.parametrize("rule", [r for r in RULES if r.evidence in TRAINING_KINDS],
                         ids=[r.key for r in RULES if r.evidence in TRAINING_KINDS])
def test_a_control_that_is_zero_or_nan_by_construction_is_refused(rule: Rule) -> None:
    """A control whose every criterion is 0, nan or infinite measured nothing: judging on it fails, for every
    training and real-data rule (so no such control can reach a page)."""
    hints = typing.get_type_hints(rule.measures)
    for fill in (0.0, math.nan):
        values = {f.name: (1 if hints[f.name] is int else 1.0) for f in dataclasses.fields(rule.measures)}
        for c in rule.criteria:  # 0 where 0 fails the criterion, else nan (an int cannot be nan: 0)
            values[c.name] = 0 if hints[c.name] is int or (fill == 0 and c.score(0) == 0) else math.nan
        if any(hints[c.name] is int and c.score(0) > 0 for c in rule.criteria):
            continue  # an int criterion that 0 passes: such a control passes, it is not empty
        with pytest.raises(ValueError, match=names("control")):
            _judge(rule, _measures(rule), control=rule.measures(**values))


def test_an_effect_too_small_to_see_makes_any_training_verdict_inconclusive() -> None:
    """A rule that passes, and one that fails, on a run whose effect never happened are both inconclusive, with the
    stated reason (it is not a miss either); the gate needs training evidence."""
    rule = next(r for r in RULES if r.evidence in TRAINING_KINDS)
    for measures in (_measures(rule), _measures(rule, 0)):
        v = _judge(rule, measures, control=_measures(rule, 0), too_small="ln chi 0.02 < 1")
        assert (v.level, v.reason) == ("inconclusive", "effect too small to judge: ln chi 0.02 < 1")
    assert _judge(rule, _measures(rule), control=_measures(rule, 0), too_small=" ").level == "verified"
    theory_rule = next(r for r in RULES if r.evidence not in TRAINING_KINDS)
    with pytest.raises(ValueError, match=names("too_small")):
        theory_rule.judge(_measures(theory_rule), Full(), too_small="tiny")


@pytest.mark.parametrize("rule", [r for r in RULES if r.evidence not in TRAINING_KINDS],
                         ids=[r.key for r in RULES if r.evidence not in TRAINING_KINDS])
def test_derivation_and_simulation_rules_take_no_control(rule: Rule) -> None:
    assert not rule.control
    with pytest.raises(ValueError, match=names("control")):
        rule.judge(_measures(rule), Full(), control=_measures(rule))


@pytest.mark.parametrize("rule", RULES, ids=IDS)
def test_every_rule_states_itself_names_its_alternative_and_reads_typed_measures(rule: Rule) -> None:
    text = rule.text()
    for c in rule.criteria:
        assert c.meaning in text and f"{c.verified:g}" in text
    assert rule.alternative.strip() and f"Rules out: {rule.alternative}" in text
    hints = typing.get_type_hints(rule.measures)
    assert all(hints[f.name] in (int, float) for f in dataclasses.fields(rule.measures)), rule.measures
    if rule.evidence in TRAINING_KINDS and claims.get(rule.claim).kind == "theory":
        assert rule.premise.strip(), f"{rule.key}: training evidence on a theory claim names the premise it tests"


def test_rules_per_claim_and_evidence_are_unique() -> None:
    assert len(IDS) == len(set(IDS)) and len(RULES) >= 60


def test_every_claim_of_the_paper_has_a_deciding_rule() -> None:
    """A theory claim has a derivation or simulation rule, an experiment claim a training or real-data one."""
    for c in claims.CLAIMS:
        kinds = {r.evidence for r in RULES if r.claim == c.id}
        assert kinds & set(claims.admissible(c.id)), f"{c.id}: no rule on {claims.admissible(c.id)}"


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


@pytest.mark.parametrize("bad", [math.nan, -math.inf, "0.5", True])
def test_criterion_rejects_a_threshold_that_is_not_a_finite_number(bad) -> None:
    with pytest.raises(ValueError, match=r"^share: the verified threshold must be a finite number"):
        at_least("share", "share of rows", bad)
    with pytest.raises(ValueError, match=r"^share: the partly threshold must be a finite number"):
        at_least("share", "share of rows", 0.9, bad)


@dataclass(frozen=True)
class AB:
    """Two test measures."""

    a: float
    b: float


def test_rule_combines_required_and_optional_criteria() -> None:
    rule = Rule("C38", "training-sampled", AB, (at_least("a", "a", 1.0, 0.5), at_least("b", "b", 1.0, 0.5,
                                                                                        required=False)), "no effect")
    assert rule.level(AB(1.0, 1.0)) == "verified"
    assert rule.level(AB(1.0, 0.0)) == "partly verified"  # optional part fails
    assert rule.level(AB(0.0, 1.0)) == "not reproduced"  # required part fails
    assert rule.level(AB(0.6, 1.0)) == "partly verified"


def test_rule_is_checked_against_its_measures_when_made() -> None:
    with pytest.raises(ValueError, match=names("criteria")):
        Rule("C1", "derivation", AB, (at_most("c", "c", 1e-10),), "wrong")  # no field c
    with pytest.raises(ValueError, match=names("measures")):
        Rule("C1", "derivation", dict, (at_most("a", "a", 1e-10),), "wrong")
    with pytest.raises(ValueError, match=names("alternative")):
        Rule("C1", "derivation", AB, (at_most("a", "a", 1e-10),), " ")
    with pytest.raises(ValueError, match=names("evidence")):
        Rule("C1", "hearsay", AB, (at_most("a", "a", 1e-10),), "wrong")
    with pytest.raises(ValueError, match=names("control")):
        Rule("C1", "derivation", AB, (at_most("a", "a", 1e-10),), "wrong", control="step 0")


def test_rule_rejects_other_measures_and_non_numbers() -> None:
    rule = Rule("C1", "derivation", AB, (at_most("a", "error", 1e-10),), "wrong")
    with pytest.raises(ValueError, match=names("measures")):
        rule.judge(Full(), Full())
    with pytest.raises(ValueError, match=r"^measures\.a:"):
        rule.judge(AB("small", 0.0), Full())


def test_judge_refuses_a_configuration_that_is_not_one() -> None:
    rule = Rule("C1", "derivation", AB, (at_most("a", "error", 1e-10),), "wrong")
    with pytest.raises(ValueError, match=r"^config: the rule for C1 is judged .* got dict"):
        rule.judge(AB(0.0, 0.0), {"steps": 100})


def test_judge_returns_a_verdict_with_rule_numbers_and_protocol() -> None:
    rule = Rule("C1", "derivation", AB, (at_most("a", "max error", 1e-10, 1e-6),), "a wrong closed form",
                note="a note")
    v = rule.judge(AB(3e-8, 200), Full(), scope="plain", link="book/chapters/x.html#a")
    assert isinstance(v, Verdict)
    assert (v.claim, v.level, v.evidence, v.protocol) == ("C1", "partly verified", "derivation", "100 steps; plain")
    assert v.numbers == {"a": 3e-8, "b": 200.0} and "max error <= 1e-10" in v.rule and "a note" in v.rule
    assert "Rules out: a wrong closed form" in v.rule
    assert v.summary() == "a = 3.0e-08; b = 200"


def test_fingerprint_follows_every_threshold() -> None:
    a = Rule("C1", "derivation", AB, (at_most("a", "error", 1e-10, 1e-6),), "wrong")
    b = Rule("C1", "derivation", AB, (at_most("a", "error", 1e-10, 1e-5),), "wrong")
    assert a.fingerprint() != b.fingerprint() and a.fingerprint() == dataclasses.replace(a).fingerprint()


def test_worst_orders_inconclusive_between_partly_and_not_reproduced() -> None:
    assert LEVELS == ("verified", "partly verified", "inconclusive", "not reproduced")
    assert worst(["verified", "partly verified"]) == "partly verified"
    assert worst(["verified", "inconclusive"]) == "inconclusive"
    assert worst(["inconclusive", "not reproduced"]) == "not reproduced"
    with pytest.raises(ValueError, match=names("levels")):
        worst([])


def test_evidence_kinds() -> None:
    assert set(TRAINING_KINDS) < set(EVIDENCE)


def test_an_inconclusive_verdict_keeps_what_its_criteria_alone_gave() -> None:
    """The run's own level survives the outcome that undecides it (a reader of "inconclusive" sees which way the
    numbers pointed), once: undeciding it again keeps the criteria's level; only an inconclusive verdict has one."""
    decided = Verdict("C1", "partly verified", "derivation", "rule")
    once = decided.undecided(Outcome.TOO_SMALL, "no scan")
    assert (once.level, once.criteria_level) == ("inconclusive", "partly verified")
    assert once.undecided(Outcome.CONTROL_PASSES).criteria_level == "partly verified"
    for level, criteria in (("verified", "verified"), ("inconclusive", "inconclusive"), ("inconclusive", "great")):
        with pytest.raises(ValueError, match="criteria_level"):
            Verdict("C1", level, "derivation", "rule", criteria_level=criteria,
                    **({"outcome": Outcome.TOO_SMALL, "reason": "too small"} if level == "inconclusive" else {}))
