"""The harness: one record per run, appended to a JSON-lines file.

:func:`run` runs one ``(problem, method, seed, budget)`` and returns its record;
:func:`run_missing` runs every combination not yet in a file and appends each
record as it finishes, so a long suite can be stopped and resumed.

A record (one JSON object per line):

=====================  =======================================================
``problem``            registry name (:mod:`benchmarks.problems`)
``method``             registry name (:mod:`benchmarks.methods`)
``seed``, ``budget``   the run's seed and number of evaluations
``optimal_value``      the problem's optimum (``None`` where unknown)
``values``             the objective at each evaluation, in order
``proposal_seconds``   seconds of each model-based proposal
``true_values``,       validation problems: noise-free values, the root
``branches``,          choice's label at each evaluation and the best one
``best_branch``
``wall_seconds``,      the run's wall time, ``<arch> <threads>t``, the date and
``machine``, ``date``, the versions of torch, botorch and treebo
``versions``
=====================  =======================================================
"""

from __future__ import annotations

import json
import logging
import math
import platform
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import botorch
import numpy as np
import torch

import treebo
from treebo.loop import initial_design
from treebo.loop.design import default_initial_size
from treebo.loop.lockstep import run_in_lockstep

from .methods import run_method
from .problems import make_problem


def run(
    problem_name: str,
    method: str,
    seed: int,
    budget: int,
    checkpoint: Path | None = None,
) -> dict:
    """The record of one run of ``method`` on ``problem_name``.

    Every method starts from treebo's initial design for the seed, or the
    problem's own (``initial_configs(seed)``, e.g. HPO-B's), where it takes a
    design; ``checkpoint`` is a folder where slow peers save their
    progress after every evaluation.
    """
    problem = make_problem(problem_name)
    if hasattr(problem, "reseed"):  # a noisy validation problem
        problem.reseed(seed)
    evaluated: list[dict] = []
    objective = problem.objective

    def recorded(params: dict) -> float:
        evaluated.append(dict(params))
        try:
            return objective(params)
        except Exception as err:  # e.g. an MLP whose weights diverge
            # A failed evaluation, the same for every method: the worst value.
            logging.getLogger(__name__).warning("evaluation failed: %s", err)
            return math.inf

    problem.objective = recorded
    if hasattr(problem, "initial_configs"):  # a benchmark's own protocol (HPO-B)
        design = problem.initial_configs(seed)
    else:
        size = default_initial_size(problem.space)
        design = initial_design(problem.space, size, seed)
    t0 = time.time()
    values, seconds = run_method(
        method, problem, design, seed, budget, problem_name, checkpoint
    )
    record = {
        "problem": problem_name,
        "method": method,
        "seed": seed,
        "budget": budget,
        "optimal_value": problem.optimal_value,
        "values": values,
        "proposal_seconds": seconds,
    }
    finite = [v if v is not None and np.isfinite(v) else np.inf for v in values]
    # The recommended trial: treebo's own recommendation, else the best observed.
    record["recommended"] = getattr(problem, "recommended", int(np.argmin(finite)))
    if hasattr(problem, "fitted_noise_variance"):
        record["fitted_noise_variance"] = problem.fitted_noise_variance
    if hasattr(problem, "noise_variance"):
        record["noise_variance"] = problem.noise_variance
    if hasattr(problem, "true_value") and len(evaluated) == len(values):
        record["true_values"] = [problem.true_value(c) for c in evaluated]
        record["branches"] = [c[problem.root_choice] for c in evaluated]
        record["best_branch"] = problem.best_branch
    record.update(stamp(time.time() - t0))
    return record


def stamp(wall_seconds: float) -> dict:
    """Where and when a record was made."""
    return {
        "wall_seconds": wall_seconds,
        "machine": f"{platform.machine()} {torch.get_num_threads()}t",
        "date": time.strftime("%Y-%m-%d"),
        "versions": {
            "torch": torch.__version__,
            "botorch": botorch.__version__,
            "treebo": treebo.__version__,
        },
    }


def load_records(paths: Iterable[Path]) -> list[dict]:
    """Every record of the JSON-lines files ``paths`` (missing files: none)."""
    records = []
    for path in paths:
        if Path(path).exists():
            with open(path) as fh:
                records += [json.loads(line) for line in fh if line.strip()]
    return records


def run_missing(
    out: Path,
    problems: list[str],
    methods: list[str],
    seeds: list[int],
    budget: int | None,
    run_one: Callable[[str, str, int, int | None], dict] = run,
    lockstep: bool = False,
) -> list[dict]:
    """Run every ``(seed, problem, method)`` not yet in ``out`` at ``budget``
    (``None``: each problem's own), appending each record as it finishes;
    returns the new records.

    With ``lockstep``, the runs go at once through
    [`run_in_lockstep()`][treebo.loop.lockstep.run_in_lockstep] (the same values as
    one by one): their records carry ``lockstep_runs`` (the batch's size) and no
    ``proposal_seconds`` (a proposal's wall time then includes the others'), and
    a run that fails is reported and left missing.
    """
    out.parent.mkdir(parents=True, exist_ok=True)
    missing = missing_runs(out, problems, methods, seeds, budget)
    new = []

    def one(problem: str, method: str, seed: int) -> None:
        record = run_one(problem, method, seed, budget)
        if lockstep:
            record.pop("proposal_seconds", None)
            record["lockstep_runs"] = len(missing)
        with open(out, "a") as fh:
            fh.write(json.dumps(record) + "\n")
        new.append(record)
        line = f"{problem} {method} seed={seed}"
        if "optimal_value" in record:
            best = min(record["values"]) - (record["optimal_value"] or 0.0)
            line += f" best-f*={best:.3e}"
        print(f"{line} {record['wall_seconds']:.0f}s", flush=True)

    if not lockstep:
        for job in missing:
            one(*job)
        return new
    outcomes = run_in_lockstep(
        [lambda job=job: one(*job) for job in missing], return_exceptions=True
    )
    for (problem, method, seed), outcome in zip(missing, outcomes, strict=True):
        if isinstance(outcome, BaseException):
            print(f"{problem} {method} seed={seed} failed: {outcome!r}", flush=True)
    return new


def missing_runs(
    out: Path,
    problems: list[str],
    methods: list[str],
    seeds: list[int],
    budget: int | None,
) -> list[tuple[str, str, int]]:
    """The ``(problem, method, seed)`` runs at ``budget`` (``None``: at any) that
    ``out`` lacks, seed by seed."""
    done = {
        (r["problem"], r["method"], r["seed"])
        for r in load_records([out])
        if budget is None or r["budget"] == budget
    }
    return [
        (problem, method, seed)
        for seed in seeds
        for problem in problems
        for method in methods
        if (problem, method, seed) not in done
    ]
