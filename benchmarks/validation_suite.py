"""The loop on the validation suite: regret and wrong branches against peers.

Runs ``benchmarks/validation_problems.py``'s problems with treebo's default,
random search and BoTorch's flattened GP (``flat_logei``), then prints one
markdown table: per problem and method, the median [IQR] of log10 regret (of
the noise-free values) at 25 and 50 evaluations, and in how many seeds the
best point after 30 evaluations lies on a wrong branch of the root choice.

Usage::

    python benchmarks/validation_suite.py --seeds 0-4 --budget 50
    python benchmarks/validation_suite.py --summary   # table of the records only

Records go to ``--out`` (default ``benchmarks/out/validation.jsonl``);
finished runs are skipped, so the suite can be stopped and resumed.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from pathlib import Path

import torch

if __package__:
    from .bo_benchmark import run, run_missing
    from .summarize import parse_seeds
    from .validation_problems import VALIDATION_PROBLEMS
else:
    from bo_benchmark import run, run_missing
    from summarize import parse_seeds
    from validation_problems import VALIDATION_PROBLEMS

METHODS = ("treebo", "random", "flat_logei")


def log_regret(record: dict, n: int) -> float:
    """log10 of the best noise-free value's regret among the first ``n``."""
    values = record.get("true_values", record["values"])[:n]
    regret = min(values) - record["optimal_value"]
    return -math.inf if regret <= 0 else math.log10(regret)


def on_wrong_branch(record: dict, n: int) -> bool:
    """Whether the best noise-free point among the first ``n`` is on a branch
    of the root choice other than the optimum's."""
    values = record["true_values"][:n]
    best = min(range(len(values)), key=values.__getitem__)
    return record["branches"][best] != record["best_branch"]


def _median_iqr(xs: list[float]) -> str:
    if len(xs) < 2:
        return f"{xs[0]:.2f}" if xs else "-"
    q1, q2, q3 = statistics.quantiles(xs, n=4, method="inclusive")
    return f"{q2:.2f} [{q1:.2f}, {q3:.2f}]"


def table(records: list[dict], methods: list[str]) -> str:
    """The markdown table of ``records``."""
    lines = [
        "| problem | method | seeds | log10 regret @25 | log10 regret @50 "
        "| wrong branch @30 |",
        "|---|---|---|---|---|---|",
    ]
    problems = sorted({r["problem"] for r in records})
    for problem in problems:
        for method in methods:
            runs = [
                r for r in records if r["problem"] == problem and r["method"] == method
            ]
            if not runs:
                continue
            at25 = [log_regret(r, 25) for r in runs]
            at50 = [log_regret(r, 50) for r in runs if r["budget"] >= 50]
            wrong = sum(on_wrong_branch(r, 30) for r in runs)
            lines.append(
                f"| {problem} | {method} | {len(runs)} | {_median_iqr(at25)} "
                f"| {_median_iqr(at50)} | {wrong} of {len(runs)} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--problems", default=",".join(VALIDATION_PROBLEMS))
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--seeds", default="0-4")
    parser.add_argument("--budget", type=int, default=50)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--out", type=Path, default=Path("benchmarks/out/validation.jsonl")
    )
    parser.add_argument("--summary", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    methods = args.methods.split(",")
    if not args.summary:
        run_missing(
            args.out,
            args.problems.split(","),
            methods,
            sorted(parse_seeds(args.seeds)),
            args.budget,
            lambda problem, method, seed, budget: run(problem, method, seed, budget),
        )
    records = [json.loads(line) for line in args.out.read_text().splitlines()]
    records = [r for r in records if r["problem"] in args.problems.split(",")]
    print(table(records, methods))


if __name__ == "__main__":
    main()
