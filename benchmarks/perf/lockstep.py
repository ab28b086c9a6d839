"""Runs in lockstep against the same runs one by one, in one process.

The treebo runs of one HPO-B search space (its test tasks times ``--seeds``, up to
``--budget`` rows each, HPO-B's 5 initial rows included), or with ``--space p1a`` of
P1(a) over its continuous space (one run per seed), run twice from the same global
random state: all at once through
[`run_in_lockstep()`][treebo.loop.lockstep.run_in_lockstep] (their fits and
acquisitions batched), then one after another. The record holds both wall times, how
many runs chose the same configurations both ways (P1(a): to 1e-6 of each value), and
the lockstep's rounds, batched evaluations (and how many requests each answered on
average) of fits and of acquisitions, and fallbacks. ``--modes lockstep`` times the
lockstep alone.

Usage::

    python -m benchmarks.perf.lockstep --space 5971 --seeds 0-4 --budget 30
    python -m benchmarks.perf.lockstep --space p1a --seeds 0-15 --budget 50
"""

from __future__ import annotations

import argparse
import logging
import math
import time
import warnings
from pathlib import Path

import torch

from benchmarks.harness import stamp
from benchmarks.hpob import run_method
from benchmarks.perf import append_record
from benchmarks.problems.hpob import TEST_TASKS, HPOBTask
from benchmarks.stats import parse_seeds
from treebo import TreeOptimizer
from treebo.loop.lockstep import Lockstep
from treebo.test_functions import Jenatton

RECORDS = Path(__file__).parent / "records" / "lockstep.jsonl"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--space", default="5971", help="an HPO-B search space id")
    parser.add_argument("--seeds", default="0-4")
    parser.add_argument("--budget", type=int, default=30)
    parser.add_argument("--modes", default="lockstep,alone")
    parser.add_argument("--out", type=Path, default=RECORDS)
    args = parser.parse_args(argv)
    modes = args.modes.split(",")
    if not set(modes) <= {"lockstep", "alone"} or "lockstep" not in modes:
        raise SystemExit("--modes must be 'lockstep' or 'lockstep,alone'.")
    seeds = sorted(parse_seeds(args.seeds))
    torch.set_num_threads(1)
    if args.space == "p1a":
        runs = [(None, seed) for seed in seeds]

        def functions():
            return [lambda s=s: p1a_run(s, args.budget) for _, s in runs]

    else:
        tasks = [HPOBTask(s, d) for s, d in TEST_TASKS if s == args.space]
        if not tasks:
            raise SystemExit(f"--space {args.space!r} has no HPO-B test task.")
        runs = [(task, seed) for task in tasks for seed in seeds]

        def functions():
            return [
                lambda t=t, s=s: run_method(t, "treebo", s, args.budget)
                for t, s in runs
            ]

    state = torch.get_rng_state()
    lockstep = Lockstep(functions())
    t0 = time.perf_counter()
    outcomes = lockstep.run()
    lockstep_s = time.perf_counter() - t0
    for (task, seed), (_, error) in zip(runs, outcomes, strict=True):
        if error is not None:
            name = "p1a" if task is None else f"{task.space_id}_{task.dataset_id}"
            raise RuntimeError(f"{name} seed {seed} failed in lockstep") from error
    record = {
        "space": args.space,
        "runs": len(runs),
        "budget": args.budget,
        "lockstep_s": lockstep_s,
        "rounds": lockstep.rounds,
        "evaluations": lockstep.evaluations,
        "mean_batch": lockstep.batched / max(lockstep.evaluations, 1),
        "fallbacks": lockstep.fallbacks,
        "acquisition_evaluations": lockstep.acquisitions.evaluations,
        "acquisition_mean_batch": lockstep.acquisitions.batched
        / max(lockstep.acquisitions.evaluations, 1),
        "acquisition_fallbacks": lockstep.acquisitions.fallbacks,
    }
    if "alone" in modes:
        alone, t0 = [], time.perf_counter()
        for function in functions():
            torch.set_rng_state(state)
            alone.append(function())
        record["alone_s"] = time.perf_counter() - t0
        record["same_rows"] = sum(
            same(rows, mine) for (rows, _), mine in zip(outcomes, alone, strict=True)
        )
        if args.space == "p1a":  # each run's best value, both ways (minimum 0.1)
            record["lockstep_best"] = [p1a_best(rows) for rows, _ in outcomes]
            record["alone_best"] = [p1a_best(rows) for rows in alone]
    record.update(stamp(record["lockstep_s"]))
    append_record(args.out, record)


def p1a_run(seed: int, budget: int) -> list[dict]:
    """treebo's default run on P1(a) (the Jenatton function, continuous)."""
    problem = Jenatton()
    logging.getLogger("treebo").setLevel(logging.WARNING)
    warnings.simplefilter("ignore")
    opt = TreeOptimizer(problem.space, seed=seed)
    for _ in range(budget):
        params = opt.ask()
        opt.tell(params, problem.objective(params))
    return [t.params for t in opt.history]


def p1a_best(rows: list[dict]) -> float:
    """The best P1(a) value among a run's configurations."""
    problem = Jenatton()
    return min(problem.objective(params) for params in rows)


def same(a, b) -> bool:
    """The same rows, or the same configurations with reals to 1e-6."""
    if not isinstance(a, list) or not a or not isinstance(a[0], dict):
        return a == b
    return len(a) == len(b) and all(
        x.keys() == y.keys()
        and all(
            math.isclose(v, y[k], rel_tol=1e-6, abs_tol=1e-8)
            if isinstance(v, float)
            else v == y[k]
            for k, v in x.items()
        )
        for x, y in zip(a, b, strict=True)
    )


if __name__ == "__main__":
    main()
