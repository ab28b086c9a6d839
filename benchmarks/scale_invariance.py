"""The loop on ``c * f + b``: the same proposals as on ``f``?

Runs the default loop on P1(a) for each (c, b), compares every proposal with
the unscaled run's (largest difference in any continuous value, and whether
every choice agrees) and reports log10 regret of ``f`` after the budget.

Usage::

    python benchmarks/scale_invariance.py --seeds 0-4 --budget 15
"""

from __future__ import annotations

import argparse
import math

import torch

if __package__:
    from .summarize import parse_seeds
else:
    from summarize import parse_seeds

from treebo import TreeOptimizer
from treebo.test_functions import Jenatton

SCALES = ((1.0, 0.0), (1e-8, 0.0), (1e-8, 1.0), (1e8, -5.0), (1e-300, 0.0))


def proposals(c: float, b: float, seed: int, budget: int) -> list[dict]:
    problem = Jenatton("paper")
    opt = TreeOptimizer(problem.space, seed=seed)
    for _ in range(budget):
        params = opt.ask()
        opt.tell(params, c * problem.objective(params) + b)
    return [t.params for t in opt.history]


def gap(a: list[dict], b: list[dict]) -> tuple[float, bool]:
    """Largest difference of a continuous value, and whether choices agree."""
    worst, same = 0.0, True
    for p, q in zip(a, b, strict=True):
        if p.keys() != q.keys():
            return math.inf, False
        for name, value in p.items():
            if isinstance(value, float):
                worst = max(worst, abs(value - q[name]))
            else:
                same &= value == q[name]
    return worst, same


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", default="0-4")
    parser.add_argument("--budget", type=int, default=15)
    args = parser.parse_args()
    torch.set_num_threads(1)
    problem = Jenatton("paper")
    print(
        "| c | b | seeds | largest value difference | choices agree | "
        "median log10 regret |"
    )
    print("|---|---|---|---|---|---|")
    seeds = sorted(parse_seeds(args.seeds))
    reference = {s: proposals(1.0, 0.0, s, args.budget) for s in seeds}
    for c, b in SCALES:
        worst, agree, regrets = 0.0, 0, []
        for s in seeds:
            run = (
                reference[s]
                if (c, b) == (1.0, 0.0)
                else proposals(c, b, s, args.budget)
            )
            diff, same = gap(run, reference[s])
            worst, agree = max(worst, diff), agree + same
            best = min(problem.objective(p) for p in run) - problem.optimal_value
            regrets.append(math.log10(best) if best > 0 else -math.inf)
        regrets.sort()
        print(
            f"| {c:g} | {b:g} | {len(seeds)} | {worst:.1e} | {agree} of {len(seeds)} "
            f"| {regrets[len(regrets) // 2]:.2f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
