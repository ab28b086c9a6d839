"""Wall-clock time and regret of ``minimize(..., n_workers=k)`` on a slow objective.

Each evaluation of the test problem is made to take ``--eval-seconds`` on
average (a sleep, scaled by a factor in [0.5, 1.5] drawn from the
configuration, so that evaluations finish out of order, as real ones do). The
evaluations run in a thread pool (``--executor threads``) or on a local Dask
cluster of ``k`` single-threaded worker processes (``--executor dask``): while
``k`` evaluations are running, the loop fits its model and proposes in the
main thread, treating the running ones as pending. ``--executor simulated``
replays the same loop on a virtual clock: an evaluation takes its drawn
duration without sleeping, a proposal takes the real time it took, so a
simulated run takes its proposals' time only (``k`` workers without ``k``
cores; how many evaluations ``k`` workers need is then cheap to measure).
``--executor batches`` runs synchronous q-batches (``ask(k)``, as
``minimize(..., batch_size=k)``) on the same virtual clock: a batch takes its
proposals' time and then its slowest evaluation's.

For every worker count the first table gives the median wall-clock time of a
run, its ratio to one worker's (measured in the same invocation), and the
median log10 regret at the end, with a seed-by-seed count against one worker.
The second gives, seed by seed, the time ``k`` workers take to reach the best
value one worker has at the end of its run (``k``-worker runs may be given a
larger budget for that), as a fraction of one worker's run time.
Finished runs in ``--out`` are skipped (by problem, workers, seed and budget):
use one output file per ``--eval-seconds``.

Usage::

    python -m benchmarks.perf.parallel_workers --problem p1a --workers 1,3 \\
        --seeds 0-4 --budget 25 --eval-seconds 2
    python -m benchmarks.perf.parallel_workers --problem v_kinks --executor dask \\
        --workers 1,8 --budget 100 --parallel-budget 150 --eval-seconds 30 \\
        --seeds 0-2 --out benchmarks/perf/records/dask_workers.jsonl
    python -m benchmarks.perf.parallel_workers --problem v_kinks \
        --executor simulated --workers 1,8 --budget 100 --parallel-budget 200 \
        --eval-seconds 30 --seeds 0-2 \
        --out benchmarks/perf/records/simulated_workers.jsonl
"""

from __future__ import annotations

import argparse
import contextlib
import heapq
import itertools
import json
import math
import random
import statistics
import time
from pathlib import Path

import torch

from benchmarks.harness import run_missing
from benchmarks.methods.parallel_local import PARALLEL_VARIANTS
from benchmarks.problems import PROBLEMS
from benchmarks.stats import parse_seeds, sign_test
from treebo import TreeOptimizer, minimize

EXECUTORS = {
    "threads": "workers",
    "dask": "dask",
    "simulated": "sim",
    "batches": "batch",
}


def duration_factor(params: dict) -> float:
    """The factor in [0.5, 1.5] of a configuration's evaluation time."""
    return random.Random(repr(sorted(params.items()))).uniform(0.5, 1.5)


def slow_objective(problem, eval_seconds: float):
    """``problem.objective`` that sleeps ``eval_seconds`` x [0.5, 1.5] first."""

    def objective(params: dict) -> float:
        time.sleep(eval_seconds * duration_factor(params))
        return problem.objective(params)

    return objective


def workers_of(method: str) -> int:
    """The worker count of a method name (``"workers3"``, ``"dask8"``, ``"sim8"``,
    ``"sim8+local_blind"``)."""
    method = method.partition("+")[0]
    for prefix in EXECUTORS.values():
        method = method.removeprefix(prefix)
    return int(method)


def strategy_of(method: str):
    """The strategy of a method name: the package's default, or the variant of
    [`PARALLEL_VARIANTS`][benchmarks.methods.parallel_local.PARALLEL_VARIANTS]
    after a ``+``."""
    factory = PARALLEL_VARIANTS[method.partition("+")[2] or "default"]
    return "add_tree" if factory is None else factory()


def executor_of(method: str) -> str:
    """The ``--executor`` of a method name."""
    return next(e for e, p in EXECUTORS.items() if method.startswith(p))


def simulated_run(
    problem,
    workers: int,
    seed: int,
    budget: int,
    eval_seconds: float,
    strategy="add_tree",
) -> tuple[TreeOptimizer, list[float], list[float]]:
    """``minimize``'s loop with ``workers`` evaluations in flight on a virtual
    clock: evaluations take ``eval_seconds`` x [0.5, 1.5] of it, proposals the
    real seconds they take. Returns the optimizer, the clock at each tell and
    each proposal's seconds."""
    opt = TreeOptimizer(problem.space, strategy=strategy, seed=seed)
    clock, order = 0.0, itertools.count()
    running: list[tuple[float, int, dict]] = []  # (finish time, order, params)
    told: list[float] = []
    proposal_seconds: list[float] = []
    while len(opt.history) < budget:
        while len(running) < workers and len(opt.history) + len(running) < budget:
            t0 = time.perf_counter()
            params = opt.ask()
            proposal_seconds.append(time.perf_counter() - t0)
            clock += proposal_seconds[-1]
            finish = clock + eval_seconds * duration_factor(params)
            heapq.heappush(running, (finish, next(order), params))
        # Tell every evaluation that finished by then, as the loop does.
        clock = max(clock, running[0][0])
        while running and running[0][0] <= clock:
            params = heapq.heappop(running)[2]
            opt.tell(params, problem.objective(params))
            told.append(clock)
    return opt, told, proposal_seconds


def simulated_batch_run(
    problem,
    size: int,
    seed: int,
    budget: int,
    eval_seconds: float,
    strategy="add_tree",
) -> tuple[TreeOptimizer, list[float], list[float]]:
    """``minimize(..., batch_size=size)``'s loop on a virtual clock (as
    [`simulated_run()`][benchmarks.perf.parallel_workers.simulated_run]): each batch
    takes its proposals' real seconds, then its slowest evaluation's drawn ones."""
    opt = TreeOptimizer(problem.space, strategy=strategy, seed=seed)
    clock, told, proposal_seconds = 0.0, [], []
    while len(opt.history) < budget:
        t0 = time.perf_counter()
        batch = opt.ask(min(size, budget - len(opt.history)))
        proposal_seconds.append(time.perf_counter() - t0)
        clock += proposal_seconds[-1]
        clock += max(eval_seconds * duration_factor(p) for p in batch)
        for params in batch:
            opt.tell(params, problem.objective(params))
            told.append(clock)
    return opt, told, proposal_seconds


def run(
    problem_name: str, method: str, seed: int, budget: int, eval_seconds: float
) -> dict:
    """One ``minimize`` run: ``"workersK"`` on K threads, ``"daskK"`` on a local
    Dask cluster of K worker processes, ``"simK"`` on a virtual clock."""
    problem = PROBLEMS[problem_name]()
    workers = workers_of(method)
    told_seconds: list[float] = []
    extra: dict = {}
    simulate = {"simulated": simulated_run, "batches": simulated_batch_run}
    if executor_of(method) in simulate:
        opt, told_seconds, extra["proposal_seconds"] = simulate[executor_of(method)](
            problem, workers, seed, budget, eval_seconds, strategy_of(method)
        )
        history, run_seconds = opt.result().history, told_seconds[-1]
    else:
        history, run_seconds = _minimize_on_executor(
            problem, method, seed, budget, eval_seconds, told_seconds
        )
    return {
        "problem": problem_name,
        "method": method,
        "seed": seed,
        "budget": budget,
        "optimal_value": problem.optimal_value,
        "values": [t.value for t in history],
        "kinds": [t.kind for t in history],
        "run_seconds": run_seconds,
        "wall_seconds": run_seconds,
        "told_seconds": told_seconds,
        **extra,
        "eval_seconds": eval_seconds,
    }


def _minimize_on_executor(
    problem, method: str, seed: int, budget: int, eval_seconds: float, told: list
) -> tuple[list, float]:
    """``minimize`` on K threads or a local Dask cluster of K worker processes:
    the history and the run's seconds (each tell's time appended to ``told``)."""
    workers = workers_of(method)
    with contextlib.ExitStack() as stack:
        executor = None
        if method.startswith("dask"):
            from distributed import Client, LocalCluster

            cluster = stack.enter_context(
                LocalCluster(
                    n_workers=workers,
                    threads_per_worker=1,
                    host="127.0.0.1",
                    dashboard_address=":0",
                )
            )
            executor = stack.enter_context(Client(cluster)).get_executor()
        t0 = time.perf_counter()
        result = minimize(
            slow_objective(problem, eval_seconds),
            problem.space,
            budget,
            seed=seed,
            strategy=strategy_of(method),
            n_workers=workers,
            executor=executor,
            callback=lambda trial: told.append(time.perf_counter() - t0),
        )
        return result.history, time.perf_counter() - t0


def best_at(record: dict, n: int) -> float:
    """The best value among the first ``n`` evaluations of a run."""
    return min(v for v in record["values"][:n] if v is not None)


def log10_regret(record: dict, n: int | None = None) -> float:
    regret = best_at(record, n or len(record["values"])) - record["optimal_value"]
    return math.log10(regret) if regret > 0 else -math.inf


def seconds_at(record: dict, n: int) -> float:
    """Wall time until the ``n``-th evaluation was told (old records without
    per-trial times: the whole run's)."""
    told = record.get("told_seconds")
    return told[n - 1] if told else record["run_seconds"]


def table(records: list[dict], budget: int) -> str:
    """Markdown table at ``budget`` evaluations: wall time, its ratio to the
    fewest workers', and regret."""
    by = {(r["method"], r["seed"]): r for r in records}
    methods = sorted({r["method"] for r in records}, key=workers_of)
    base = methods[0]
    lines = [
        f"| workers | seeds | wall s (median) | {base} / this | "
        f"log10 regret (median) | lower / equal / higher than {base} (p) |",
        "|---|---|---|---|---|---|",
    ]
    for method in methods:
        seeds = sorted(s for m, s in by if m == method)
        walls = [seconds_at(by[method, s], budget) for s in seeds]
        regrets = [log10_regret(by[method, s], budget) for s in seeds]
        paired = [s for s in seeds if (base, s) in by]
        ratios = [
            seconds_at(by[base, s], budget) / seconds_at(by[method, s], budget)
            for s in paired
        ]
        lower, higher = (
            sum(
                compare(
                    log10_regret(by[method, s], budget),
                    log10_regret(by[base, s], budget),
                )
                for s in paired
            )
            for compare in (float.__lt__, float.__gt__)
        )
        lines.append(
            f"| {workers_of(method)} | {len(seeds)} | {statistics.median(walls):.0f} | "
            f"{f'{statistics.median(ratios):.2f}x' if ratios else '-'} | "
            f"{statistics.median(regrets):.2f} | "
            f"{lower} / {len(paired) - lower - higher} / {higher} "
            f"({sign_test(lower, higher):.2g}) |"
        )
    return "\n".join(lines)


#: Regrets below this count as the optimum in the time-to-target table: the
#: objectives are of order 1, and float64 resolves about 1e-16 of them.
REGRET_FLOOR = 1e-12


def time_to_target_table(records: list[dict], budget: int) -> str:
    """Markdown table: seed by seed, the time each worker count takes to reach
    the best value the fewest workers have after ``budget`` evaluations (or a
    regret of [`REGRET_FLOOR`][benchmarks.perf.parallel_workers.REGRET_FLOOR],
    whichever is larger), as a fraction of their time to ``budget``
    evaluations."""
    by = {(r["method"], r["seed"]): r for r in records}
    methods = sorted({r["method"] for r in records}, key=workers_of)
    base = methods[0]
    lines = [
        f"| workers | seed | {base}: log10 regret @{budget} | {base}: s | "
        "this: s to reach it (evaluations) | fraction of {base}'s time |".replace(
            "{base}", base
        ),
        "|---|---|---|---|---|---|",
    ]
    for method in methods[1:]:
        for seed in sorted(s for m, s in by if m == method and (base, s) in by):
            target = max(
                best_at(by[base, seed], budget),
                by[base, seed]["optimal_value"] + REGRET_FLOOR,
            )
            base_seconds = seconds_at(by[base, seed], budget)
            record = by[method, seed]
            reached = next(
                (
                    i
                    for i in range(1, len(record["values"]) + 1)
                    if best_at(record, i) <= target
                ),
                None,
            )
            if reached is None:
                cells = f"not reached in {len(record['values'])} | - |"
            else:
                seconds = seconds_at(record, reached)
                cells = f"{seconds:.0f} ({reached}) | {seconds / base_seconds:.2f} |"
            lines.append(
                f"| {workers_of(method)} | {seed} | "
                f"{log10_regret(by[base, seed], budget):.2f} | "
                f"{base_seconds:.0f} | {cells}"
            )
    return "\n".join(lines)


def batch_table(records: list[dict]) -> str:
    """Markdown table of q-batches against one evaluation at a time and against
    asynchronous workers of the same count: log10 regret at the shortest run's
    budget, seed by seed, with the median and paired counts."""
    budget = min(r["budget"] for r in records)
    by = {(r["method"], r["seed"]): r for r in records}
    methods = sorted({r["method"] for r in records}, key=lambda m: (workers_of(m), m))
    seeds = sorted({s for _, s in by})
    lines = [
        f"log10 regret after {budget} evaluations, seed by seed:",
        "",
        "| method | " + " | ".join(f"seed {s}" for s in seeds) + " | median |",
        "|---|" + "---|" * (len(seeds) + 1),
    ]
    for method in methods:
        cells = [
            f"{log10_regret(by[method, s], budget):.2f}" if (method, s) in by else "-"
            for s in seeds
        ]
        regrets = [
            log10_regret(by[method, s], budget) for s in seeds if (method, s) in by
        ]
        lines.append(
            f"| {method} | "
            + " | ".join(cells)
            + f" | {statistics.median(regrets):.2f} |"
        )
    batches = [m for m in methods if m.startswith("batch") and workers_of(m) > 1]
    for batch in batches:
        for other in ("batch1", f"sim{workers_of(batch)}"):
            paired = [s for s in seeds if (batch, s) in by and (other, s) in by]
            if not paired:
                continue
            lower = sum(
                log10_regret(by[batch, s], budget) < log10_regret(by[other, s], budget)
                for s in paired
            )
            higher = sum(
                log10_regret(by[batch, s], budget) > log10_regret(by[other, s], budget)
                for s in paired
            )
            lines.append("")
            lines.append(
                f"{batch} against {other}: lower / equal / higher {lower} / "
                f"{len(paired) - lower - higher} / {higher} (sign test p "
                f"{sign_test(lower, higher):.2g})."
            )
    return "\n".join(lines)


def report_tables(records: list[dict]) -> str:
    """Both tables for every problem, evaluation time and executor of
    ``records`` (the budget: that of the one-worker runs)."""
    groups: dict[tuple, list[dict]] = {}
    for r in records:
        key = (r["problem"], r["eval_seconds"], executor_of(r["method"]))
        groups.setdefault(key, []).append(r)
    parts = []
    for (problem, seconds, executor), group in sorted(groups.items()):
        budget = min(r["budget"] for r in group)
        parts += [
            f"{problem}, {executor}, evaluations of {seconds:g} s on average "
            f"(0.5x to 1.5x), {budget} evaluations:",
            "",
            table(group, budget),
            "",
        ]
        if any(r.get("told_seconds") for r in group):
            parts += [time_to_target_table(group, budget), ""]
    return "\n".join(parts).rstrip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", default="p1a", choices=sorted(PROBLEMS))
    parser.add_argument("--executor", default="threads", choices=sorted(EXECUTORS))
    parser.add_argument("--workers", default="1,3")
    parser.add_argument("--seeds", default="0-4")
    parser.add_argument("--budget", type=int, default=25)
    parser.add_argument(
        "--parallel-budget",
        type=int,
        default=None,
        help="budget of the runs with more than one worker (default: --budget)",
    )
    parser.add_argument("--eval-seconds", type=float, default=2.0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--model",
        default="default",
        choices=sorted(PARALLEL_VARIANTS),
        help="the loop's strategy: the package's, or a variant of "
        "benchmarks/methods/parallel_local.py (the worker counts above 1 only)",
    )
    parser.add_argument(
        "--out", default="benchmarks/perf/records/parallel_workers.jsonl"
    )
    args = parser.parse_args()
    if args.eval_seconds < 0:
        parser.error(f"--eval-seconds must be >= 0, got {args.eval_seconds}.")
    parallel_budget = args.parallel_budget or args.budget
    if parallel_budget < args.budget:
        parser.error("--parallel-budget must be at least --budget.")
    torch.set_num_threads(args.threads)
    workers = [int(w) for w in args.workers.split(",")]
    if any(w < 1 for w in workers):
        parser.error(f"--workers must be positive integers, got {args.workers!r}.")
    prefix = EXECUTORS[args.executor]
    out = Path(args.out)
    for budget, counts in (
        (args.budget, [w for w in workers if w == 1]),
        (parallel_budget, [w for w in workers if w > 1]),
    ):
        run_missing(
            out,
            [args.problem],
            [
                f"{prefix}{w}"
                + ("" if w == 1 or args.model == "default" else f"+{args.model}")
                for w in counts
            ],
            sorted(parse_seeds(args.seeds)),
            budget,
            lambda problem, method, seed, budget: run(
                problem, method, seed, budget, args.eval_seconds
            ),
        )
    records = [
        r
        for r in map(json.loads, out.read_text().splitlines())
        if r["problem"] == args.problem
        and r["method"].startswith(prefix)
        and r["budget"]
        == (args.budget if workers_of(r["method"]) == 1 else parallel_budget)
        and r["eval_seconds"] == args.eval_seconds
        and (
            workers_of(r["method"]) == 1
            or r["method"].partition("+")[2] == args.model.replace("default", "")
        )
    ]
    print(table(records, args.budget))
    print()
    print(time_to_target_table(records, args.budget))


if __name__ == "__main__":
    main()
