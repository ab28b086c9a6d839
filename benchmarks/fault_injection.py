"""Kill a checkpointed run and count what its resumption loses or repeats.

A child process runs :func:`treebo.minimize` with a checkpoint on P1(a). Its
objective appends every configuration it finishes to a side file just before
returning. The parent kills the child with SIGKILL, either at a random moment
or as soon as the side file grows (right after an evaluation returns), then
starts it again on the same checkpoint, a given number of times, and finally
lets it finish. Then:

- *lost*: evaluations that finished (in the side file) but are not in the
  final checkpoint;
- *repeated*: configurations evaluated more than once.

Usage::

    python -m benchmarks.fault_injection --kills 20 --runs 4 [--grace 0.005]

prints the counts per mode and appends one JSON record per run to
``--out`` (default ``benchmarks/perf/records/fault_injection.jsonl``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from treebo.add_tree import AddTreeStrategy

N_INITIAL = 5


def child(folder: Path, seed: int, budget: int) -> None:
    """The killed program: minimize P1(a) with a checkpoint in ``folder``."""
    from treebo import minimize
    from treebo.add_tree import AddTreeOptions
    from treebo.test_functions import Jenatton

    problem = Jenatton()
    side = folder / "evaluated.jsonl"

    def objective(params):
        value = problem.objective(params)
        time.sleep(0.05)
        with open(side, "a") as fh:
            fh.write(json.dumps(params, sort_keys=True) + "\n")
            fh.flush()
        return value

    minimize(
        objective,
        problem.space,
        budget=budget,
        seed=seed,
        n_initial=N_INITIAL,
        strategy=AddTreeStrategy(AddTreeOptions(num_restarts=4, raw_samples=64)),
        checkpoint=folder / "run.jsonl",
    )


def _start(folder: Path, seed: int, budget: int) -> subprocess.Popen:
    command = [sys.executable, __file__, "--child", str(folder)]
    return subprocess.Popen(
        [*command, "--seed", str(seed), "--budget", str(budget)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def killed_run(
    folder: Path,
    mode: str,
    kills: int,
    seed: int,
    budget: int = 20,
    window: tuple[float, float] = (1.0, 8.0),
    grace: float = 0.0,
) -> dict:
    """Kill a run ``kills`` times (``mode`` "random": after a uniform delay in
    ``window`` seconds; "returned": ``grace`` seconds after an evaluation
    returns), then let it finish; count lost and repeated evaluations.

    A kill between the objective's return and the journal's write (about
    0.1 ms) re-runs that evaluation: no design can close that window. With
    ``grace`` of a few milliseconds, a repeat in "returned" mode means the
    evaluation was not on disk that long after it returned."""
    folder.mkdir(parents=True, exist_ok=True)
    side = folder / "evaluated.jsonl"
    rng = random.Random(seed)
    done = 0
    while done < kills:
        seen = _lines(side)
        process = _start(folder, seed, budget)
        if mode == "random":  # imports take about 2 s
            deadline = time.monotonic() + rng.uniform(*window)
            while time.monotonic() < deadline and process.poll() is None:
                time.sleep(0.01)
        else:
            while _lines(side) == seen and process.poll() is None:
                time.sleep(0.0005)
            time.sleep(grace)
        if process.poll() is not None:  # the run finished first
            break
        process.send_signal(signal.SIGKILL)
        process.wait()
        done += 1
    final = _start(folder, seed, budget)
    _, err = final.communicate()
    if final.returncode != 0:
        raise RuntimeError(f"the resumed run failed:\n{err.decode()}")
    evaluated = [json.loads(line) for line in side.read_text().splitlines()]
    events = [
        json.loads(line) for line in (folder / "run.jsonl").read_text().splitlines()
    ]
    told = [e["trial"]["params"] for e in events[1:] if "trial" in e]
    # The journal writes choices as label indices; P1(a)'s labels are 0 and 1.
    told_keys = {json.dumps(p, sort_keys=True) for p in told}
    evaluated_keys = [json.dumps(p, sort_keys=True) for p in evaluated]
    return {
        "mode": mode,
        "seed": seed,
        "kills": done,
        "evaluated": len(evaluated),
        "told": len(told),
        "lost": sum(1 for k in set(evaluated_keys) if k not in told_keys),
        "repeated": len(evaluated_keys) - len(set(evaluated_keys)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--child", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--budget", type=int, default=20)
    parser.add_argument("--kills", type=int, default=20, help="kills per mode")
    parser.add_argument("--runs", type=int, default=4, help="runs per mode")
    parser.add_argument(
        "--grace",
        type=float,
        default=0.0,
        help="seconds from an evaluation's return to the kill (returned mode)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("benchmarks/perf/records/fault_injection.jsonl"),
    )
    parser.add_argument(
        "--folder", type=Path, default=Path("benchmarks/perf/records/fault_runs")
    )
    args = parser.parse_args()
    if args.child is not None:
        child(args.child, args.seed, args.budget)
        return
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for mode in ("random", "returned"):
        totals = {"kills": 0, "lost": 0, "repeated": 0, "evaluated": 0}
        for run in range(args.runs):
            folder = args.folder / f"{mode}_{run}_{os.getpid()}"
            record = killed_run(
                folder,
                mode,
                args.kills // args.runs,
                seed=run,
                budget=args.budget,
                grace=args.grace,
            )
            record["date"] = time.strftime("%Y-%m-%d")
            record["grace"] = args.grace
            with open(args.out, "a") as fh:
                fh.write(json.dumps(record) + "\n")
            for key in totals:
                totals[key] += record[key]
        print(
            f"{mode}: {totals['kills']} kills, {totals['evaluated']} evaluations, "
            f"{totals['lost']} lost, {totals['repeated']} repeated",
            flush=True,
        )


if __name__ == "__main__":
    main()
