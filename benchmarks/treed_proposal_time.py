"""Seconds per proposal of the treed loop against SingleTaskGP + optimize_acqf.

Both get the same ``n`` uniformly random observations of each problem; one
proposal from scratch is timed: ``TreeOptimizer(model="treed")`` (partition,
weighted pseudo-likelihood fit, EI on a Sobol set with polishing) and
BoTorch's ``SingleTaskGP`` with LogEI and ``optimize_acqf`` (``flat_logei``).

Usage::

    python -m benchmarks.treed_proposal_time --problems rkhs,exp2d --n 100
"""

from __future__ import annotations

import argparse
import time
import warnings

import torch

from benchmarks.bo_benchmark import botorch_proposal
from benchmarks.nonstationary_problems import NONSTATIONARY_PROBLEMS
from treebo import TreeOptimizer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", default="rkhs,exp2d")
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    for name in args.problems.split(","):
        problem = NONSTATIONARY_PROBLEMS[name]()
        space = problem.space
        X = space.sample(args.n, seed=args.seed)
        values = [problem.objective(space.to_dict(x)) for x in X]
        y = -torch.tensor(values, dtype=torch.float64).unsqueeze(-1)
        t0 = time.perf_counter()
        botorch_proposal("flat_logei", space, X, y, args.seed)
        peer = time.perf_counter() - t0
        opt = TreeOptimizer(space, model="treed", seed=args.seed, n_initial=args.n)
        for x, v in zip(X, values, strict=True):
            opt.tell(space.to_dict(x), v)
        t0 = time.perf_counter()
        opt.ask()
        treed = time.perf_counter() - t0
        timings = opt.strategy.timings
        print(
            f"{name}: n={args.n} leaves={opt.strategy.last_model.num_leaves} "
            f"treed {treed:.2f} s (fit {timings['fit']:.2f}, acquisition "
            f"{timings['optimize']:.2f}), SingleTaskGP + optimize_acqf {peer:.2f} s"
        )


if __name__ == "__main__":
    main()
