"""Run a suite's missing records: ``python -m benchmarks.run SUITE``.

Every suite of :mod:`benchmarks.suites` runs this way, through its runner's
``run(problem, method, seed, budget, checkpoint)``. Examples::

    python -m benchmarks.run conditional                  # every missing run
    python -m benchmarks.run conditional --methods treebo --seeds 0-4
    python -m benchmarks.run validation --out /tmp/check.jsonl
    python -m benchmarks.run real_tasks --budget 100 --jobs > jobs.txt  # to shard
    python -m benchmarks.run hpob --methods treebo --lockstep
    python -m benchmarks.run grid --methods bktf_ei,bktf_rank4   # ablations
    python -m benchmarks.run high_dim --problems star10 --checkpoint /tmp/hd

Each finished run is appended to ``benchmarks/records/SUITE.jsonl`` (or
``--out``) at once; a run already there is skipped, so a suite can be stopped
and resumed. Slow peers (BoTorch's, the high-dimensional vanilla GP) save their
progress under ``--checkpoint``. With ``--jobs`` the missing runs are listed
instead, one command per run, for ``python -m benchmarks.shard`` on a many-core
machine; with ``--lockstep`` they run at once, their model fits batched
(``treebo.loop.lockstep``).
"""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path

import torch

from .harness import missing_runs, run_missing
from .stats import parse_seeds
from .suites import SUITES

RECORDS = Path(__file__).parent / "records"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suite", choices=sorted(SUITES))
    parser.add_argument("--problems", help="comma-separated (default: the suite's)")
    parser.add_argument("--methods", help="comma-separated (default: the suite's)")
    parser.add_argument("--seeds", help="e.g. 0-9 or 0-4,7 (default: the suite's)")
    parser.add_argument(
        "--budget", type=int, help="default: the suite's (or each problem's)"
    )
    parser.add_argument("--out", type=Path, help="default: records/SUITE.jsonl")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--checkpoint", type=Path, help="folder for slow peers")
    parser.add_argument(
        "--jobs", action="store_true", help="list the missing runs as shard jobs"
    )
    parser.add_argument(
        "--lockstep",
        action="store_true",
        help="run the missing runs at once, their fits batched",
    )
    args = parser.parse_args(argv)
    suite = SUITES[args.suite]
    out = args.out or RECORDS / f"{args.suite}.jsonl"
    problems = args.problems.split(",") if args.problems else list(suite.problems)
    methods = args.methods.split(",") if args.methods else list(suite.methods)
    seeds = sorted(parse_seeds(args.seeds)) if args.seeds else list(suite.seeds)
    budget = args.budget or suite.budget
    if args.jobs:
        missing = missing_runs(out, problems, methods, seeds, budget)
        for problem, method, seed in missing:
            print(
                f"benchmarks.run {args.suite} --problems {problem} --methods {method} "
                f"--seeds {seed}" + ("" if budget is None else f" --budget {budget}")
            )
        return
    torch.set_num_threads(args.threads)
    runner = importlib.import_module(suite.runner).run
    run_missing(
        out,
        problems,
        methods,
        seeds,
        budget,
        lambda p, m, s, b: runner(p, m, s, b, args.checkpoint),
        lockstep=args.lockstep,
    )


if __name__ == "__main__":
    main()
