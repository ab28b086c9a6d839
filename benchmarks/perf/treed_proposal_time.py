"""Seconds per proposal of the treed loop against SingleTaskGP + optimize_acqf.

Every method gets the same ``n`` uniformly random observations of each
problem; one proposal from scratch is timed per seed (the fastest of
``--repeats`` identical proposals, which discounts other processes'
interference): ``TreeOptimizer``
with a treed method of ``benchmarks.methods.treebo`` (``treed``: the defaults;
``treed_noprune``: paper 003's unpruned tree; see
``benchmarks.methods.treebo.PRESETS``) (partition, weighted
pseudo-likelihood fit, EI on a Sobol set with polishing) and BoTorch's
``SingleTaskGP`` with LogEI and ``optimize_acqf`` (``flat_logei``). Medians
over the seeds.

Usage::

    python -m benchmarks.perf.treed_proposal_time --problems rkhs,exp2d --n 100 \\
        --seeds 0-4 --methods treed,treed_noprune --repeats 3
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import torch

from benchmarks.methods.botorch_peers import botorch_proposal
from benchmarks.methods.treebo import PRESETS
from benchmarks.problems.nonstationary import NONSTATIONARY_PROBLEMS
from treebo import TreeOptimizer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", default="rkhs,exp2d")
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--seeds", default="0-4")
    parser.add_argument("--methods", default="treed")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    lo, _, hi = args.seeds.partition("-")
    seeds = range(int(lo), int(hi or lo) + 1)
    print(
        "| problem | method | leaves | s/proposal (fit + acquisition) | "
        "SingleTaskGP s | ratio |"
    )
    print("|---|---|---|---|---|---|")
    for name in args.problems.split(","):
        problem = NONSTATIONARY_PROBLEMS[name]()
        space = problem.space
        rows: dict[str, list[tuple[float, float, float, int]]] = {}
        peer = []
        for seed in seeds:
            X = space.sample(args.n, seed=seed)
            values = [problem.objective(space.to_dict(x)) for x in X]
            y = -torch.tensor(values, dtype=torch.float64).unsqueeze(-1)
            times = []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                botorch_proposal("flat_logei", space, X, y, seed)
                times.append(time.perf_counter() - t0)
            peer.append(min(times))
            for method in args.methods.split(","):
                runs = []
                for _ in range(args.repeats):
                    strategy = PRESETS[method]()
                    opt = TreeOptimizer(
                        space, seed=seed, n_initial=args.n, strategy=strategy
                    )
                    for x, v in zip(X, values, strict=True):
                        opt.tell(space.to_dict(x), v)
                    t0 = time.perf_counter()
                    opt.ask()
                    total = time.perf_counter() - t0
                    t = opt.last_timings
                    leaves = opt.strategy.last_model.num_leaves
                    runs.append((total, t["fit"], t["optimize"], leaves))
                rows.setdefault(method, []).append(min(runs))
        stgp = statistics.median(peer)
        for method, runs in rows.items():
            columns = zip(*runs, strict=True)
            total, fit, acq, leaves = (statistics.median(c) for c in columns)
            print(
                f"| {name} | {method} | {leaves:g} | {total:.2f} ({fit:.2f} + "
                f"{acq:.2f}) | {stgp:.2f} | {total / stgp:.1f}x |"
            )


if __name__ == "__main__":
    main()
