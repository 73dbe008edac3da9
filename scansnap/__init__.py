"""scansnap: the executable companion to *Scan and Snap* (Tian, Wang, Chen, Du, NeurIPS 2023).

Modules, one per concept, from the bottom up:

* the setting: :mod:`~scansnap.data` (sequence classes, Lemma 2's limit), :mod:`~scansnap.model` (the Y/Z
  model, Lemma 1's gradients), :mod:`~scansnap.model_options` (residual, positional bias, heads: Sec. 7),
  :mod:`~scansnap.positions`, :mod:`~scansnap.heads`, :mod:`~scansnap.metrics` (entropy, recall, freeze rate),
  :mod:`~scansnap.freeze` (whether an attention map has frozen: the snap; scan and snap together, P1's measures with
  their control, are :func:`scansnap.experiments.scan_snap_rules.scan_snap_run`);
* training: :mod:`~scansnap.train` (the trainer), :mod:`~scansnap.sweep` (learning-rate grids in one batched run);
* theory: :mod:`~scansnap.theory` (one module per result: closed forms and ODEs);
* real data: :mod:`~scansnap.wikitext` (verified WikiText-2), :mod:`~scansnap.lm` and :mod:`~scansnap.lm_train`
  (the tutorial transformer language model), :mod:`~scansnap.token_stats`;
* judging and publishing: :mod:`~scansnap.stats`, :mod:`~scansnap.verdicts` (rules), :mod:`~scansnap.claims`
  (the ledger), :mod:`~scansnap.results` (typed configs and results), :mod:`~scansnap.figures`;
* on top: :mod:`~scansnap.experiments` (one module per chapter: configs, runs, figures, verdicts),
  :mod:`~scansnap.book` (what a chapter cell calls), :mod:`~scansnap.cli` (``python -m scansnap``).

:mod:`~scansnap.profiles` picks the scale (smoke / book / paper).
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("scansnap")
except PackageNotFoundError:  # running from a source tree that was not pip-installed
    __version__ = "0+unknown"

__all__ = ["__version__"]
