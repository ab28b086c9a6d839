"""RayExecutor: Ray tasks as concurrent.futures, under the loop."""

from __future__ import annotations

import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from treebo import minimize
from treebo.loop import TimeLimitExecutor
from treebo.test_functions import Jenatton

# Clusters take a minute to start and run: a CI step of their own.
pytestmark = pytest.mark.integration

ray = pytest.importorskip("ray")

from treebo.integrations.ray import RayExecutor  # noqa: E402

# The functions below travel to Ray's workers by value.
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
    )
    yield
    ray.shutdown()


def _exit_on_first_attempt(marker, value):
    if not os.path.exists(marker):
        open(marker, "w").close()
        os._exit(1)
    return value


def _raise():
    raise KeyError("missing")


def test_tasks_return_raise_and_survive_a_dead_worker(tmp_path):
    with RayExecutor(max_retries=1) as pool:
        ok = pool.submit(pow, 2, 10)
        error = pool.submit(_raise)
        retried = pool.submit(_exit_on_first_attempt, str(tmp_path / "m"), 7)
        assert ok.result(timeout=60) == 1024
        assert isinstance(error.exception(timeout=60), KeyError)
        assert retried.result(timeout=60) == 7


def test_a_cancelled_future_cancels_its_task():
    with RayExecutor() as pool:
        future = pool.submit(time.sleep, 60)
        time.sleep(0.5)
        t0 = time.perf_counter()
        assert future.cancel()
    assert future.cancelled() and time.perf_counter() - t0 < 30


def test_one_ray_worker_gives_the_thread_pools_history():
    problem = Jenatton()
    runs = [
        minimize(
            problem.objective,
            problem.space,
            budget=6,
            seed=0,
            n_initial=5,
            executor=executor,
        )
        for executor in (RayExecutor(), ThreadPoolExecutor(1))
    ]
    trials = [[(t.params, t.value, t.status) for t in r.history] for r in runs]
    assert trials[0] == trials[1]


def _slow_on_one_branch(params):
    if params["x1"] == 1:
        time.sleep(60)
    return Jenatton().objective(params)


def test_a_time_limit_on_ray_fails_the_evaluation_and_goes_on():
    t0 = time.perf_counter()
    result = minimize(
        _slow_on_one_branch,
        Jenatton().space,
        budget=6,
        seed=0,
        n_initial=6,
        n_workers=2,
        executor=TimeLimitExecutor(RayExecutor(), timeout=1.0),
        noise="deterministic",  # the result is the best observation: no fit
    )
    # Without the limit, the slow evaluations alone take 60 s or more.
    assert time.perf_counter() - t0 < 45
    slow = [t for t in result.history if t.params["x1"] == 1]
    quick = [t for t in result.history if t.params["x1"] == 0]
    assert slow and quick and len(result.history) == 6
    assert all(t.status == "failed" and "EvaluationTimeout" in t.error for t in slow)
    assert all(t.status == "ok" for t in quick)
