"""Pre-registration made mechanical: the locked rules (``ledger/rules.json``) and the locked verdicts of the
``book`` profile (``ledger/verdicts-book.json``).

**Rules.** ``ledger/rules.json`` holds every rule of the library (:func:`scansnap.experiments.all_rules`) as
data (:meth:`scansnap.verdicts.Rule.spec`: claim, evidence kind, criteria with thresholds, alternative,
control, premise) with a ``history`` of ``{date, commit, change, reason, fingerprint}`` entries.
:func:`check_rules` (run by the tests) fails when a rule in the code differs from the file, or when a rule's
last history entry does not carry its current fingerprint: a threshold cannot move without a dated entry
saying why. ``python -m scansnap rules --write --reason "..."`` records a change (it refuses without a
reason).

**Verdicts.** ``ledger/verdicts-book.json`` holds the headline and every per-evidence level of each claim as
the ``book`` profile's build recorded them, and a ``changes`` list (each re-lock appends what moved, from
what to what). ``python -m scansnap claims --check-lock`` (run by CI after the strict build) exits 1 and
lists every claim whose verdict differs from the lock, so a change of verdict always shows as a diff of
this file, in the commit that explains it. Verdicts recorded under another profile never touch the lock.
"""

from __future__ import annotations

import json
from datetime import date as _date
from pathlib import Path
from typing import Any

from scansnap import claims, experiments, provenance
from scansnap._io import atomic_write, dump_json, source_checkout
from scansnap.verdicts import Rule

__all__ = [
    "LOCK_PROFILE",
    "check_lock",
    "changes_markdown",
    "check_rules",
    "ledger_folder",
    "lock_state",
    "read_lock",
    "read_rules",
    "rule_history",
    "write_lock",
    "write_rules",
]

LOCK_PROFILE = "book"
"""The profile whose verdicts are locked."""


def ledger_folder() -> Path:
    """``<checkout>/ledger``: where the locks live (the book's source checkout; an installed package has none)."""
    root = source_checkout()
    if root is None:
        raise FileNotFoundError("ledger: the locks live in the book's source checkout (ledger/); this scansnap "
                                "is an installed package without one: pass a path")
    return root / "ledger"


def _rules_path(path: Path | None) -> Path:
    return ledger_folder() / "rules.json" if path is None else Path(path)


def _lock_path(path: Path | None) -> Path:
    return ledger_folder() / f"verdicts-{LOCK_PROFILE}.json" if path is None else Path(path)


def _head() -> str:
    """The checkout's commit, 12 hex digits (``"unknown"`` outside a git checkout)."""
    return provenance.checkout().head[:12]


def read_rules(path: Path | None = None) -> dict[str, dict[str, Any]]:
    """The locked rules, by key ``<claim>/<evidence>`` (empty when the file does not exist)."""
    path = _rules_path(path)
    return json.loads(path.read_text())["rules"] if path.exists() else {}


def _spec_of(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if k != "history"}


def check_rules(rules: list[Rule] | None = None, path: Path | None = None) -> list[str]:
    """Every way the rules in the code and ``ledger/rules.json`` disagree (empty: they agree), one line each:
    a rule missing from the file or from the code, a rule whose spec differs, a history entry without a date,
    change or reason, and, for a rule whose spec agrees, a last history entry that does not carry its fingerprint
    (the file was edited by hand without ``rules --write``)."""
    rules = experiments.all_rules() if rules is None else rules
    locked = read_rules(path)
    problems = []
    code = {r.key: r for r in rules}
    for key in sorted(set(locked) - set(code)):
        if not locked[key].get("retired"):
            problems.append(f"{key}: in {_rules_path(path).name} but not in the code (retire it with rules --write)")
    for key, rule in sorted(code.items()):
        if key not in locked:
            problems.append(f"{key}: a rule of the code that is not locked (rules --write --reason ...)")
            continue
        entry = locked[key]
        if _spec_of(entry) != rule.spec():
            changed = sorted(k for k in rule.spec() if rule.spec()[k] != entry.get(k))
            problems.append(f"{key}: differs from the lock in {', '.join(changed)} (a change needs rules --write "
                            "--reason ...)")
        history = entry.get("history", [])
        for i, h in enumerate(history):
            if not all(str(h.get(k, "")).strip() for k in ("date", "change", "reason", "fingerprint")):
                problems.append(f"{key}: history entry {i} lacks a date, change, reason or fingerprint")
        if _spec_of(entry) == rule.spec() and (not history or history[-1].get("fingerprint") != rule.fingerprint()):
            problems.append(f"{key}: the last history entry does not carry the rule's fingerprint "
                            f"{rule.fingerprint()} (the lock was edited by hand?)")
    return problems


def _describe(old: dict[str, Any] | None, new: dict[str, Any]) -> str:
    if old is None:
        return "locked: " + "; ".join(f"{c['name']} {c['op']} {c['verified']:g}"
                                      + (f" (partly {c['partly']:g})" if c["partly"] is not None else "")
                                      for c in new["criteria"])
    parts = []
    before = {c["name"]: c for c in old.get("criteria", [])}
    after = {c["name"]: c for c in new["criteria"]}
    for name in sorted(set(before) | set(after)):
        b, a = before.get(name), after.get(name)
        if b == a:
            continue
        if b is None:
            parts.append(f"criterion {name} added ({a['op']} {a['verified']:g}, partly {a['partly']})")
        elif a is None:
            parts.append(f"criterion {name} removed")
        else:
            parts.append(f"{name}: " + ", ".join(f"{k} {b.get(k)!r} -> {a.get(k)!r}" for k in a if b.get(k) != a[k]))
    for k in ("measures", "alternative", "control", "premise", "note"):
        if old.get(k) != new.get(k):
            parts.append(f"{k} rewritten")
    return "; ".join(parts) or "unchanged"


def write_rules(reason: str | dict[str, str], rules: list[Rule] | None = None, path: Path | None = None,
                today: str | None = None) -> list[str]:
    """Write the rules of the code into ``ledger/rules.json``, appending a history entry to each rule that is
    new or changed (and retiring rules the code no longer has). Returns the keys written anew.

    Args:
        reason: why (non-empty), one text for every change or one per rule key (every changed key needs one). A
            per-key reason for a rule that did not change records a review: a history entry "reviewed, unchanged"
            with that reason (e.g. why no cut of its run's protocol can hide its effect).
        rules: default :func:`scansnap.experiments.all_rules`.
        path: default ``<checkout>/ledger/rules.json``.
        today: the date of the entries (ISO; default today).
    """
    rules = experiments.all_rules() if rules is None else rules
    path = _rules_path(path)
    locked = read_rules(path)
    today = today or _date.today().isoformat()
    commit = _head()
    changed = []
    out: dict[str, dict[str, Any]] = {}
    for rule in rules:
        spec, entry = rule.spec(), locked.get(rule.key)
        history = list(entry.get("history", [])) if entry else []
        if entry is None or _spec_of(entry) != spec or not history or history[-1]["fingerprint"] != rule.fingerprint():
            why = reason.get(rule.key, "") if isinstance(reason, dict) else reason
            if not why.strip():
                raise ValueError(f"reason: the rule {rule.key} is new or changed; say why it changed")
            history.append({"date": today, "commit": commit, "change": _describe(_spec_of(entry) if entry else None,
                                                                                    spec),
                            "reason": why.strip(), "fingerprint": rule.fingerprint()})
            changed.append(rule.key)
        elif isinstance(reason, dict) and str(reason.get(rule.key, "")).strip():
            history.append({"date": today, "commit": commit, "change": "reviewed, unchanged",
                            "reason": reason[rule.key].strip(), "fingerprint": rule.fingerprint()})
            changed.append(rule.key)
        out[rule.key] = {**spec, "history": history}
    for key, entry in locked.items():
        if key not in out:
            history = list(entry.get("history", []))
            if not entry.get("retired"):
                why = reason.get(key, "") if isinstance(reason, dict) else reason
                if not why.strip():
                    raise ValueError(f"reason: the rule {key} is no longer in the code; say why it was retired")
                history.append({"date": today, "commit": commit, "change": "retired", "reason": why.strip(),
                                "fingerprint": "retired"})
                changed.append(key)
            out[key] = {**entry, "retired": True, "history": history}
    atomic_write(path, dump_json({"about": "Every verdict rule of scansnap, locked; see scansnap.ledger.",
                                  "rules": dict(sorted(out.items()))}))
    return changed


def rule_history(key: str, path: Path | None = None) -> list[dict[str, Any]]:
    """The history of the rule ``<claim>/<evidence>`` (empty when it is not locked)."""
    return list(read_rules(path).get(key, {}).get("history", []))


def lock_state() -> dict[str, dict[str, Any]]:
    """The verdicts recorded now (the artifacts of a build), per claim: its headline and each evidence kind's
    level. Raises when a recorded verdict was made under a profile other than :data:`LOCK_PROFILE`."""
    state = {}
    for c, head, found in claims.ledger():
        wrong = [v for v in found if v.profile != LOCK_PROFILE]
        if wrong:
            raise ValueError(f"profile: the verdicts of {c.id} were recorded under profile {wrong[0].profile!r}; "
                             f"only a {LOCK_PROFILE!r} build is locked")
        state[c.id] = {"headline": str(head), "evidence": {v.evidence: str(v.level) for v in found}}
    return state


def read_lock(path: Path | None = None) -> dict[str, Any]:
    """The locked verdicts file (``{"profile", "verdicts", "changes"}``); empty verdicts when it does not exist."""
    path = _lock_path(path)
    return json.loads(path.read_text()) if path.exists() else {"profile": LOCK_PROFILE, "verdicts": {}, "changes": []}


def _differences(old: dict[str, Any], new: dict[str, Any]) -> list[dict[str, str]]:
    out = []
    for cid in sorted(set(old) | set(new), key=_claim_order):
        o, n = old.get(cid, {}), new.get(cid, {})
        if o.get("headline") != n.get("headline"):
            out.append({"claim": cid, "what": "headline", "from": o.get("headline", "absent"),
                        "to": n.get("headline", "absent")})
        oe, ne = o.get("evidence", {}), n.get("evidence", {})
        for kind in sorted(set(oe) | set(ne)):
            if oe.get(kind) != ne.get(kind):
                out.append({"claim": cid, "what": kind, "from": oe.get(kind, "absent"), "to": ne.get(kind, "absent")})
    return out


def _claim_order(cid: str) -> tuple[int, str]:
    ids = [c.id for c in claims.CLAIMS]
    return (ids.index(cid), cid) if cid in ids else (len(ids), cid)


def check_lock(path: Path | None = None) -> list[str]:
    """Every difference between the verdicts recorded now and the lock, one line each (empty: they agree)."""
    diffs = _differences(read_lock(path)["verdicts"], lock_state())
    return [f"{d['claim']} {d['what']}: locked {d['from']!r}, now {d['to']!r}" for d in diffs]


def write_lock(reason: str, path: Path | None = None, today: str | None = None) -> list[dict[str, str]]:
    """Lock the verdicts recorded now; append what changed since the last lock (with ``reason``) to its
    ``changes``. Returns those changes."""
    if not reason.strip():
        raise ValueError("reason: say why the verdicts changed (it is kept with the lock)")
    path = _lock_path(path)
    lock = read_lock(path)
    new = lock_state()
    diffs = _differences(lock["verdicts"], new)
    stamp = {"date": today or _date.today().isoformat(), "commit": _head(), "reason": reason.strip()}
    changes = list(lock.get("changes", [])) + [{**d, **stamp} for d in diffs]
    atomic_write(path, dump_json({"about": "The book profile's verdicts, locked; see scansnap.ledger.",
                                  "profile": LOCK_PROFILE, "verdicts": new, "changes": changes}))
    return diffs


def changes_markdown(lock_path: Path | None = None) -> str:
    """The verdicts that changed at the last lock of ``ledger/verdicts-book.json`` (or ``lock_path``), as a
    markdown paragraph and list with the lock's date, commit and reason ("" when nothing changed or there is no
    lock)."""
    try:
        changes = read_lock(lock_path).get("changes", [])
    except FileNotFoundError:
        return ""
    if not changes:
        return ""
    last = (changes[-1]["date"], changes[-1]["commit"])
    recent = [c for c in changes if (c["date"], c["commit"]) == last]
    one = len({c["reason"] for c in recent}) == 1
    lines = [f"**Verdicts changed at the last lock** ({last[0]}, on commit `{last[1]}`)"
             + (f": {recent[0]['reason']}" if one else ""), ""]
    lines += [f"- {c['claim']} ({c['what']}): {c['from']} → {c['to']}" + ("" if one else f": {c['reason']}")
              for c in recent]
    return "\n".join(lines) + "\n\n"
