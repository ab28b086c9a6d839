"""AddTreeGP inside Ax: the paper's model against the settings of treebo's loop.

``add_tree_generation_strategy`` runs Sobol trials, then Ax's modular BoTorch
generator (qLogNEI, Ax's acquisition optimizer) with :class:`AddTreeGP`. This
script compares, on the same Sobol trials per seed:

- ``ax_plain``: ``AddTreeGP``'s own defaults (Definition 4 exactly) and
  BoTorch's likelihood (the strategy's default before session 10);
- ``ax_loop``: the model of :class:`treebo.TreeOptimizer`'s LogEI loop
  (``LOOP_MODEL_OPTIONS``: output scales and lengthscales shared by depth, an
  offset per vertex, shared components per slot; noise floor 1e-6);
- ``ax_opts``: ``LOOP_MODEL_OPTIONS`` with BoTorch's likelihood (the
  strategy's default since session 10);
- ``ax_floor``: ``AddTreeGP``'s defaults with the noise floor 1e-6.

Every setting is pinned here, whatever the strategy's defaults. The loop's
local refinement has no counterpart in Ax and is not part of any setting.

Usage::

    python -m benchmarks.ax_settings --problems p1a,p2 --seeds 0-9 --budget 25 \\
        --settings ax_plain,ax_loop,ax_opts,ax_floor \\
        --out benchmarks/out/ax_settings.jsonl
    python benchmarks/summarize.py benchmarks/out/ax_settings.jsonl --paired ax_plain
"""

from __future__ import annotations

import argparse
import logging
import time
import warnings
from pathlib import Path
from typing import Any

import torch

from benchmarks.bo_benchmark import PROBLEMS, run_missing
from benchmarks.summarize import parse_seeds
from treebo.integrations.ax import (
    LOOP_MODEL_OPTIONS,
    add_tree_generation_strategy,
    ax_search_space,
    tree_space_from_ax,
)

#: The model settings of ``TreeOptimizer(acquisition="log_ei")``.
LOOP_SETTINGS: dict[str, Any] = {
    "model_options": LOOP_MODEL_OPTIONS,
    "noise_floor": 1e-6,
}
SETTINGS: dict[str, dict[str, Any]] = {
    "ax_plain": {"model_options": {}, "noise_floor": None},
    "ax_loop": LOOP_SETTINGS,
    # Ablations: the loop's model options with BoTorch's likelihood, and the
    # loop's noise floor with AddTreeGP's default options.
    "ax_opts": {"model_options": LOOP_MODEL_OPTIONS, "noise_floor": None},
    "ax_floor": {"model_options": {}, "noise_floor": 1e-6},
}


def run(problem_name: str, setting: str, seed: int, budget: int) -> dict:
    """One Ax run (Sobol + AddTreeGP) minimizing the problem."""
    from ax.core.data import Data
    from ax.core.experiment import Experiment
    from ax.core.objective import Objective
    from ax.core.optimization_config import OptimizationConfig
    from pandas import DataFrame

    problem = PROBLEMS[problem_name]()
    search_space = ax_search_space(problem.space)
    space = tree_space_from_ax(search_space)
    experiment = Experiment(
        name=f"{problem_name}_{setting}_{seed}",
        search_space=search_space,
        optimization_config=OptimizationConfig(
            Objective("-f", metric_name_to_signature={"f": "f"})
        ),
    )
    n_initial = min(20, max(5, problem.space.num_paths + 1))  # as TreeOptimizer
    strategy = add_tree_generation_strategy(
        num_initial_trials=n_initial, seed=seed, **SETTINGS[setting]
    )
    values, proposal_seconds = [], []
    for _ in range(budget):
        t0 = time.perf_counter()
        (generator_run,) = strategy.gen(experiment=experiment, n=1)[0]
        if len(values) >= n_initial:
            proposal_seconds.append(time.perf_counter() - t0)
        trial = experiment.new_trial(generator_run=generator_run)
        params = dict(trial.arm.parameters)
        space.validate(params)
        value = problem.objective(params)
        values.append(value)
        trial.mark_running(no_runner_required=True)
        row = {
            "arm_name": trial.arm.name,
            "metric_name": "f",
            "metric_signature": "f",
            "mean": value,
            "sem": 0.0,
            "trial_index": trial.index,
        }
        experiment.attach_data(Data(df=DataFrame([row])))
        trial.mark_completed()
    return {
        "problem": problem_name,
        "method": setting,
        "seed": seed,
        "budget": budget,
        "optimal_value": problem.optimal_value,
        "values": values,
        "proposal_seconds": proposal_seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", default="p1a,p2")
    parser.add_argument("--settings", default="ax_plain,ax_loop")
    parser.add_argument("--seeds", default="0-9")
    parser.add_argument("--budget", type=int, default=30)
    parser.add_argument("--out", default="benchmarks/out/ax_settings.jsonl")
    args = parser.parse_args()
    torch.set_num_threads(1)
    logging.disable(logging.WARNING)
    warnings.simplefilter("ignore")
    run_missing(
        Path(args.out),
        args.problems.split(","),
        args.settings.split(","),
        sorted(parse_seeds(args.seeds)),
        args.budget,
        run,
    )


if __name__ == "__main__":
    main()
