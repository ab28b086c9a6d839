"""treebo's benchmarks: problems, methods, suites, and the report.

Benchmark runs print one line per run; the loop's line per trial
(:mod:`treebo.loop.log`) is turned off here.
"""

import logging

from treebo.loop.log import set_verbosity

set_verbosity(logging.WARNING)
