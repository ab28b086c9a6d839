"""Seconds per proposal (model fit + acquisition optimization) at a given n.

For each method, the same ``n`` observed points of P1(a) (a fixed random design)
are given, and one proposal is timed ``--repeats`` times; the median is printed
with the ratio to BoTorch's HierarchicalConditionalKernelGP. treebo is timed
twice: from scratch ("cold", as the peers always are) and warm-started from the
previous fit, which is what its loop does after the first proposal. The local
refinement step (run in addition when the global proposal lies next to the
incumbent) is timed on its own.

Usage::

    python -m benchmarks.perf.proposal_time --n 100 --repeats 3
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import torch

from benchmarks.methods.botorch_peers import botorch_proposal
from treebo import TreeOptimizer
from treebo.add_tree import LocalStepOptions, LocalSteps
from treebo.test_functions import Jenatton


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    problem = Jenatton("paper")
    space = problem.space
    X = space.sample(args.n, seed=123)
    values = [problem.objective(c) for c in space.to_dicts(X)]
    y = -torch.tensor(values, dtype=torch.float64).unsqueeze(-1)
    times: dict[str, list[float]] = {}
    # The loop's default (noise inferred) and the same loop on a declared
    # deterministic objective (noise at a floor of 1e-6).
    variants = {
        "log_ei": {"model": "add_tree"},
        "log_ei, noise='deterministic'": {
            "model": "add_tree",
            "noise": "deterministic",
        },
        "add_tree_ucb": {"model": "add_tree_ucb"},
    }
    for label, options in variants.items():
        for _ in range(args.repeats):
            opt = TreeOptimizer(space, seed=0, **options)
            for c, v in zip(space.to_dicts(X), values, strict=True):
                opt.tell(c, v)
            for mode in ("cold", "warm"):
                t0 = time.perf_counter()
                opt.strategy.propose(opt.observations())
                times.setdefault(f"treebo {label} ({mode})", []).append(
                    time.perf_counter() - t0
                )
    # The loop's local refinement step, which runs after the global proposal
    # when that proposal lies next to the incumbent.
    X_loop, y_loop = opt.training_data()
    steps = LocalSteps(LocalStepOptions(mean="constant"))
    for r in range(args.repeats):
        t0 = time.perf_counter()
        steps.step(space, X_loop, y_loop, seed=r)
        times.setdefault("treebo local refinement step", []).append(
            time.perf_counter() - t0
        )
    for kind in ("hck_logei", "flat_logei"):
        for r in range(args.repeats):
            t0 = time.perf_counter()
            botorch_proposal(kind, space, X, y, seed=r)
            times.setdefault(kind, []).append(time.perf_counter() - t0)
    ref = statistics.median(times["hck_logei"])
    print(
        f"P1(a), n={args.n}, {args.repeats} repeats, {platform.machine()}, "
        f"{torch.get_num_threads()} thread(s), {time.strftime('%Y-%m-%d')}\n"
    )
    print("| method | median s/proposal | HCK / method |")
    print("|---|---|---|")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"| {name} | {med:.2f} | {ref / med:.1f}x |")


if __name__ == "__main__":
    main()
