"""Profiles: the scale at which chapters run (``SCANSNAP_PROFILE``).

* ``smoke``: seconds per chapter (the test suite);
* ``book``: the default, what the published site shows (the whole book builds on 2 cores in CI time);
* ``paper``: the paper's full scale.
"""

from __future__ import annotations

import os

from scansnap._checks import check_choice

__all__ = ["PROFILES", "current"]

PROFILES = ("smoke", "book", "paper")


def current() -> str:
    """The active profile: ``$SCANSNAP_PROFILE`` or ``"book"``."""
    return check_choice("SCANSNAP_PROFILE", os.environ.get("SCANSNAP_PROFILE", "book"), PROFILES)
