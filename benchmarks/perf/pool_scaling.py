"""Seconds and memory of one proposal from a pool, against the pool's size.

HPO-B's SVM space (``benchmarks/problems/hpob.py``, 4 paths) with random
pools of 10^3 to 10^5 configurations and ``n`` observed points: one
``TreeOptimizer.ask(candidates=pool)`` of the default loop (fit and pool
scoring), beside a flattened ``SingleTaskGP`` with LogEI scored over the same
pool (its fit and scoring), and the growth of the process's peak resident
memory during treebo's scoring.

Usage::

    python -m benchmarks.perf.pool_scaling --n 100 --sizes 1000 10000 100000
"""

from __future__ import annotations

import argparse
import platform
import resource
import time
import warnings
from pathlib import Path

import torch
from botorch.acquisition import LogExpectedImprovement
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from gpytorch.mlls import ExactMarginalLogLikelihood

from benchmarks.perf import append_record
from benchmarks.problems.hpob import svm_space
from treebo import TreeOptimizer
from treebo.optim.pool import optimize_acqf_pool

RECORDS = Path(__file__).parent / "records" / "pool_scaling.jsonl"


def objective(config: dict) -> float:
    """A smooth accuracy-like surface with a cost-gamma interaction."""
    base = {"radial": 0.9, "linear": 0.8, "polynomial": 0.85}[config["kernel"]]
    gamma = config.get("gamma", 0.5)
    return base - (config["cost"] - gamma) ** 2 - 0.1 * config.get("degree", 0.0)


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--sizes", nargs="+", type=int, default=[1000, 10_000, 100_000])
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    space = svm_space()
    for size in args.sizes:
        pool = space.canonicalize(space.sample(size + args.n, seed=size))
        observed, pool = pool[: args.n], pool[args.n :]
        opt = TreeOptimizer(space, maximize=True, n_initial=1, seed=0)
        configs = space.to_dicts(observed)
        for config in configs:
            opt.tell(config, objective(config))
        before = peak_mib()
        t0 = time.perf_counter()
        opt.ask(candidates=pool)
        treebo_s = time.perf_counter() - t0
        grown = peak_mib() - before
        X, y = observed, opt.training_data()[1]
        t0 = time.perf_counter()
        model = SingleTaskGP(X, y)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
        optimize_acqf_pool(LogExpectedImprovement(model, best_f=y.max()), pool)
        flat_s = time.perf_counter() - t0
        record = {
            "pool": size,
            "n": args.n,
            "treebo": treebo_s,
            "flat_gp": flat_s,
            "peak_growth_mib": grown,
            "machine": f"{platform.machine()} {torch.get_num_threads()}t",
            "date": time.strftime("%Y-%m-%d"),
        }
        append_record(RECORDS, record)


if __name__ == "__main__":
    main()
