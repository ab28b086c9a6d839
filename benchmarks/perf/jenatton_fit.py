"""Seconds to fit the per-leaf models (``treebo.jenatton``) against the data
size and the number of leaves.

For balanced generalized Jenatton trees of 4, 8 and 16 leaves and 50, 100
and 200 points, fits ``JenattonTreeGP`` (``tree`` and ``tree-nonlinear``)
and ``IndependentLeafGP`` with ``fit_leaf_gp`` and prints the median wall
and CPU seconds of ``--repeats`` fits (CPU seconds of this process: the
figure to read on a shared machine) with the number of marginal-likelihood
evaluations.

Usage::

    python -m benchmarks.perf.jenatton_fit --threads 2
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from treebo.jenatton import IndependentLeafGP, JenattonTreeGP, fit_leaf_gp
from treebo.test_functions import GeneralizedJenatton

MODELS = {
    "tree": lambda X, Y, space: JenattonTreeGP(X, Y, space),
    "tree-nonlinear": lambda X, Y, space: JenattonTreeGP(X, Y, space, nonlinear=True),
    "independent": lambda X, Y, space: IndependentLeafGP(X, Y, space),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--leaves", default="4,8,16")
    parser.add_argument("--points", default="50,100,200")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print("| model | leaves | points | wall s | CPU s | evaluations |")
    print("|---|---|---|---|---|---|")
    for leaves in (int(v) for v in args.leaves.split(",")):
        depth = leaves.bit_length()  # 2^(depth - 1) leaves
        problem = GeneralizedJenatton(depth, balanced=True)
        for n in (int(v) for v in args.points.split(",")):
            X = problem.space.sample(n, seed=0)
            Y = problem(X).unsqueeze(-1)
            for name, build in MODELS.items():
                walls, cpus, evaluations = [], [], 0
                for _ in range(args.repeats):
                    model = build(X, Y, problem.space)
                    count = [0]
                    mll = model.marginal_log_likelihood

                    def counted(mll=mll, count=count):
                        count[0] += 1
                        return mll()

                    model.marginal_log_likelihood = counted
                    w0, c0 = time.perf_counter(), time.process_time()
                    fit_leaf_gp(model)
                    walls.append(time.perf_counter() - w0)
                    cpus.append((time.process_time() - c0) / args.threads)
                    evaluations = count[0]
                print(
                    f"| {name} | {leaves} | {n} | {statistics.median(walls):.2f} | "
                    f"{statistics.median(cpus):.2f} | {evaluations} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
