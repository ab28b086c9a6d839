"""Seconds per proposal against the number of flags (2^k paths for k flags).

The space has four reals and ``k`` binary flags at the root
(``tuning_problems.FlagProblem``). Both methods get the same ``n`` random
observations; one proposal (model fit + acquisition optimization, from
scratch) is timed ``--repeats`` times: treebo's default loop, and BoTorch's
flattened ``SingleTaskGP`` with LogEI and ``optimize_acqf_mixed_alternating``.
With ``--activating``, every flag activates a real parameter instead (2^k
paths that select sub-trees).

Usage::

    python -m benchmarks.perf.flag_scaling --flags 2,6,10,14,20 --n 50 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

import torch

from benchmarks.methods.botorch_peers import botorch_proposal
from benchmarks.problems.tuning import FlagProblem
from treebo import Choice, Real, TreeOptimizer, TreeSpace, Vertex


def activating_space(k: int) -> TreeSpace:
    flags = [
        Choice(f"flag{i}", {False: Vertex(), True: Vertex([Real(f"w{i}", 0, 1)])})
        for i in range(k)
    ]
    return TreeSpace(Vertex([Real(f"x{j}", 0.0, 1.0) for j in range(4)], flags))


def objective(problem: FlagProblem, config: dict) -> float:
    """The flag problem's value, plus the mean of any activated reals."""
    shift = sum(config.get(f"w{i}", 0.5) for i in range(problem.k)) / problem.k
    return problem.objective(config) + shift


def time_treebo(space: TreeSpace, configs: list, values: list) -> float:
    opt = TreeOptimizer(space, seed=0, n_initial=1)
    for config, value in zip(configs, values, strict=True):
        opt.tell(config, value)
    t0 = time.perf_counter()
    opt.ask()
    return time.perf_counter() - t0


def time_flat(space: TreeSpace, configs: list, values: list) -> float:
    X = space.to_tensor(configs)
    y = -torch.tensor(values, dtype=torch.float64).unsqueeze(-1)
    t0 = time.perf_counter()
    botorch_proposal("flat_alt", space, X, y, seed=0)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flags", default="2,6,10,14,20")
    parser.add_argument("--n", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--activating", action="store_true")
    parser.add_argument(
        "--out", type=Path, default=Path("benchmarks/perf/records/flag_scaling.jsonl")
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rows = []
    for k in [int(v) for v in args.flags.split(",")]:
        problem = FlagProblem(k)
        space = activating_space(k) if args.activating else problem.space
        configs = space.to_dicts(space.sample(args.n, seed=k))

        values = [objective(problem, c) for c in configs]
        times = {
            "treebo": [
                time_treebo(space, configs, values) for _ in range(args.repeats)
            ],
            "flat_alt": [
                time_flat(space, configs, values) for _ in range(args.repeats)
            ],
        }
        row = {
            "k": k,
            "paths": 2**k,
            "n": args.n,
            "activating": args.activating,
            **{m: statistics.median(t) for m, t in times.items()},
            "machine": f"{platform.machine()} {torch.get_num_threads()}t",
            "date": time.strftime("%Y-%m-%d"),
        }
        rows.append(row)
        print(
            f"k={k:2d} paths={2**k:>8d}  treebo {row['treebo']:6.2f} s  "
            f"flat_alt {row['flat_alt']:6.2f} s",
            flush=True,
        )
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "a") as fh:
            fh.write(json.dumps(row) + "\n")
    first, last = rows[0], rows[-1]
    print(
        f"treebo t({last['k']}) / t({first['k']}) = "
        f"{last['treebo'] / first['treebo']:.2f}; "
        f"flat_alt / treebo at k={last['k']}: {last['flat_alt'] / last['treebo']:.2f}"
    )


if __name__ == "__main__":
    main()
