"""Which method has the lowest median, and how sure is that ranking?

A figure such as "median best value no higher than every peer's at 30 and 60
evaluations" compares medians of a few seeds. This script shows, per problem
and checkpoint, each method's median and the bootstrap probability that its
median is no higher than every other method's (seeds resampled with
replacement, independently per method), and whether any method meets the
figure at every checkpoint of every problem.

Usage::

    python -m benchmarks.experiments.median_ranking \\
        benchmarks/records/model_selection.jsonl --methods treebo,random,optuna_tpe,\\
        smac,flat_alt,ax_default --seeds 0-9 --checkpoints 30,60
"""

from __future__ import annotations

import argparse

import numpy as np

from benchmarks.harness import load_records
from benchmarks.stats import checkpoint_values, group_runs, parse_seeds

#: Medians closer than this are equal (the mean of two middle values differs
#: from an equal single value by round-off).
TIE = 1e-12


def lowest_median_probability(
    values: dict[str, np.ndarray], draws: int, rng: np.random.Generator
) -> dict[str, float]:
    """Per method, the bootstrap probability that its median is <= every other's.

    Args:
        values: ``{method: per-seed values}``.
        draws: Bootstrap resamples.
        rng: Random generator.

    Returns:
        ``{method: probability}``; ties (within ``TIE``) count as lowest for
        every tied method.
    """
    medians = {}
    for m, v in values.items():
        idx = rng.integers(0, v.size, size=(draws, v.size))
        medians[m] = np.median(v[idx], axis=1)  # draws
    stacked = np.stack(list(medians.values()))  # methods x draws
    low = stacked.min(axis=0)
    return {m: float(np.mean(med <= low + TIE)) for m, med in medians.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--methods", required=True, help="comma-separated")
    parser.add_argument("--seeds", default=None)
    parser.add_argument("--checkpoints", default="30,60")
    parser.add_argument("--draws", type=int, default=10_000)
    args = parser.parse_args()
    methods = args.methods.split(",")
    keep = None if args.seeds is None else parse_seeds(args.seeds)
    runs = group_runs(load_records(args.files), keep)
    checkpoints = [int(c) for c in args.checkpoints.split(",")]
    problems = sorted({p for p, m in runs if m in methods})
    rng = np.random.default_rng(0)
    meets = dict.fromkeys(methods, True)
    print("| problem | @ | " + " | ".join(methods) + " |")
    print("|---|---|" + "---|" * len(methods))
    for problem in problems:
        for c in checkpoints:
            values = {m: checkpoint_values(runs[(problem, m)], c) for m in methods}
            values = {m: v for m, v in values.items() if v.size}  # runs reached c
            if not values:
                continue
            medians = {m: float(np.median(v)) for m, v in values.items()}
            best = min(medians.values())
            prob = lowest_median_probability(values, args.draws, rng)
            cells = []
            for m in methods:
                if m not in values:
                    meets[m] = False
                    cells.append("-")
                    continue
                lowest = medians[m] <= best + TIE
                meets[m] &= lowest
                mark = "**" if lowest else ""
                cells.append(f"{mark}{medians[m]:.4f}{mark} ({prob[m]:.2f})")
            print(f"| {problem} | {c} | " + " | ".join(cells) + " |")
    print("\nLowest median at every checkpoint of every problem:")
    print(", ".join(m for m, ok in meets.items() if ok) or "no method")


if __name__ == "__main__":
    main()
