"""``python -m treebo``: the ``treebo`` command line ([`treebo.cli`][treebo.cli])."""

import sys

from treebo.cli import main

sys.exit(main())
