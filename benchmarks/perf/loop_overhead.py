"""Cost of the loop's own work, and of building a tree's index tensors.

1. Loop overhead: the share of a proposal spent outside model fitting and
   acquisition optimization (encoding, bookkeeping, observations), measured
   on P2 (depth-4 tree, 15 vertices) with ``n`` evaluations in the history:
   ``proposal_seconds - opt.last_timings["fit"] - opt.last_timings["optimize"]``.
2. Tree index build: ``TreeStructure`` for complete binary trees of 15, 63,
   255 and 511 vertices (one continuous and one choice column per inner
   vertex), and the whole ``AddTreeGP`` construction on 100 points.

Usage::

    python -m benchmarks.perf.loop_overhead --n 100 --repeats 5
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import torch

from treebo import TreeOptimizer
from treebo.add_tree import AddTreeGP
from treebo.space.structure import TreeStructure
from treebo.test_functions import GeneralizedJenatton


def binary_tree(depth: int) -> tuple[int, dict]:
    """``(d, hierarchical_dependencies)`` of a complete binary tree."""
    deps: dict[int, dict[int, list[int]]] = {}
    count = [0]

    def new() -> int:
        count[0] += 1
        return count[0] - 1

    def build(level: int) -> list[int]:
        cols = [new()]
        if level < depth:
            choice = new()
            cols.append(choice)
            deps[choice] = {0: build(level + 1), 1: build(level + 1)}
        return cols

    build(0)
    return count[0], deps


def loop_overhead(n: int, repeats: int) -> None:
    problem = GeneralizedJenatton(depth=4, balanced=True)
    space = problem.space
    configs = space.to_dicts(space.sample(n, seed=123))
    opt = TreeOptimizer(space, seed=0, n_initial=5)
    for c in configs:
        opt.tell(c, problem.objective(c))
    rows = []
    for _ in range(repeats + 1):  # the first proposal fits from scratch
        params = opt.ask()
        trial = opt.tell(params, problem.objective(params))
        timings = opt.last_timings
        model_time = timings["fit"] + timings["optimize"]
        rows.append((trial.proposal_seconds, model_time))
    rows = rows[1:]
    total = statistics.median(r[0] for r in rows)
    overhead = statistics.median(r[0] - r[1] for r in rows)
    print(f"P2, n = {n}..{n + repeats}, {repeats} warm proposals")
    print("| proposal s (median) | outside fit + acquisition s | share |")
    print("|---|---|---|")
    print(f"| {total:.3f} | {overhead:.4f} | {overhead / total:.2%} |")


def tree_build(repeats: int) -> None:
    print("\n| vertices | TreeStructure ms | AddTreeGP(100 points) ms |")
    print("|---|---|---|")
    for depth in (3, 5, 7, 8):
        d, deps = binary_tree(depth)
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            tree = TreeStructure(d, deps)
            times.append(time.perf_counter() - t0)
        X = torch.rand(100, d, dtype=torch.float64).round()
        Y = torch.randn(100, 1, dtype=torch.float64)
        model_times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            AddTreeGP(X, Y, deps)  # structure shared through TreeStructure.build
            model_times.append(time.perf_counter() - t0)
        print(
            f"| {tree.num_vertices} | {1e3 * statistics.median(times):.1f} | "
            f"{1e3 * statistics.median(model_times):.1f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(
        f"{platform.machine()}, {torch.get_num_threads()} thread(s), "
        f"{time.strftime('%Y-%m-%d')}\n"
    )
    loop_overhead(args.n, args.repeats)
    tree_build(args.repeats)


if __name__ == "__main__":
    main()
