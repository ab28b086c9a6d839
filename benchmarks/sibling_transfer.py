"""Shared components where sibling branches disagree (a negative-transfer check).

``AddTreeKernel(shared_component=True)`` lets the vertices of one depth share a
function. On P1 and P2 siblings agree (every ``r`` is best at 0, every leaf's
``x`` at 0), which is where it helps. This benchmark flips half of them: on the
"flipped" depth-4 tree, internal vertices of odd breadth-first index contribute
``1 - r`` (best at 1) instead of ``r``, and leaves of even rank
``(x - 0.8)^2`` instead of ``x^2``; leaf constants and ``f* = 0.1`` are as in
P2. It runs the default loop with and without shared components on the same
seeds and prints median log10 regret and seed-by-seed counts.

Usage::

    python -m benchmarks.sibling_transfer --seeds 0-9 --budget 30
"""

from __future__ import annotations

import argparse
import math
import statistics

import torch
from torch import Tensor

from benchmarks.summarize import parse_seeds
from treebo import TreeOptimizer
from treebo.test_functions import GeneralizedJenatton

CHECKPOINTS = (10, 15, 20, 25, 30, 50)


class FlippedGeneralizedJenatton(GeneralizedJenatton):
    """P2 with the trends of every other sibling reversed (see the module)."""

    def __init__(self, depth: int = 4) -> None:
        super().__init__(depth=depth, balanced=True)
        tree = self.space.tree
        V = tree.num_vertices
        odd_vertex = torch.arange(V) % 2 == 1
        self._flip_r = odd_vertex & ~self._is_leaf
        rank = (self._leaf_const / 0.1).round().long()
        self._shift = 0.8 * (self._is_leaf & (rank % 2 == 0)).to(torch.float64)
        # The optimum: the best leaf's path, each r at its best bound.
        best_leaf = int(torch.nonzero(rank == 1)[0])
        x = torch.tensor(self._optimizers[0], dtype=torch.float64).unsqueeze(0)
        active = tree.vertex_activity(x)[0]
        for v in range(V):
            if active[v] and not self._is_leaf[v] and self._flip_r[v]:
                x[0, self._vertex_col[v]] = 1.0
        x[0, self._vertex_col[best_leaf]] = float(self._shift[best_leaf])
        self._optimizers = [tuple(x[0].tolist())]

    def _evaluate_true(self, X: Tensor) -> Tensor:
        tree = self.space.tree
        active = tree.vertex_activity(X).to(X)
        value = X[..., self._vertex_col.to(X.device)]
        is_leaf = self._is_leaf.to(X.device)
        r = torch.where(self._flip_r.to(X.device), 1.0 - value, value)
        x = value - self._shift.to(X)
        term = torch.where(is_leaf, x.pow(2) + self._leaf_const.to(X), r)
        return (active * term).sum(-1)


def run(problem, seed: int, budget: int, shared: bool) -> list[float]:
    opt = TreeOptimizer(problem.space, seed=seed, shared_component=shared)
    values = []
    for _ in range(budget):
        params = opt.ask()
        value = problem.objective(params)
        opt.tell(params, value)
        values.append(value)
    return values


def log_regret(values: list[float], k: int, optimum: float) -> float:
    gap = min(values[:k]) - optimum
    return -math.inf if gap <= 0 else math.log10(gap)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0-9")
    parser.add_argument("--budget", type=int, default=30)
    args = parser.parse_args()
    torch.set_num_threads(1)
    problem = FlippedGeneralizedJenatton()
    optimum = problem.optimal_value
    check = problem.evaluate_true(
        torch.tensor(problem._optimizers, dtype=torch.float64)
    )
    assert abs(float(check) - optimum) < 1e-12, "optimizer does not reach f*"
    seeds = sorted(parse_seeds(args.seeds))
    runs = {
        shared: {s: run(problem, s, args.budget, shared) for s in seeds}
        for shared in (True, False)
    }
    cps = [c for c in CHECKPOINTS if c <= args.budget]
    print(f"flipped depth-4 tree, seeds {args.seeds}, budget {args.budget}\n")
    print("| shared_component | " + " | ".join(f"@{c}" for c in cps) + " |")
    print("|---|" + "---|" * len(cps))
    for shared in (True, False):
        meds = [
            statistics.median(log_regret(runs[shared][s], c, optimum) for s in seeds)
            for c in cps
        ]
        print(f"| {shared} | " + " | ".join(f"{m:.2f}" for m in meds) + " |")
    counts = []
    for c in cps:
        on = [log_regret(runs[True][s], c, optimum) for s in seeds]
        off = [log_regret(runs[False][s], c, optimum) for s in seeds]
        lower = sum(a < b for a, b in zip(on, off, strict=True))
        higher = sum(a > b for a, b in zip(on, off, strict=True))
        counts.append(f"{lower} / {len(seeds) - lower - higher} / {higher}")
    print(
        "\nshared on vs off, lower / equal / higher: "
        + ", ".join(f"@{c}: {n}" for c, n in zip(cps, counts, strict=True))
    )


if __name__ == "__main__":
    main()
