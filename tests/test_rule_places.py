"""Where a rule lives (issue 27 part 5): in one predictable place.

The convention: a rule is declared in the experiment module whose ``RULES`` lists it, next to the measures
dataclass and the verdict function that read it; or, when it is judged on measures shared by several modules (the
phase rules of Chapter 6, the sparsity rules of Chapter 5, P1, the heads and Syn-Medium rules), in the one satellite
module that defines those measures (``*_rules.py``, ``phase_magnitude.py``), bound there or made there by a factory
(``phase_rule(claim, evidence)``). So a rule is found from its ``RULES`` list or from its measures class."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys

import scansnap.experiments as experiments
from scansnap.verdicts import Rule


def _modules() -> dict[str, object]:
    return {m.name: importlib.import_module(f"{experiments.__name__}.{m.name}")
            for m in pkgutil.iter_modules(experiments.__path__)}


def _bound(module: object) -> list[Rule]:
    """The rules a module binds: globals, and the values of global dicts, lists and tuples."""
    out: list[Rule] = []
    for value in vars(module).values():
        items = value.values() if isinstance(value, dict) else value if isinstance(value, list | tuple) else [value]
        out += [r for r in items if isinstance(r, Rule)]
    return out


def _made_by_factory(rule: Rule, module: object) -> bool:
    """``rule`` equals what a ``*_rule`` function of ``module`` makes for its claim and kind of evidence."""
    for name, fn in vars(module).items():
        if not (name.endswith("_rule") and inspect.isfunction(fn) and fn.__module__ == module.__name__):
            continue
        n = len(inspect.signature(fn).parameters)
        for args in ((rule.claim, rule.evidence), (rule.evidence,)):
            if len(args) == n:
                try:
                    if fn(*args) == rule:
                        return True
                except ValueError:
                    pass
    return False


def test_every_rule_lives_where_it_is_listed_or_with_its_measures() -> None:
    misplaced = []
    for name, module in _modules().items():
        for rule in getattr(module, "RULES", []):
            home = sys.modules[rule.measures.__module__]
            here = any(r is rule for r in _bound(module)) or _made_by_factory(rule, module)
            with_measures = any(r is rule for r in _bound(home)) or _made_by_factory(rule, home)
            if not (here or with_measures):
                misplaced.append(f"{rule.claim}/{rule.evidence} listed in {name}, measures in {home.__name__}")
    assert not misplaced, misplaced

