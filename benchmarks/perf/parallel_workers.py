"""Wall-clock time and regret of ``minimize(..., n_workers=k)`` on a slow objective.

Each evaluation of the test problem is made to take ``--eval-seconds`` on
average (a sleep, scaled by a factor in [0.5, 1.5] drawn from the
configuration, so that evaluations finish out of order, as real ones do). The
runs use a thread pool: while ``k`` evaluations are running, the loop fits its
model and proposes in the main thread, treating the running ones as pending.
For every worker count the table gives the median wall-clock time of a run,
its ratio to one worker's (measured in the same invocation), and the median
log10 regret at the end, with a seed-by-seed count against one worker.
Finished runs in ``--out`` are skipped (by problem, workers, seed and budget):
use one output file per ``--eval-seconds``.

Usage::

    python -m benchmarks.perf.parallel_workers --problem p1a --workers 1,3 \\
        --seeds 0-4 --budget 25 --eval-seconds 2
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import time
from pathlib import Path

import torch

from benchmarks.harness import run_missing
from benchmarks.problems import PROBLEMS
from benchmarks.stats import parse_seeds, sign_test
from treebo import minimize


def slow_objective(problem, eval_seconds: float):
    """``problem.objective`` that sleeps ``eval_seconds`` x [0.5, 1.5] first."""

    def objective(params: dict) -> float:
        factor = random.Random(repr(sorted(params.items()))).uniform(0.5, 1.5)
        time.sleep(eval_seconds * factor)
        return problem.objective(params)

    return objective


def run(
    problem_name: str, method: str, seed: int, budget: int, eval_seconds: float
) -> dict:
    """One ``minimize`` run with ``int(method.removeprefix("workers"))`` workers."""
    problem = PROBLEMS[problem_name]()
    workers = int(method.removeprefix("workers"))
    t0 = time.perf_counter()
    result = minimize(
        slow_objective(problem, eval_seconds),
        problem.space,
        budget,
        seed=seed,
        n_workers=workers,
    )
    return {
        "problem": problem_name,
        "method": method,
        "seed": seed,
        "budget": budget,
        "optimal_value": problem.optimal_value,
        "values": [t.value for t in result.history],
        "kinds": [t.kind for t in result.history],
        "run_seconds": time.perf_counter() - t0,
        "eval_seconds": eval_seconds,
    }


def log10_regret(record: dict) -> float:
    best = min(v for v in record["values"] if v is not None)
    regret = best - record["optimal_value"]
    return math.log10(regret) if regret > 0 else -math.inf


def table(records: list[dict]) -> str:
    """Markdown table: wall time, its ratio to one worker, regret at the end."""
    by = {(r["method"], r["seed"]): r for r in records}
    methods = sorted({r["method"] for r in records}, key=lambda m: int(m[7:]))
    base = methods[0]
    lines = [
        f"| workers | seeds | wall s (median) | {base} / this | "
        f"log10 regret (median) | lower / equal / higher than {base} (p) |",
        "|---|---|---|---|---|---|",
    ]
    for method in methods:
        seeds = sorted(s for m, s in by if m == method)
        walls = [by[method, s]["run_seconds"] for s in seeds]
        regrets = [log10_regret(by[method, s]) for s in seeds]
        paired = [s for s in seeds if (base, s) in by]
        ratios = [
            by[base, s]["run_seconds"] / by[method, s]["run_seconds"] for s in paired
        ]
        lo = sum(
            log10_regret(by[method, s]) < log10_regret(by[base, s]) for s in paired
        )
        hi = sum(
            log10_regret(by[method, s]) > log10_regret(by[base, s]) for s in paired
        )
        lines.append(
            f"| {method[7:]} | {len(seeds)} | {statistics.median(walls):.0f} | "
            f"{statistics.median(ratios):.2f}x | {statistics.median(regrets):.2f} | "
            f"{lo} / {len(paired) - lo - hi} / {hi} ({sign_test(lo, hi):.2g}) |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", default="p1a", choices=sorted(PROBLEMS))
    parser.add_argument("--workers", default="1,3")
    parser.add_argument("--seeds", default="0-4")
    parser.add_argument("--budget", type=int, default=25)
    parser.add_argument("--eval-seconds", type=float, default=2.0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--out", default="benchmarks/perf/records/parallel_workers.jsonl"
    )
    args = parser.parse_args()
    if args.eval_seconds < 0:
        parser.error(f"--eval-seconds must be >= 0, got {args.eval_seconds}.")
    torch.set_num_threads(args.threads)
    workers = [int(w) for w in args.workers.split(",")]
    if any(w < 1 for w in workers):
        parser.error(f"--workers must be positive integers, got {args.workers!r}.")
    out = Path(args.out)
    run_missing(
        out,
        [args.problem],
        [f"workers{w}" for w in workers],
        sorted(parse_seeds(args.seeds)),
        args.budget,
        lambda problem, method, seed, budget: run(
            problem, method, seed, budget, args.eval_seconds
        ),
    )
    records = [
        r
        for r in map(json.loads, out.read_text().splitlines())
        if r["problem"] == args.problem
        and r["budget"] == args.budget
        and r["eval_seconds"] == args.eval_seconds
    ]
    print(table(records))


if __name__ == "__main__":
    main()
