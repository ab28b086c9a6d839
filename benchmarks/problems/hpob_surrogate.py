"""HPO-B's continuous mode: the conditional test tasks as XGBoost surrogates.

Each of HPO-B's 26 conditional test tasks (:mod:`.hpob`) becomes a continuous
objective over its tree space: a configuration is encoded into HPO-B's feature
row (:func:`~benchmarks.problems.hpob.encode`) and scored by the pre-trained
XGBoost booster that ``bocode`` ships for the task
(``bocode.opt_problems.hpo.HPOBSurrogate``, ``HPOBSurr_<space>_<dataset>``; needs
``xgboost``). bocode snaps pool columns with few distinct values (an SVM's
degree, the one-hot and ``.na`` flags) to their grid before predicting; the
booster is then piecewise constant in every direction: a *step-shaped*
surface, with a handful of distinct values over thousands of inputs.

The booster extrapolates above the pool's best accuracy (bocode's own caveat),
so regret is measured against the surrogate's maximum over the *space*, found
once per task by :func:`search_maximum` (every branch by uniform path samples,
the pool's rows, dense random samples, then a coordinate polish of the best)
and cached in ``data/hpob_surrogate_maxima.json`` with the command that made
it. The objective is the configuration's normalized regret,

.. math::

    r(x) = \\frac{s^\\star - s(x)}{s_{\\max} - s_{\\min}},

where :math:`s` is the surrogate's accuracy, :math:`s^\\star` its cached
maximum over the space and :math:`s_{\\max}`, :math:`s_{\\min}` its extremes
over the pool's rows; the optimum is 0 (an affine map of the accuracy: every
method in the registry proposes the same points for it as for the accuracy).

Example:
    >>> task = HPOBSurrogateTask("5527", "10101")  # doctest: +SKIP
    >>> task.objective({"cost": 0.5, "kernel": "linear"}) >= 0.0  # doctest: +SKIP
    True
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .hpob import TEST_TASKS, HPOBTask, encode, initial_rows

MAXIMA_PATH = Path(__file__).parent / "data" / "hpob_surrogate_maxima.json"
MAXIMA_COMMAND = "python -m benchmarks.problems.hpob_surrogate --search"


@functools.lru_cache(maxsize=32)
def _pool(space_id: str, dataset_id: str) -> HPOBTask:
    return HPOBTask(space_id, dataset_id)


@functools.lru_cache(maxsize=32)
def _surrogate(space_id: str, dataset_id: str) -> Any:
    """bocode's surrogate problem of the task (its booster loaded on first use)."""
    module = importlib.import_module("bocode.opt_problems.hpo.HPOBSurrogate")
    return getattr(module, f"HPOBSurr_{space_id}_{dataset_id}")()


def surrogate_accuracy(space_id: str, dataset_id: str, rows: np.ndarray) -> np.ndarray:
    """The surrogate's accuracy of HPO-B feature rows (``m x d`` -> ``m``)."""
    problem = _surrogate(space_id, dataset_id)
    y, _ = problem.evaluate(torch.as_tensor(np.atleast_2d(rows), dtype=torch.float64))
    return y.reshape(-1).numpy()


@functools.lru_cache(maxsize=1)
def _maxima() -> dict[str, dict]:
    if not MAXIMA_PATH.exists():
        return {}
    return json.loads(MAXIMA_PATH.read_text())["tasks"]


class HPOBSurrogateTask:
    """One HPO-B conditional task in continuous mode (a step-shaped surface).

    A :class:`~benchmarks.problems.protocol.Problem`: the objective is the
    normalized regret of a configuration's surrogate accuracy (0 at the cached
    maximum over the space, 1 at the surrogate's worst pool row).

    Args:
        space_id: HPO-B search space (``"5527"``, ``"5891"``, ``"5906"``,
            ``"5971"``, ``"6767"``).
        dataset_id: The task's dataset.

    Attributes:
        space: The tree space of :func:`~benchmarks.problems.hpob.space_of`.
        maximum: The surrogate's cached maximum accuracy over the space.
        pool_low, pool_high: The surrogate's least and greatest accuracy over
            the pool's rows.
        optimal_value: 0.0.

    Raises:
        KeyError: If the task has no cached maximum (run :data:`MAXIMA_COMMAND`).
    """

    optimal_value = 0.0

    def __init__(self, space_id: str, dataset_id: str) -> None:
        key = f"{space_id}_{dataset_id}"
        if key not in _maxima():
            raise KeyError(
                f"no cached surrogate maximum for {key}: run {MAXIMA_COMMAND}"
            )
        self.space_id, self.dataset_id = space_id, dataset_id
        self.space = _pool(space_id, dataset_id).space
        entry = _maxima()[key]
        self.maximum = entry["maximum"]
        self.pool_low, self.pool_high = entry["pool_low"], entry["pool_high"]

    def initial_configs(self, seed: int) -> list[dict[str, Any]]:
        """HPO-B's initial design: the seed's 5 random pool rows, as in its
        discrete mode (:func:`~benchmarks.problems.hpob.initial_rows`)."""
        pool = _pool(self.space_id, self.dataset_id)
        return self.space.to_dicts(pool.pool[initial_rows(pool, seed)])

    def accuracy(self, config: dict[str, Any]) -> float:
        """The surrogate's accuracy of a configuration (to maximize)."""
        row = encode(self.space_id, config)
        return float(surrogate_accuracy(self.space_id, self.dataset_id, row)[0])

    def objective(self, config: dict[str, Any]) -> float:
        """The configuration's normalized regret (to minimize; never negative
        where the cached maximum holds)."""
        gap = self.maximum - self.accuracy(config)
        return gap / (self.pool_high - self.pool_low)


def _rows(space_id: str, configs: list[dict[str, Any]]) -> np.ndarray:
    """HPO-B feature rows of configurations (``m x d``)."""
    return np.stack([encode(space_id, c) for c in configs])


def search_maximum(
    space_id: str, dataset_id: str, samples: int = 30_000, seed: int = 0
) -> dict[str, Any]:
    """The surrogate's maximum over the task's space, by a documented search.

    1. every pool row; 2. ``samples`` configurations drawn uniformly over the
    paths (every branch) and ``samples`` drawn by choices; 3. the best 20 of
    these polished coordinate by coordinate (each real parameter over 201
    values of ``[0, 1]``, three rounds). Returns the maximum, its
    configuration and the surrogate's extremes over the pool's rows.
    """
    pool = _pool(space_id, dataset_id)
    space = pool.space

    def score(rows: np.ndarray) -> np.ndarray:
        return surrogate_accuracy(space_id, dataset_id, rows)

    pool_scores = score(pool.raw)
    configs = space.to_dicts(pool.pool)
    scores = list(pool_scores)
    for by in ("path", "choice"):
        X = space.sample(samples, seed=seed, by=by)
        batch = space.to_dicts(X)
        configs += batch
        scores += list(score(_rows(space_id, batch)))
    order = np.argsort(scores)[::-1][:20]
    best_config, best = dict(configs[order[0]]), float(scores[order[0]])
    grid = np.linspace(0.0, 1.0, 201)
    for start in order:
        config = dict(configs[start])
        for _ in range(3):
            for name in [n for n, v in config.items() if isinstance(v, float)]:
                trials = [{**config, name: float(g)} for g in grid]
                values = score(_rows(space_id, trials))
                config = trials[int(np.argmax(values))]
        value = float(score(_rows(space_id, [config]))[0])
        if value > best:
            best_config, best = config, value
    return {
        "maximum": best,
        "argmax": best_config,
        "pool_low": float(pool_scores.min()),
        "pool_high": float(pool_scores.max()),
    }


def main(argv: list[str] | None = None) -> None:
    """``--search``: find and cache every test task's maximum."""
    parser = argparse.ArgumentParser(description="HPO-B surrogate maxima")
    parser.add_argument("--search", action="store_true", required=True)
    parser.add_argument("--samples", type=int, default=30_000)
    args = parser.parse_args(argv)
    tasks = {}
    for space_id, dataset_id in TEST_TASKS:
        entry = search_maximum(space_id, dataset_id, args.samples)
        tasks[f"{space_id}_{dataset_id}"] = entry
        print(space_id, dataset_id, entry["maximum"], entry["pool_high"], flush=True)
    MAXIMA_PATH.parent.mkdir(exist_ok=True)
    payload = {"command": MAXIMA_COMMAND, "samples": args.samples, "tasks": tasks}
    MAXIMA_PATH.write_text(json.dumps(payload, indent=1) + "\n")


#: ``hpobc_<space>_<dataset>``: the continuous-mode problems of the registry.
SURROGATE_PROBLEMS = {
    f"hpobc_{space_id}_{dataset_id}": (
        lambda space_id=space_id, dataset_id=dataset_id: HPOBSurrogateTask(
            space_id, dataset_id
        )
    )
    for space_id, dataset_id in TEST_TASKS
}


if __name__ == "__main__":
    main()
