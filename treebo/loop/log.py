"""treebo's logger: one line per finished trial, on stderr by default.

As in Optuna, the library logger ``"treebo"`` has its own handler (stderr, level INFO)
and does not propagate to the root logger, so a run says what it does without any
set-up, and nothing is printed twice where an application configures logging itself.
[`set_verbosity()`][treebo.loop.log.set_verbosity] changes the level
(``logging.WARNING`` keeps warnings only);
[`disable_default_handler()`][treebo.loop.log.disable_default_handler] hands the records
to the application's handlers instead.

Example:
    >>> import logging
    >>> set_verbosity(logging.WARNING)  # silence the per-trial lines
    >>> get_logger().getEffectiveLevel() == logging.WARNING
    True
    >>> set_verbosity(logging.INFO)
"""

from __future__ import annotations

import logging
import sys
from typing import Any

LOGGER_NAME = "treebo"

_logger = logging.getLogger(LOGGER_NAME)
_default_handler = logging.StreamHandler(sys.stderr)
_default_handler.setFormatter(
    logging.Formatter("[%(levelname).1s %(asctime)s treebo] %(message)s")
)


def _configure() -> None:
    if _default_handler not in _logger.handlers:
        _logger.addHandler(_default_handler)
    _logger.setLevel(logging.INFO)
    _logger.propagate = False


def log_trial(trial: Any, best: Any) -> None:
    """One INFO line for a finished [`Trial`][treebo.loop.history.Trial], with the
    best successful trial so far (``None`` if there is none)."""
    if not _logger.isEnabledFor(logging.INFO):
        return
    if trial.value is None:
        outcome = f"failed ({trial.error})"
    else:
        outcome = f"finished with value {trial.value:.6g}"
    best_s = "none yet" if best is None else f"{best.value:.6g} (trial {best.index})"
    _logger.info(
        "Trial %d %s, proposed by %s, parameters %s. Best: %s.",
        trial.index,
        outcome,
        trial.kind,
        trial.params,
        best_s,
    )


def get_logger() -> logging.Logger:
    """The ``"treebo"`` logger the loop writes to."""
    return _logger


def set_verbosity(level: int) -> None:
    """Log records of at least ``level`` (``logging.INFO``: a line per trial)."""
    _logger.setLevel(level)


def disable_default_handler() -> None:
    """Stop writing to stderr; records propagate to the root logger's handlers."""
    _logger.removeHandler(_default_handler)
    _logger.propagate = True


def enable_default_handler() -> None:
    """Write to stderr again (the default), without propagating."""
    _configure()


_configure()
