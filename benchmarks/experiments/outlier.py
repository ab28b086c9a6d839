"""One diverged evaluation: does a single outcome of 1e300 spoil a run?

P1(a), the default loop, 10 seeds, 50 evaluations: each seed once clean and
once with evaluation ``k`` (between 5 and 29, by seed) returning ``1e300``
instead of its value (a training run that blew up). The regret is that of the
best value observed. Figure to reach: the median regret at 50 with the
outlier is less than twice the clean median.

Usage::

    python -m benchmarks.experiments.outlier --method treebo --out FILE
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from benchmarks.harness import load_records, stamp
from benchmarks.methods.treebo import run_treebo
from benchmarks.problems import make_problem
from treebo.loop import initial_design
from treebo.loop.design import default_initial_size

DIVERGED = 1e300


def diverging_at(seed: int) -> int:
    """The evaluation that diverges in the seed's run (5 to 29)."""
    return 5 + (7 * seed) % 25


def run(method: str, seed: int, budget: int, outlier: bool) -> dict:
    problem = make_problem("p1a")
    objective, calls = problem.objective, []

    def evaluate(params: dict) -> float:
        calls.append(params)
        if outlier and len(calls) - 1 == diverging_at(seed):
            return DIVERGED
        return objective(params)

    problem.objective = evaluate
    design = initial_design(problem.space, default_initial_size(problem.space), seed)
    values, seconds = run_treebo(method, problem, design, seed, budget)
    best = np.minimum.accumulate(values) - problem.optimal_value
    record = {
        "method": method,
        "seed": seed,
        "outlier": outlier,
        "regret": best.tolist(),
        "proposal_seconds": seconds,
    }
    record.update(stamp(sum(seconds)))
    return record


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--method", default="treebo")
    parser.add_argument("--seeds", nargs="+", type=int, default=list(range(10)))
    parser.add_argument("--budget", type=int, default=50)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    done = {(r["method"], r["seed"], r["outlier"]) for r in load_records([args.out])}
    for seed in args.seeds:
        for outlier in (False, True):
            if (args.method, seed, outlier) in done:
                continue
            record = run(args.method, seed, args.budget, outlier)
            with open(args.out, "a") as fh:
                fh.write(json.dumps(record) + "\n")
            print(seed, outlier, f"{record['regret'][-1]:.3g}", flush=True)
    records = [r for r in load_records([args.out]) if r["method"] == args.method]
    for outlier in (False, True):
        final = [r["regret"][-1] for r in records if r["outlier"] == outlier]
        median = float(np.median(final))
        print(f"outlier={outlier}: median regret at {args.budget} {median:.3g}")


if __name__ == "__main__":
    main()
