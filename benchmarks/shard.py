"""Run benchmark commands side by side, one per core, until a deadline.

For a machine with many cores lent for a few minutes (a device machine): each
line of ``JOBS`` is a runner module and its arguments, e.g.::

    benchmarks.run hpob --methods treebo --seeds 3 --problems hpob_5527_31

and runs as ``python -m LINE --out DIR/job_NNN.jsonl`` with every thread pool at
one thread, in the order listed (put the longest first). At the deadline the
unfinished runs are stopped; the finished runs' records are concatenated into
``DIR/records.jsonl``, to be merged into ``benchmarks/records/`` (the runners
skip what a records file already holds). HPO-B reads its pools from ``bocode``:
where that is not installed, put a folder holding ``bocode/__init__.py`` and
``bocode/opt_problems/hpo/data/hpob_data.npz`` on ``PYTHONPATH``.

Usage::

    python -m benchmarks.shard JOBS --out DIR --workers 16 --deadline 420
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ONE_THREAD = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}


def run_jobs(
    jobs: list[str], out: Path, workers: int, deadline: float
) -> list[tuple[str, int | None, float]]:
    """Run ``jobs`` (module and arguments each) until ``deadline`` seconds from now.

    Returns:
        ``(job, return code or None where stopped, seconds)`` per started job.
    """
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **ONE_THREAD}
    stop_at = time.monotonic() + deadline
    done: list[tuple[str, int | None, float]] = []

    def one(index: int, job: str) -> None:
        left = stop_at - time.monotonic()
        if left <= 0:
            return
        command = [sys.executable, "-m", *job.split(), "--out"]
        command.append(str(out / f"job_{index:03d}.jsonl"))
        start = time.monotonic()
        with open(out / f"job_{index:03d}.log", "w") as log:
            process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, env=env
            )
            try:
                code: int | None = process.wait(timeout=left)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
                code = None
        seconds = time.monotonic() - start
        done.append((job, code, seconds))
        print(f"{'stopped' if code is None else code} {seconds:.0f}s {job}", flush=True)

    with ThreadPoolExecutor(workers) as pool:
        for index, job in enumerate(jobs):
            pool.submit(one, index, job)
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("jobs", type=Path, help="one runner command per line")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--deadline", type=float, default=420.0, help="seconds")
    args = parser.parse_args(argv)
    jobs = [line.strip() for line in args.jobs.read_text().splitlines()]
    jobs = [job for job in jobs if job and not job.startswith("#")]
    if not jobs:
        print(f"{args.jobs} holds no job", file=sys.stderr)
        return 2
    done = run_jobs(jobs, args.out, args.workers, args.deadline)
    parts = sorted(args.out.glob("job_*.jsonl"))
    records = "".join(p.read_text() for p in parts)
    (args.out / "records.jsonl").write_text(records)
    finished = sum(code == 0 for _, code, _ in done)
    print(f"{finished} of {len(jobs)} jobs finished; {records.count(chr(10))} records")
    return 0 if finished == len(jobs) else 1


if __name__ == "__main__":
    sys.exit(main())
