"""``python -m treebo``: the ``treebo`` command line (:mod:`treebo.cli`)."""

import sys

from treebo.cli import main

sys.exit(main())
