"""scansnap.manifest: the one registry of chapters and experiments, and the library agreeing with it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from conftest import names

from scansnap import experiments, manifest, store

ROOT = Path(__file__).resolve().parent.parent


def test_every_declared_module_defines_what_its_entry_says() -> None:
    """Importing each module checks its ``EXPERIMENTS`` and ``RULES`` against the manifest (ids, run function,
    configuration class, figure ids, rule keys)."""
    assert set(experiments.all_experiments()) == set(manifest.entries())
    assert [r.key for r in experiments.all_rules()] == manifest.rule_keys()
    for e in manifest.entries().values():
        exp = experiments.get(e.id)
        assert (exp.run.__name__, exp.config.__name__, tuple(f.id for f in exp.figures)) == (e.run, e.config, e.figures)
        assert exp.chapter == manifest.docname(e.chapter)


def test_no_experiment_or_rule_exists_outside_the_manifest() -> None:
    """Nothing is discovered: a module that defines ``EXPERIMENTS`` is declared, and every rule any module of
    the package defines is one the manifest lists (this test, not the library, walks the package)."""
    import importlib
    import pkgutil

    from scansnap.verdicts import Rule

    declared, keys = {m.name for m in manifest.MODULES}, set(manifest.rule_keys())
    for info in pkgutil.iter_modules(experiments.__path__):
        module = importlib.import_module(f"{manifest.PACKAGE}.{info.name}")
        if hasattr(module, "EXPERIMENTS"):
            assert info.name in declared, f"{info.name} defines EXPERIMENTS but is not in scansnap.manifest"
        for name, value in vars(module).items():
            rules = value if isinstance(value, list | tuple) else [value]
            for rule in (r for r in rules if isinstance(r, Rule)):
                assert rule.key in keys, f"{info.name}.{name}: rule {rule.key} is not in scansnap.manifest"


def test_the_rules_are_the_locked_rules() -> None:
    locked = json.loads((ROOT / "ledger" / "rules.json").read_text())
    assert sorted(manifest.rule_keys()) == sorted(k for k, v in locked["rules"].items() if not v.get("retired"))


def test_stored_entries_are_the_stores() -> None:
    assert sorted(e.id for e in manifest.entries().values() if e.stored) == sorted(
        {eid for eid, _ in store.stored_ids()})


def test_chapters_are_the_tables_chapters() -> None:
    def files(node: object) -> list[str]:
        if isinstance(node, dict):
            return ([node["file"]] if "file" in node else []) + [f for v in node.values() for f in files(v)]
        return [f for v in node for f in files(v)] if isinstance(node, list) else []

    in_toc = [f for f in files(yaml.safe_load((ROOT / "_toc.yml").read_text())) if f.startswith("book/chapters/")]
    assert in_toc == list(manifest.CHAPTERS.values())
    assert all((ROOT / f"{doc}.md").is_file() for doc in manifest.CHAPTERS.values())


def test_lookups_and_their_errors() -> None:
    assert manifest.owner("fig-paper-6").id == "ch7-sweep" and manifest.entry("ch8-freeze").stored
    assert manifest.chapter_of("book/chapters/08-wikitext.md") == 8 == manifest.chapter_of("08-wikitext.html")
    assert manifest.chapter_of("book/claims") is None
    with pytest.raises(ValueError, match=names("experiment id")):
        manifest.entry("ch7-nope")
    with pytest.raises(ValueError, match=names("figure id")):
        manifest.owner("fig-nope")
    with pytest.raises(ValueError, match=names("chapter")):
        manifest.docname(10)


def test_a_module_that_disagrees_with_its_entry_is_refused() -> None:
    real = next(m for m in manifest.MODULES if m.name == "ch07_syn_medium")
    wrong = manifest.Module(real.name, real.chapter, (manifest.Entry("ch7-sweep", "run_sweep", "FineGridConfig",
                                                                     real.experiments[0].figures),), real.rules)
    with pytest.raises(ValueError, match="ch7-sweep"):
        experiments._import(wrong)
    missing = manifest.Module(real.name, real.chapter, real.experiments, real.rules[:-1])
    with pytest.raises(ValueError, match="RULES"):
        experiments._import(missing)


def test_make_refuses_an_experiment_outside_the_manifest_before_running_it(tmp_path: Path) -> None:
    """An :class:`Experiment` of a user's own runs and is judged directly; ``make`` (which publishes to a chapter)
    refuses it up front with what to do, instead of failing after the run on an unknown id."""
    import dataclasses

    ran = []
    mine = dataclasses.replace(experiments.get("ch1-synsmall"), id="my-own",
                               run=lambda config, progress: ran.append(config))
    with pytest.raises(ValueError, match=names("target") + r".*'my-own' is not in scansnap\.manifest.*experiment\.run"):
        experiments.make(mine, profile="smoke", out=tmp_path)
    assert ran == [] and not (tmp_path / "results").exists()
    with pytest.raises(ValueError, match=names("target")):
        experiments.publish(mine, mine.config.preset("smoke"), None, 0.0, profile="smoke", out=tmp_path)


def test_a_figure_id_given_for_an_experiment_id_names_its_experiment() -> None:
    with pytest.raises(ValueError, match=names("experiment id") + r": 'fig-paper-6' is a figure id, made by experiment "
                                                                  r"'ch7-sweep'"):
        experiments.get("fig-paper-6")
