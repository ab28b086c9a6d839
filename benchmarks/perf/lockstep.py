"""HPO-B runs in lockstep against the same runs one by one, in one process.

The treebo runs of one HPO-B search space (its test tasks times ``--seeds``, up to
``--budget`` rows each, HPO-B's 5 initial rows included) run twice from the same
global random state: all at once through
[`run_in_lockstep()`][treebo.loop.lockstep.run_in_lockstep] (their fits batched), then
one after another. The record holds both wall times, how many runs chose the same rows
both ways, and the lockstep's rounds, batched evaluations (and how many requests each
answered on average) and fallbacks. ``--modes lockstep`` times the lockstep alone.

Usage::

    python -m benchmarks.perf.lockstep --space 5971 --seeds 0-4 --budget 30
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from benchmarks.harness import stamp
from benchmarks.hpob import run_method
from benchmarks.perf import append_record
from benchmarks.problems.hpob import TEST_TASKS, HPOBTask
from benchmarks.stats import parse_seeds
from treebo.loop.lockstep import Lockstep

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
    tasks = [HPOBTask(s, d) for s, d in TEST_TASKS if s == args.space]
    if not tasks:
        raise SystemExit(f"--space {args.space!r} has no HPO-B test task.")
    torch.set_num_threads(1)
    runs = [(task, seed) for task in tasks for seed in sorted(parse_seeds(args.seeds))]

    def functions():
        return [
            lambda t=t, s=s: run_method(t, "treebo", s, args.budget) for t, s in runs
        ]

    state = torch.get_rng_state()
    lockstep = Lockstep(functions())
    t0 = time.perf_counter()
    outcomes = lockstep.run()
    lockstep_s = time.perf_counter() - t0
    for (task, seed), (_, error) in zip(runs, outcomes, strict=True):
        if error is not None:
            name = f"{task.space_id}_{task.dataset_id}"
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
    }
    if "alone" in modes:
        alone, t0 = [], time.perf_counter()
        for function in functions():
            torch.set_rng_state(state)
            alone.append(function())
        record["alone_s"] = time.perf_counter() - t0
        record["same_rows"] = sum(
            rows == mine for (rows, _), mine in zip(outcomes, alone, strict=True)
        )
    record.update(stamp(record["lockstep_s"]))
    append_record(args.out, record)


if __name__ == "__main__":
    main()
