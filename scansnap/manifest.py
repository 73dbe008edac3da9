"""The book's manifest: every chapter and every experiment, declared as data.

This is the one registry of the book (nothing finds experiments by file name). Each :class:`Module` is one module
of :mod:`scansnap.experiments` (``scansnap.experiments.<name>``) with the chapter that shows its experiments, its
experiments (:class:`Entry`: id, run function, configuration class, figure ids, whether a run of it is stored in
``stores/``) and the keys of its rules (``"C38/training-sampled"``: claim and kind of evidence, as locked in
``ledger/rules.json``). :mod:`scansnap.experiments` imports a module only when one of its experiments or rules is
asked for, and checks it against its entry here; the command line, the ledger, the gallery and the page cache
(:mod:`scansnap.closure`: a chapter re-executes when a module of *its* experiments changes) read this table.

Reading it imports nothing of the library, so it is cheap:

>>> from scansnap import manifest
>>> manifest.entry("ch7-sweep").chapter, manifest.owner("fig-paper-6").id
(7, 'ch7-sweep')
>>> manifest.docname(7)
'book/chapters/07-syn-medium'
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache

__all__ = ["CHAPTERS", "MODULES", "Entry", "Module", "chapter_of", "docname", "entries", "entry", "module_name",
           "modules_of", "owner", "rule_keys"]

PACKAGE = "scansnap.experiments"

CHAPTERS: dict[int, str] = {
    1: "book/chapters/01-setting",
    2: "book/chapters/02-long-sequences",
    3: "book/chapters/03-decoder-dynamics",
    4: "book/chapters/04-fates-of-tokens",
    5: "book/chapters/05-scanning",
    6: "book/chapters/06-phase-transition",
    7: "book/chapters/07-syn-medium",
    8: "book/chapters/08-wikitext",
    9: "book/chapters/09-beyond",
}
"""Chapter number -> the page (docname) of that chapter: the one place the book's chapters are named."""


@dataclass(frozen=True)
class Entry:
    """One experiment: ``id`` (its result is ``results/<id>.npz``), the names of its run function and configuration
    class in its module, the ids of the figures it makes, and whether a run of it is stored (``stores/<id>/``).
    ``module`` and ``chapter`` are filled from the :class:`Module` that lists it."""

    id: str
    run: str
    config: str
    figures: tuple[str, ...] = ()
    stored: bool = False
    module: str = ""
    chapter: int = 0


@dataclass(frozen=True)
class Module:
    """A module of :mod:`scansnap.experiments` (``name``, without the package), the chapter that shows its
    experiments, the experiments it defines (in its ``EXPERIMENTS``) and the keys of its rules (its ``RULES``)."""

    name: str
    chapter: int
    experiments: tuple[Entry, ...]
    rules: tuple[str, ...] = field(default=())


MODULES: tuple[Module, ...] = (
    Module("ch01_setting", 1, (
        Entry("ch1-lemma1", "run_lemma1", "Lemma1Config", ()),
        Entry("ch1-synsmall", "run_synsmall", "SynSmallConfig", ("fig-ch1-synsmall",)),
    ), rules=("C1/derivation", "C2/derivation", "C3/derivation")),
    Module("ch02_assumptions", 2, (
        Entry("ch2-assumptions", "run_assumptions", "AssumptionsConfig", ("fig-ch2-assumptions",)),
    ), rules=("C43/training-sampled",)),
    Module("ch02_long_sequences", 2, (
        Entry("ch2-concentration", "run_concentration", "ConcentrationConfig", ("fig-ch2-concentration",)),
    ), rules=("C4/simulation",)),
    Module("ch03_decoder", 3, (
        Entry("ch3-fig8", "run_fig8", "Fig8Config", ("fig-paper-8",)),
        Entry("ch3-families", "run_families", "FamiliesConfig", ()),
    ), rules=("C6/derivation", "C8/derivation", "C10/derivation")),
    Module("ch03_gamma", 3, (
        Entry("ch3-gamma", "run_gamma", "GammaConfig", ("fig-ch3-gamma",)),
    ), rules=("C11/derivation", "C11/simulation")),
    Module("ch03_remark1", 3, (
        Entry("ch3-correlated", "run_correlated", "CorrelatedConfig", ("fig-ch3-correlated",)),
    ), rules=("C12/derivation", "C12/simulation")),
    Module("ch03_sgd1", 3, (
        Entry("ch3-sgd1", "run_sgd1", "SGD1Config", ("fig-ch3-sgd1",)),
        Entry("ch3-lemma10", "run_lemma10", "Lemma10Config", ()),
    ), rules=("C9/training-population", "C10/training-population", "C11/training-population", "C14/simulation")),
    Module("ch03_theorem1", 3, (
        Entry("ch3-theorem1", "run_theorem1", "Theorem1Config", ()),
    ), rules=(
        "C5/simulation", "C7/derivation", "C9/derivation", "C9/simulation", "C10/simulation", "C13/derivation",
        "C13/simulation"
    )),
    Module("ch04_eqn10", 4, (
        Entry("ch4-eqn10", "run_eqn10", "Eqn10Config", ("fig-ch4-eqn10",)),
    ), rules=("C15/training-population",)),
    Module("ch04_fates", 4, (
        Entry("ch4-training", "run_training", "TrainingConfig", ("fig-ch4-fates", "fig-ch4-violations")),
    ), rules=("C16/training-population", "C17/training-population", "C18/training-population")),
    Module("ch04_identities", 4, (
        Entry("ch4-identities", "run_identities", "IdentitiesConfig", ()),
    ), rules=("C15/derivation", "C16/derivation", "C17/derivation", "C18/derivation")),
    Module("ch05_adam", 5, (
        Entry("ch5-fig5", "run_fig5", "Fig5Config", ("fig-paper-5",)),
    ), rules=("C37/training-sampled",)),
    Module("ch05_scanning", 5, (
        Entry("ch5-scanning", "run_scanning", "ScanningConfig", ("fig-ch5-scanning",)),
    ), rules=("C19/derivation", "C20/derivation", "C21/simulation", "C22/simulation", "C23/derivation")),
    Module("ch05_synsmall", 5, (
        Entry("ch5-fig4", "run_fig4", "Fig4Config", ("fig-paper-4",)),
    ), rules=(
        "C35/training-sampled", "X8/training-sampled", "P3/training-sampled", "C36/training-sampled",
        "C21/training-sampled", "C19/training-sampled", "C20/training-sampled"
    )),
    Module("ch05_training", 5, (
        Entry("ch5-gd", "run_gd", "GDConfig", ()),
        Entry("ch5-prior", "run_prior", "PriorConfig", ()),
    ), rules=("C19/training-population", "C20/training-population", "C22/training-sampled")),
    Module("ch06_figures", 6, (
        Entry("ch6-fig3", "run_fig3", "Fig3Config", ("fig-paper-3",)),
        Entry("ch6-fig9", "run_fig9", "Fig9Config", ("fig-paper-9",)),
    ), rules=(
        "C25/derivation", "C26/derivation", "C27/derivation", "C28/derivation", "C29/derivation",
        "C30/derivation", "C31/derivation", "C34/derivation", "C34/simulation"
    )),
    Module("ch06_phase_transition", 6, (
        Entry("ch6-eqn14", "run_eqn14", "Eqn14Config", ()),
        Entry("ch6-validity", "run_validity", "ValidityConfig", ()),
    ), rules=("C24/derivation", "C32/simulation")),
    Module("ch06_scanning_reach", 6, (
        Entry("ch6-reach", "run_reach", "ReachConfig", ("fig-ch6-reach",)),
    ), rules=()),
    Module("ch06_trained", 6, (
        Entry("ch6-trained", "run_trained", "TrainedConfig", ("fig-ch6-trained",)),
    ), rules=(
        "C24/simulation", "C24/training-population", "C24/training-sampled", "C32/training-population",
        "P1/training-population", "P1/training-sampled", "C25/simulation", "C26/simulation", "C27/simulation",
        "C28/simulation", "C29/simulation", "C30/simulation", "C31/simulation", "C25/training-population",
        "C26/training-population", "C27/training-population", "C28/training-population",
        "C29/training-population", "C30/training-population", "C31/training-population",
        "C34/training-population", "C26/training-sampled", "C34/training-sampled"
    )),
    Module("ch07_fine_grid", 7, (
        Entry("ch7-fine-grid", "run_fine_grid", "FineGridConfig", ("fig-ch7-fine-grid",)),
    ), rules=()),
    Module("ch07_syn_medium", 7, (
        Entry("ch7-sweep", "run_sweep", "SweepConfig", ("fig-paper-6", "fig-paper-11", "fig-paper-12")),
    ), rules=("C38/training-sampled", "C39/training-sampled", "C42/training-sampled")),
    Module("ch08_nope", 8, (
        Entry("ch8-freeze-nope", "run_nope", "NopeConfig", ("fig-ch8-tokens",)),
    ), rules=()),
    Module("ch08_rates", 8, (
        Entry("ch8-rates", "run_rates", "RatesConfig", ("fig-paper-10",), stored=True),
        Entry("ch8-rates-deep", "run_rates", "DeepRatesConfig", ("fig-ch8-rates-deep",)),
    ), rules=("C41/real-data", "X7/real-data")),
    Module("ch08_wikitext", 8, (
        Entry("ch8-freeze", "run_freeze", "FreezeConfig", ("fig-paper-7",), stored=True),
        Entry("ch8-freeze-deep", "run_freeze", "DeepConfig", ("fig-ch8-freeze-deep",), stored=True),
    ), rules=("C40a/real-data", "C40b/real-data", "P2/real-data", "P3/real-data")),
    Module("ch09_beyond", 9, (
        Entry("ch9-gradients", "run_gradients", "GradientConfig", ()),
        Entry("ch9-overlaps", "run_overlaps", "OverlapConfig", ("fig-ch9-overlaps",)),
    ), rules=("X1/derivation", "C33a/derivation")),
    Module("ch09_decoupling", 9, (
        Entry("ch9-decoupling", "run_decoupling", "DecouplingConfig", ("fig-ch9-decoupling",)),
    ), rules=("C33a/training-population", "C33a/training-sampled")),
    Module("ch09_fates", 9, (
        Entry("ch9-flow", "run_flow", "FlowConfig", ()),
        Entry("ch9-fates", "run_fates", "FatesConfig", ("fig-ch9-fates",)),
    ), rules=("C33b/simulation", "C33b/training-population", "C33b/training-sampled")),
    Module("ch09_heads", 9, (
        Entry("ch9-heads", "run_heads", "HeadsConfig", ("fig-ch9-heads",)),
        Entry("ch9-heads-sampled", "run_heads", "SampledHeadsConfig", ("fig-ch9-heads-sampled",)),
    ), rules=("X4/training-sampled", "X5/training-sampled", "X6/training-sampled", "X9/training-sampled")),
    Module("ch09_positions", 9, (
        Entry("ch9-positions", "run_positions", "PositionsConfig", ("fig-ch9-positions",)),
    ), rules=("X2/derivation", "X3/training-sampled")),
)
"""Every experiment module of the book, in chapter order."""


def module_name(module: Module) -> str:
    """The module's import name: ``"scansnap.experiments.ch07_syn_medium"``."""
    return f"{PACKAGE}.{module.name}"


@cache
def entries() -> dict[str, Entry]:
    """Every experiment, by id, with its module and chapter filled in."""
    out: dict[str, Entry] = {}
    for m in MODULES:
        for e in m.experiments:
            if e.id in out:
                raise ValueError(f"manifest: experiment id {e.id!r} is listed twice (again in {m.name})")
            out[e.id] = Entry(e.id, e.run, e.config, e.figures, e.stored, module_name(m), m.chapter)
    return out


def _choose(what: str, value: str, options: dict) -> None:
    if value not in options:
        raise ValueError(f"{what}: unknown {value!r}; one of {', '.join(sorted(options))}")


def entry(experiment_id: str) -> Entry:
    """The entry of experiment ``experiment_id``."""
    if experiment_id not in entries() and isinstance(experiment_id, str) and experiment_id in _figures():
        raise ValueError(f"experiment id: {experiment_id!r} is a figure id, made by experiment "
                         f"{_figures()[experiment_id].id!r} (scansnap.experiments.resolve takes either)")
    _choose("experiment id", experiment_id, entries())
    return entries()[experiment_id]


@cache
def _figures() -> dict[str, Entry]:
    out: dict[str, Entry] = {}
    for e in entries().values():
        for fig in e.figures:
            if fig in out:
                raise ValueError(f"manifest: figure id {fig!r} is listed twice (again in {e.id})")
            out[fig] = e
    return out


def figure_ids() -> list[str]:
    """Every figure id of the book, sorted."""
    return sorted(_figures())


def owner(fig_id: str) -> Entry:
    """The entry of the experiment that makes figure ``fig_id``."""
    _choose("figure id", fig_id, _figures())
    return _figures()[fig_id]


def rule_keys() -> list[str]:
    """Every rule key of the book, in manifest order."""
    return [key for m in MODULES for key in m.rules]


def docname(chapter: int) -> str:
    """The page of chapter ``chapter`` (1-9)."""
    if chapter not in CHAPTERS:
        raise ValueError(f"chapter: must be one of {min(CHAPTERS)}-{max(CHAPTERS)}; got {chapter!r}")
    return CHAPTERS[chapter]


def chapter_of(page: str) -> int | None:
    """The chapter number of a page (a docname or a path ending in one, with or without ``.md``/``.html``), or
    ``None`` for a page that is not a chapter."""
    stem = re.sub(r"\.(md|ipynb|html)$", "", str(page).replace("\\", "/")).rsplit("/", 1)[-1]
    return next((n for n, doc in CHAPTERS.items() if stem == doc.rsplit("/", 1)[-1]), None)


def modules_of(chapter: int) -> list[str]:
    """The import names of the modules whose experiments chapter ``chapter`` shows."""
    return [module_name(m) for m in MODULES if m.chapter == chapter]
