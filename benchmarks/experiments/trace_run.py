"""Where a treebo run spends its evaluations: one line per trial.

Runs a treebo preset (``benchmarks.methods.treebo``) on one problem and seed and
prints, for every trial, its kind (``initial``, ``bo``, ``local``, ...),
whether the proposal's model used an alternative kernel, the labels of the
space's choices and the value. Used to see, e.g., which branches LogEI
explores on P9 after the initial design.

Usage::

    python -m benchmarks.experiments.trace_run --problem p9_cancer --method treebo \\
        --seed 6 --budget 40
"""

from __future__ import annotations

import argparse

import torch

from benchmarks.methods.treebo import PRESETS
from benchmarks.problems import PROBLEMS
from treebo import TreeOptimizer


def trace(problem_name: str, method: str, seed: int, budget: int) -> list[str]:
    """The run's lines: index, kind, kernel, choice labels, value."""
    problem = PROBLEMS[problem_name]()
    space = problem.space
    opt = TreeOptimizer(space, seed=seed, strategy=PRESETS[method]())
    choices = [space.parameter_names[column] for column in space.choice_columns]
    lines = []
    for index in range(budget):
        params = opt.ask()
        value = problem.objective(params)
        trial = opt.tell(params, value)
        fit = getattr(opt.strategy, "model_fit", None)
        kernel = getattr(fit, "kernel_in_use", None)
        interacting = bool(getattr(kernel, "ancestor_interactions", False))
        labels = " ".join(str(params[c]) for c in choices if c in params)
        lines.append(
            f"{index:3d} {trial.kind:8s} {'int' if interacting else '-':3s} "
            f"{labels:40s} {value:.6g}"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", required=True, choices=sorted(PROBLEMS))
    parser.add_argument("--method", default="treebo")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--budget", type=int, default=40)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    for line in trace(args.problem, args.method, args.seed, args.budget):
        print(line, flush=True)


if __name__ == "__main__":
    main()
