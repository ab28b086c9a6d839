"""The loop says what it does: a log line per trial and a progress bar."""

from __future__ import annotations

import logging
import sys

import pytest

from treebo import TreeOptimizer, minimize, set_verbosity
from treebo.loop.log import disable_default_handler, enable_default_handler, get_logger
from treebo.test_functions import Jenatton


@pytest.fixture
def records():
    """The ``"treebo"`` logger's records during a test."""
    seen: list[logging.LogRecord] = []
    set_verbosity(logging.INFO)  # importing the benchmarks lowers it
    handler = logging.Handler()
    handler.emit = seen.append
    get_logger().addHandler(handler)
    yield seen
    get_logger().removeHandler(handler)
    set_verbosity(logging.INFO)


def test_every_told_trial_is_logged_with_its_outcome_and_the_best(records):
    problem = Jenatton()
    opt = TreeOptimizer(problem.space, seed=0)
    first, second = opt.ask(), opt.ask()
    opt.tell(first, 2.5)
    opt.tell(second, ValueError("diverged"))
    lines = [r.getMessage() for r in records]
    assert len(lines) == 2 and all(r.levelno == logging.INFO for r in records)
    assert lines[0].startswith("Trial 0 finished with value 2.5, proposed by initial")
    assert lines[1].startswith("Trial 1 failed (") and "diverged" in lines[1]
    assert lines[1].endswith("Best: 2.5 (trial 0).")
    set_verbosity(logging.WARNING)
    opt.tell(opt.ask(), 1.0)
    assert len(records) == 2


def test_the_default_handler_writes_to_stderr_and_does_not_propagate():
    # pytest (9 and later) attaches capture handlers of its own to every logger, so
    # the test follows the one handler that disabling removes, not a handler class.
    logger = get_logger()
    assert not logger.propagate
    before = list(logger.handlers)
    disable_default_handler()
    try:
        removed = [h for h in before if h not in logger.handlers]
        assert logger.propagate and len(removed) == 1
        (default,) = removed
        assert isinstance(default, logging.StreamHandler)
        assert default.stream is sys.stderr
    finally:
        enable_default_handler()
    assert not logger.propagate and default in logger.handlers
    assert logger.handlers.count(default) == 1


def test_the_progress_bar_counts_trials_and_shows_the_best(capsys, tmp_path):
    problem = Jenatton()
    set_verbosity(logging.WARNING)
    try:
        result = minimize(
            problem.objective, problem.space, budget=4, seed=0, progress=True
        )
        err = capsys.readouterr().err
        assert "4/4" in err and f"best={result.best_observed_value:.6g}" in err
        minimize(problem.objective, problem.space, budget=2, seed=0, progress=False)
        assert "treebo" not in capsys.readouterr().err
    finally:
        set_verbosity(logging.INFO)
