"""Seconds and memory of one proposal against the number of observations and the tree's
size: treebo's default against BoTorch's flat GP and HCK in the same run.

For each problem and ``n``, ``n`` random observations (a fixed design) are given and one
proposal is timed: treebo's ``ask()`` from scratch ("cold": hyper-parameters fitted from
their initial values, as the peers always are) and the next ``ask()`` after its result
is told ("warm", what the loop does), a flattened ``SingleTaskGP`` fitted by BoTorch +
LogEI over the paths, and ``HierarchicalConditionalKernelGP`` + LogEI. Each measurement
runs in a fresh process, which reports its peak resident memory above what it held
before the proposal; one past ``--timeout`` seconds, or one that fails, is recorded as
such.

Problems: the Jenatton space (P1(a)) for ``--n``, and generalized Jenatton trees
(balanced, depth 3, 6 and 8: 7, 63 and 255 internal vertices) at ``--tree-n``.

Usage::

    python -m benchmarks.perf.scaling --n 100 300 1000 3000 --depths 3 6 8
    python -m benchmarks.perf.scaling --n 1000 --depths --methods treebo flat
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import time
import warnings
from pathlib import Path

import torch

from benchmarks.perf import append_record

RECORDS = Path(__file__).parent / "records" / "scaling.jsonl"
METHODS = ("treebo", "flat", "hck")
PEERS = {"flat": "flat_logei", "hck": "hck_logei"}


def problem_of(name: str):
    """``jenatton`` or ``depth<k>`` (a balanced generalized Jenatton tree)."""
    from treebo.test_functions import GeneralizedJenatton, Jenatton

    if name == "jenatton":
        return Jenatton("paper")
    return GeneralizedJenatton(depth=int(name.removeprefix("depth")))


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(problem_name: str, method: str, n: int, threads: int) -> dict:
    """One measurement, in this process (``--child``)."""
    import logging

    from benchmarks.methods.botorch_peers import botorch_proposal
    from treebo import TreeOptimizer

    logging.getLogger("treebo").setLevel(logging.WARNING)
    warnings.simplefilter("ignore")
    torch.set_num_threads(threads)
    problem = problem_of(problem_name)
    space = problem.space
    X = space.sample(n, seed=123)
    configs = space.to_dicts(X)
    values = [problem.objective(c) for c in configs]
    result: dict = {}
    if method == "treebo":
        for size, seed in ((12, 1), (n, 0)):  # the first loads what a proposal uses
            opt = TreeOptimizer(space, seed=seed, n_initial=5 if size < n else None)
            for config, value in zip(configs[:size], values[:size], strict=True):
                opt.tell(config, value)
            if size < n:
                opt.ask()
        before = peak_mib()
        t0 = time.perf_counter()
        config = opt.ask()
        result["cold"] = time.perf_counter() - t0
        opt.tell(config, problem.objective(config))
        t0 = time.perf_counter()
        opt.ask()
        result["warm"] = time.perf_counter() - t0
    else:
        y = -torch.tensor(values, dtype=torch.float64).unsqueeze(-1)
        botorch_proposal(PEERS[method], space, X[:12], y[:12], seed=1)  # loads
        before = peak_mib()
        t0 = time.perf_counter()
        botorch_proposal(PEERS[method], space, X, y, seed=0)
        result["cold"] = time.perf_counter() - t0
    result["peak_growth_mib"] = peak_mib() - before
    return result


def run_child(problem: str, method: str, n: int, threads: int, timeout: float) -> dict:
    """One measurement in a fresh process (its own peak memory), or a timeout."""
    command = [
        sys.executable,
        "-m",
        "benchmarks.perf.scaling",
        "--child",
        problem,
        method,
        str(n),
        "--threads",
        str(threads),
    ]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, check=True
        )
    except subprocess.TimeoutExpired:
        return {"timeout": timeout}
    except subprocess.CalledProcessError as err:  # recorded; the others go on
        lines = (err.stderr or "").strip().splitlines() or [f"exit {err.returncode}"]
        return {"error": lines[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", nargs="*", type=int, default=[100, 300, 1000, 3000])
    parser.add_argument("--depths", nargs="*", type=int, default=[3, 6, 8])
    parser.add_argument("--tree-n", type=int, default=300)
    parser.add_argument("--methods", nargs="+", default=list(METHODS))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--out", type=Path, default=RECORDS)
    parser.add_argument("--child", nargs=3, metavar=("PROBLEM", "METHOD", "N"))
    args = parser.parse_args(argv)
    for method in args.methods:
        if method not in METHODS:
            raise ValueError(f"--methods must be among {METHODS}, got {method!r}.")
    if args.child:
        problem, method, n = args.child
        print(json.dumps(measure(problem, method, int(n), args.threads)))
        return
    runs = [("jenatton", n) for n in args.n]
    runs += [(f"depth{d}", args.tree_n) for d in args.depths]
    for problem, n in runs:
        record = {
            "problem": problem,
            "n": n,
            "machine": f"{platform.machine()} {args.threads}t",
            "date": time.strftime("%Y-%m-%d"),
            "torch": torch.__version__,
        }
        for method in args.methods:
            record[method] = run_child(problem, method, n, args.threads, args.timeout)
        append_record(args.out, record)


if __name__ == "__main__":
    main()
