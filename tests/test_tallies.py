"""scansnap.tallies: two tallies per claim set, never one count that mixes the theory's model with training."""

from __future__ import annotations

import pytest
from conftest import names
from verdict_fixtures import Cfg, Err

from scansnap import claims, tallies
from scansnap.verdicts import Rule, at_most


def _v(claim: str, evidence: str, err: float):
    rule = Rule(claim, evidence, Err, (at_most("err", "error", 1e-10, 1e-6),), "errors at the scale of the numbers")
    control = Err(1.0) if evidence not in ("derivation", "simulation") else None
    return rule.judge(Err(err), Cfg(), control=control)


def test_a_theory_claim_counts_in_both_tallies_apart_and_a_training_claim_only_in_training() -> None:
    c24, c38 = claims.get("C24"), claims.get("C38")
    found = [_v("C24", "derivation", 0.0), _v("C24", "simulation", 1e-8), _v("C24", "training-population", 1.0)]
    assert tallies.two_levels(c24, found) == {"model": "partly verified", "training": "not reproduced"}
    assert tallies.two_levels(c38, [_v("C38", "training-sampled", 0.0)]) == {"training": "verified"}
    assert tallies.two_levels(c38, []) == {}
    with pytest.raises(ValueError, match=names("lens")):
        tallies.lens_level(c24, found, "headline")


def test_tallies_count_each_set_through_each_lens() -> None:
    entries = [(claims.get("C24"), [_v("C24", "derivation", 0.0), _v("C24", "training-population", 1.0)]),
               (claims.get("C25"), [_v("C25", "derivation", 0.0)]),
               (claims.get("C38"), [_v("C38", "training-sampled", 1e-8)]),
               (claims.get("P1"), [_v("P1", "training-population", 1.0)]),
               (claims.get("X8"), [])]
    got = {(t.claim_set, t.lens): t for t in tallies.tallies(entries)}
    assert set(got) == {(s, lens) for s in tallies.SETS for lens in tallies.LENSES}
    model, trained = got[("paper", "model")], got[("paper", "training")]
    assert model.counts["verified"] == 2 and model.judged == 2 and model.claims["verified"] == ("C24", "C25")
    assert trained.counts == {"verified": 0, "partly verified": 1, "inconclusive": 0, "not reproduced": 1}
    assert trained.size == 3 and trained.words() == "1 partly verified, 1 not reproduced of the 2 judged"
    assert got[("central", "training")].claims["not reproduced"] == ("P1",)
    assert got[("central", "model")].judged == 0 and got[("book", "training")].words() == "none judged"
    page = tallies.tally_html(tallies.tallies(entries))
    assert page.count("<tr>") == 1 + len(tallies.SETS) and "holds in the theory&#x27;s model" in page


def test_the_central_claims_are_a_set_of_their_own() -> None:
    assert [tallies.claim_set(c) for c in claims.CENTRAL] == ["central"] * len(claims.CENTRAL)
    assert tallies.claim_set(claims.get("C1")) == "paper" and tallies.claim_set(claims.get("X1")) == "book"
