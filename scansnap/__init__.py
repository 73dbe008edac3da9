"""scansnap: the executable companion to *Scan and Snap* (Tian, Wang, Chen, Du, NeurIPS 2023).

Modules, one per concept of the paper: :mod:`~scansnap.data` (sequence classes, Lemma 2's limit),
:mod:`~scansnap.model` (the Y/Z model), :mod:`~scansnap.train` (the trainer),
:mod:`~scansnap.theory` (closed forms), :mod:`~scansnap.metrics` (attention entropy),
:mod:`~scansnap.profiles` (smoke / book / paper scale).
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("scansnap")
except PackageNotFoundError:  # running from a source tree that was not pip-installed
    __version__ = "0+unknown"

__all__ = ["__version__"]
