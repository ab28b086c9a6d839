"""Shared components where sibling branches disagree (a negative-transfer check).

``AddTreeKernel(shared_component=True)`` lets the vertices of one depth share a
function. On P1 and P2 siblings agree (every ``r`` is best at 0, every leaf's
``x`` at 0), which is where it helps. This benchmark flips half of them: on the
"flipped" depth-4 tree, internal vertices of odd breadth-first index contribute
``1 - r`` (best at 1) instead of ``r``, and leaves of even rank
``(x - 0.8)^2`` instead of ``x^2``; leaf constants and ``f* = 0.1`` are as in
P2.

The "unrelated" problem has siblings that share nothing but their slot: a
root parameter ``r`` and a choice among three leaves of different dimension
and shape, each on ``[0, 1]^d``: a rescaled Branin (2-D, minimum 0.3), a
rotated, rippled quadratic (3-D, minimum 0, the optimum) and a 1-D wave with
five local minima (minimum 0.2). The shared component of the leaves' slot
then couples unrelated parameters (zero-padded to 3-D); only its learned scale
can switch it off.

Each problem runs the default loop with and without shared components on the
same seeds and prints median log10 regret and seed-by-seed counts.

Usage::

    python -m benchmarks.sibling_transfer --seeds 0-9 --budget 30
    python -m benchmarks.sibling_transfer --problem unrelated --seeds 0-9 \\
        --out benchmarks/out/sibling_unrelated.jsonl
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from dataclasses import replace

import torch
from torch import Tensor

from benchmarks.summarize import parse_seeds
from treebo import Choice, Real, TreeOptimizer, TreeSpace, Vertex
from treebo.strategies import AddTreeOptions
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


class UnrelatedLeaves:
    """Three sibling leaves of unrelated shape and dimension (see the module).

    Attributes:
        space: ``r`` on the root, and ``leaf`` choosing ``"branin"`` (``b1``,
            ``b2``), ``"ridge"`` (``h1``, ``h2``, ``h3``) or ``"wave"`` (``w``).
        optimal_value: 0, at ``optimal_params``.
    """

    RIDGE_CENTER = (0.62, 0.18, 0.45)
    WAVE_CENTER = 0.83
    R_CENTER = 0.37
    optimal_value = 0.0

    def __init__(self) -> None:
        def unit(*names: str) -> list[Real]:
            return [Real(n, 0.0, 1.0) for n in names]

        leaves = {
            "branin": Vertex(unit("b1", "b2")),
            "ridge": Vertex(unit("h1", "h2", "h3")),
            "wave": Vertex(unit("w")),
        }
        self.space = TreeSpace(Vertex(unit("r"), [Choice("leaf", leaves)]))
        h1, h2, h3 = self.RIDGE_CENTER
        self.optimal_params = {
            "r": self.R_CENTER,
            "leaf": "ridge",
            "h1": h1,
            "h2": h2,
            "h3": h3,
        }

    def objective(self, params: dict) -> float:
        """The value of one configuration (a dict of active parameters)."""
        value = 0.5 * (params["r"] - self.R_CENTER) ** 2
        leaf = params["leaf"]
        if leaf == "branin":
            x1, x2 = 15.0 * params["b1"] - 5.0, 15.0 * params["b2"]
            branin = (
                (x2 - 5.1 / (4 * math.pi**2) * x1**2 + 5.0 / math.pi * x1 - 6.0) ** 2
                + 10.0 * (1.0 - 1.0 / (8.0 * math.pi)) * math.cos(x1)
                + 10.0
            )
            # Branin's minimum is 5 / (4 pi).
            return value + (branin - 5.0 / (4.0 * math.pi)) / 50.0 + 0.3
        if leaf == "ridge":
            c1, c2, c3 = self.RIDGE_CENTER
            d1, d2, d3 = params["h1"] - c1, params["h2"] - c2, params["h3"] - c3
            quad = 2.0 * d1**2 + 1.5 * d1 * d2 + 0.5 * d2**2 + 4.0 * d3**2
            return value + quad + 0.3 * (1.0 - math.cos(6.0 * math.pi * d3))
        d = params["w"] - self.WAVE_CENTER
        return value + 4.0 * d**2 + 0.5 * math.sin(5.0 * math.pi * d) ** 2 + 0.2


PROBLEMS = {"flipped": FlippedGeneralizedJenatton, "unrelated": UnrelatedLeaves}


def run(problem, seed: int, budget: int, shared: bool) -> list[float]:
    options = AddTreeOptions()
    kernel = replace(options.kernel, shared_component=shared)
    opt = TreeOptimizer(
        problem.space, seed=seed, options=replace(options, kernel=kernel)
    )
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
    parser.add_argument("--problem", choices=sorted(PROBLEMS), default="flipped")
    parser.add_argument("--out", default=None, help="JSONL file for the runs")
    args = parser.parse_args()
    torch.set_num_threads(1)
    problem = PROBLEMS[args.problem]()
    optimum = problem.optimal_value
    seeds = sorted(parse_seeds(args.seeds))
    runs = {
        shared: {s: run(problem, s, args.budget, shared) for s in seeds}
        for shared in (True, False)
    }
    if args.out:
        with open(args.out, "a") as fh:
            for shared, by_seed in runs.items():
                for seed, values in by_seed.items():
                    record = {
                        "problem": args.problem,
                        "shared_component": shared,
                        "seed": seed,
                        "optimal_value": optimum,
                        "values": values,
                        "date": time.strftime("%Y-%m-%d"),
                    }
                    fh.write(json.dumps(record) + "\n")
    cps = [c for c in CHECKPOINTS if c <= args.budget]
    print(f"{args.problem}, seeds {args.seeds}, budget {args.budget}\n")
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
