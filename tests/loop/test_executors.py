"""ProcessExecutor: a process per call, time limits, crashes that fail alone."""

from __future__ import annotations

import multiprocessing
import os
import time

import pytest

from treebo import minimize
from treebo.loop import EvaluationTimeout, ProcessExecutor
from treebo.test_functions import Jenatton

PROBLEM = Jenatton()


def _hangs_on_one_branch(params):
    if params["x1"] == 1:
        time.sleep(120)
    return PROBLEM.objective(params)


def _exits(code):
    os._exit(code)


def _raises():
    raise KeyError("missing")


def _unpicklable():
    return lambda: None


def test_a_hanging_evaluation_is_a_failure_and_its_process_is_ended():
    t0 = time.perf_counter()
    with ProcessExecutor(max_workers=2, timeout=1.0) as pool:
        result = minimize(
            _hangs_on_one_branch,
            PROBLEM.space,
            budget=6,
            seed=0,
            n_initial=6,
            n_workers=2,
            executor=pool,
        )
    assert time.perf_counter() - t0 < 60
    hung = [t for t in result.history if t.params["x1"] == 1]
    done = [t for t in result.history if t.params["x1"] == 0]
    assert hung and done
    assert all(t.status == "failed" and "EvaluationTimeout" in t.error for t in hung)
    assert all(t.eval_seconds == 1.0 for t in hung)
    assert all(t.value == PROBLEM.objective(t.params) for t in done)
    assert not multiprocessing.active_children()


def test_a_crash_or_an_error_fails_alone_with_its_reason():
    with ProcessExecutor(max_workers=3) as pool:
        crashed = pool.submit(_exits, 3)
        raised = pool.submit(_raises)
        unsent = pool.submit(_unpicklable)
        fine = pool.submit(divmod, 7, 2)
        with pytest.raises(ChildProcessError, match="code 3"):
            crashed.result()
        with pytest.raises(KeyError, match="missing"):
            raised.result()
        with pytest.raises(TypeError, match="could not send the result"):
            unsent.result()
        assert fine.result() == (3, 1)


def test_shutdown_with_cancel_futures_ends_running_calls():
    pool = ProcessExecutor(max_workers=1)
    running = pool.submit(time.sleep, 120)
    queued = pool.submit(time.sleep, 120)
    time.sleep(0.5)
    pool.shutdown(wait=True, cancel_futures=True)
    assert queued.cancelled()
    with pytest.raises(ChildProcessError):
        running.result(timeout=10)
    assert not multiprocessing.active_children()


def test_a_timeout_names_its_limit():
    with ProcessExecutor(timeout=0.2) as pool:
        error = pool.submit(time.sleep, 30).exception(timeout=30)
    assert isinstance(error, EvaluationTimeout) and error.seconds == 0.2
    assert "more than 0.2 s" in str(error)


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"max_workers": 0}, ValueError),
        ({"max_workers": 1.5}, TypeError),
        ({"timeout": 0}, ValueError),
        ({"timeout": "10"}, ValueError),
    ],
)
def test_bad_arguments(kwargs, error):
    with pytest.raises(error):
        ProcessExecutor(**kwargs)
