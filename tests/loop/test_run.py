"""minimize(): failures, parallel workers, executors, arguments."""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import threading
from concurrent.futures import Executor, Future, ProcessPoolExecutor

import pytest

from treebo import TreeOptimizer, minimize
from treebo.add_tree import AddTreeOptions, AddTreeStrategy
from treebo.test_functions import Jenatton, jenatton_space

#: Cheaper acquisition optimization: these tests are about the loop, not it.
FAST = AddTreeOptions(num_restarts=4, raw_samples=64, alternative_kernels=())


class Killed(KeyboardInterrupt):
    """Stands in for the process being killed."""


def test_failures_are_recorded_and_the_loop_goes_on():
    problem = Jenatton()
    calls = {"n": 0}

    def flaky(params):
        calls["n"] += 1
        if calls["n"] % 3 == 0:
            raise RuntimeError("simulator crashed")
        if calls["n"] % 4 == 0:
            return float("nan")
        return problem.objective(params)

    result = minimize(
        flaky,
        problem.space,
        budget=9,
        seed=1,
        n_initial=5,
        strategy=AddTreeStrategy(FAST),
    )
    statuses = [t.status for t in result.history]
    assert statuses.count("failed") == sum(
        1 for i in range(1, 10) if i % 3 == 0 or i % 4 == 0
    )
    failed = [t for t in result.history if t.status == "failed"]
    assert any("simulator crashed" in t.error for t in failed)
    assert any("nan" in t.error for t in failed)
    assert all(t.value is None for t in failed)
    ok = [t.value for t in result.history if t.status == "ok"]
    assert result.best_observed_value == min(ok)


class InlineExecutor(Executor):
    """Runs each submission at once in the calling thread; counts them."""

    def __init__(self):
        self.submitted = 0
        self.closed = False

    def submit(self, fn, /, *args, **kwargs):
        if self.closed:
            raise RuntimeError("shut down")
        self.submitted += 1
        future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as err:
            future.set_exception(err)
        return future

    def shutdown(self, wait=True, *, cancel_futures=False):
        self.closed = True


def test_minimize_runs_workers_at_once_and_records_their_failures():
    problem = Jenatton()
    barrier = threading.Barrier(3, timeout=30)
    lock = threading.Lock()
    state = {"calls": 0, "running": 0, "most": 0}

    def objective(params):
        with lock:
            state["calls"] += 1
            call = state["calls"]
            state["running"] += 1
            state["most"] = max(state["most"], state["running"])
        try:
            if call <= 3:
                barrier.wait()  # breaks unless three evaluations run at once
            if call in (4, 6):
                raise RuntimeError("worker crashed")
            return problem.objective(params)
        finally:
            with lock:
                state["running"] -= 1

    result = minimize(
        objective, problem.space, budget=9, seed=0, n_initial=5, n_workers=3
    )
    assert state["calls"] == 9 and len(result.history) == 9
    assert state["most"] == 3
    failed = [t for t in result.history if t.status == "failed"]
    assert len(failed) == 2 and all("worker crashed" in t.error for t in failed)
    assert [t.index for t in result.history] == list(range(9))
    configs = [tuple(sorted(t.params.items())) for t in result.history]
    assert len(set(configs)) == 9


def test_minimize_with_a_given_executor_resumes_after_a_kill(tmp_path, monkeypatch):
    problem = Jenatton()
    path = tmp_path / "run.json"
    executor = InlineExecutor()
    seen = []

    def objective(params):
        seen.append(params)
        return problem.objective(params)

    waits = []

    def wait_then_die(futures, return_when):
        # Ctrl-C in the third wait: two more evaluations have finished by then.
        waits.append(len(futures))
        if len(waits) == 3:
            raise Killed
        return concurrent.futures.wait(futures, return_when=return_when)

    opt_run = {"seed": 2, "n_initial": 5, "checkpoint": path}
    run = {"budget": 8, "n_workers": 2, "executor": executor, **opt_run}
    monkeypatch.setattr("treebo.loop.run.wait", wait_then_die)
    with pytest.raises(Killed):
        minimize(objective, problem.space, **run)
    # The evaluations that finished before the kill are all kept, and the
    # user's executor stays open.
    assert waits == [2, 2, 2] and executor.submitted == 6 and not executor.closed
    saved = [t.params for t in TreeOptimizer(problem.space, **opt_run).history]
    # (Results that finish together are told in no fixed order.)
    assert len(seen) == 6 and sorted(map(repr, saved)) == sorted(map(repr, seen))
    monkeypatch.undo()
    result = minimize(objective, problem.space, **run)  # the same objective
    assert [t.params for t in result.history[:6]] == saved
    assert len(result.history) == 8 and executor.submitted == 8


def _sphere(params):  # module level: a process pool pickles it
    return sum(v * v for v in params.values() if isinstance(v, float))


def test_minimize_in_a_process_pool():
    space = jenatton_space()
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(2, mp_context=context) as pool:
        result = minimize(
            _sphere, space, budget=7, seed=0, n_initial=5, n_workers=2, executor=pool
        )
    assert [t.status for t in result.history] == ["ok"] * 7
    assert all(t.value == _sphere(t.params) for t in result.history)


def test_an_objective_a_process_pool_cannot_pickle_is_refused():
    with ProcessPoolExecutor(1) as pool:
        with pytest.raises(TypeError, match="objective must be picklable"):
            minimize(lambda p: 0.0, jenatton_space(), budget=3, executor=pool)


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"n_workers": 0}, "n_workers must be an integer >= 1"),
        ({"n_workers": True}, "n_workers must be an integer >= 1"),
        ({"n_workers": 2.0}, "n_workers must be an integer >= 1"),
        ({"executor": "pool"}, "executor must be a concurrent.futures.Executor"),
        ({"budget": 0}, "budget"),
        ({"budget": True}, "budget must be an integer >= 1, got True"),
        ({"callback": 3}, "callback must be callable"),
        ({"maximize": "yes"}, "maximize must be a bool"),
    ],
)
def test_bad_minimize_arguments(kwargs, error):
    with pytest.raises((TypeError, ValueError), match=error):
        minimize(lambda p: 0.0, jenatton_space(), **{"budget": 3, **kwargs})
    with pytest.raises(TypeError, match="callable"):
        minimize(3, jenatton_space(), budget=2)


def test_a_finished_checkpoint_says_that_nothing_was_evaluated(tmp_path):
    problem = Jenatton()
    path = tmp_path / "run.jsonl"
    calls = []

    def objective(params):
        calls.append(params)
        return problem.objective(params)

    first = minimize(objective, problem.space, budget=3, seed=0, checkpoint=path)
    with pytest.warns(UserWarning, match="already holds 3 evaluations"):
        again = minimize(objective, problem.space, budget=3, seed=0, checkpoint=path)
    assert len(calls) == 3 and again.best_value == first.best_value
    more = minimize(objective, problem.space, budget=4, seed=0, checkpoint=path)
    assert len(calls) == 4 and len(more.history) == 4


@pytest.mark.parametrize("value", [(0.1, 0.2), {"loss": 0.1, "time": 3.0}])
def test_several_values_stop_the_run_at_the_first_and_it_is_kept(value, tmp_path):
    problem = Jenatton()
    path = tmp_path / "run.jsonl"
    with pytest.raises(TypeError, match="several values.*add_tree_generation_strategy"):
        minimize(lambda p: value, problem.space, budget=5, checkpoint=path)
    history = TreeOptimizer(problem.space, checkpoint=path).history
    assert len(history) == 1 and history[0].status == "failed"
