"""``python -m scansnap``: see :mod:`scansnap.cli`."""

import sys

from scansnap.cli import main

sys.exit(main())
