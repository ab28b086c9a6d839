"""Evaluations on a local Dask cluster: the same history as a thread pool, and
nothing lost or counted twice when evaluations finish out of order, fail,
time out, or kill their worker."""

from __future__ import annotations

import hashlib
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from treebo import minimize
from treebo.loop import TimeLimitExecutor
from treebo.test_functions import GeneralizedJenatton, Jenatton

# Clusters take a minute to start and run: a CI step of their own.
pytestmark = pytest.mark.integration

distributed = pytest.importorskip("distributed")
cloudpickle = pytest.importorskip("cloudpickle")

import dask  # noqa: E402

# The objectives below travel to the workers by value (tests/ is not on a
# worker's path).
cloudpickle.register_pickle_by_value(sys.modules[__name__])

PROBLEMS = {"jenatton": Jenatton, "generalized": lambda: GeneralizedJenatton(3)}


@pytest.fixture(scope="module")
def client():
    # One retry of a task whose worker died, so that a task which kills its
    # worker every time fails fast; workers that may start child processes
    # (for the time limit).
    settings = {
        "distributed.scheduler.allowed-failures": 1,
        "distributed.worker.daemon": False,
    }
    with (
        dask.config.set(settings),
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            host="127.0.0.1",
            dashboard_address=":0",
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client


def _trials(result):
    return [(t.params, t.value, t.status, t.kind) for t in result.history]


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_one_dask_worker_gives_the_thread_pools_history(client, name, seed):
    problem = PROBLEMS[name]()
    runs = []
    for executor in (client.get_executor(), ThreadPoolExecutor(1)):
        runs.append(
            minimize(
                problem.objective,
                problem.space,
                budget=6,
                seed=seed,
                n_initial=5,
                n_workers=1,
                executor=executor,
            )
        )
    assert _trials(runs[0]) == _trials(runs[1])
    assert [t.kind for t in runs[0].history].count("bo") == 1


class FaultyObjective:
    """Jenatton, with faults by the order in which evaluations start.

    Start 2 kills its worker on its first attempt only (the retry succeeds),
    start 4 kills its worker on every attempt, start 5 raises. Every
    evaluation sleeps up to 0.3 s, so they finish out of order. Starts are
    claimed as files in ``folder``; a retried evaluation claims none.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.problem = Jenatton()

    def __call__(self, params):
        key = hashlib.sha1(repr(sorted(params.items())).encode()).hexdigest()
        if (self.folder / f"doomed-{key}").exists():
            os._exit(1)
        if not (self.folder / f"seen-{key}").exists():
            (self.folder / f"seen-{key}").touch()
            start = self._claim_start()
            if start == 2:
                os._exit(1)
            if start == 4:
                (self.folder / f"doomed-{key}").touch()
                os._exit(1)
            if start == 5:
                raise ValueError("start 5 fails")
        time.sleep(int(key[:4], 16) / 0xFFFF * 0.3)
        return self.problem.objective(params)

    def _claim_start(self) -> int:
        start = 0
        while True:
            try:
                flags = os.O_CREAT | os.O_EXCL
                os.close(os.open(self.folder / f"start-{start}", flags))
                return start
            except FileExistsError:
                start += 1


def test_out_of_order_failures_and_killed_workers_lose_and_repeat_nothing(
    client, tmp_path
):
    objective = FaultyObjective(tmp_path)
    checkpoint = tmp_path / "run.jsonl"
    result = minimize(
        objective,
        Jenatton().space,
        budget=9,
        seed=0,
        n_initial=8,
        n_workers=2,
        executor=client.get_executor(),
        checkpoint=checkpoint,
    )
    history = result.history
    # Every evaluation is started once (a retry claims no start) and told once.
    assert len(history) == 9
    assert len(list(tmp_path.glob("start-*"))) == 9
    journal = checkpoint.read_text().splitlines()
    assert sum(line.startswith('{"trial"') for line in journal) == 9
    keys = [repr(sorted(t.params.items())) for t in history]
    assert len(set(keys)) == 9
    failed = [t for t in history if t.status == "failed"]
    assert sum("start 5 fails" in t.error for t in failed) == 1
    # The doomed evaluation fails with KilledWorker. Dask may fail an innocent
    # one beside it: a task whose worker died twice while it ran or held its
    # result counts as suspicious (allowed-failures=1), whatever killed them.
    killed = [t for t in failed if "KilledWorker" in t.error]
    assert 1 <= len(killed) == len(failed) - 1 <= 2
    ok = [t for t in history if t.status == "ok"]
    assert all(t.value == Jenatton().objective(t.params) for t in ok)


def _slow_on_one_branch(params):
    if params["x1"] == 1:
        time.sleep(30)
    return Jenatton().objective(params)


def test_a_time_limit_on_the_cluster_fails_the_evaluation_and_goes_on(client):
    t0 = time.perf_counter()
    result = minimize(
        _slow_on_one_branch,
        Jenatton().space,
        budget=6,
        seed=0,
        n_initial=6,
        n_workers=2,
        executor=TimeLimitExecutor(client.get_executor(), timeout=1.0),
    )
    assert time.perf_counter() - t0 < 25
    slow = [t for t in result.history if t.params["x1"] == 1]
    quick = [t for t in result.history if t.params["x1"] == 0]
    assert slow and quick and len(result.history) == 6
    assert all(t.status == "failed" and "EvaluationTimeout" in t.error for t in slow)
    assert all(t.status == "ok" for t in quick)
