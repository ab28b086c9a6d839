"""P8: Bayesian optimization over a grid (paper 004, BKTF): the runner of the ``grid``
suite.

The problems (:mod:`benchmarks.problems.grid`) are spaces of parameters without
choices with a resolution; each one's optimum is the best value on its grid. Every
method starts from the same ``n_initial`` grid points for a seed (treebo's initial
design, moved onto the grid) and has the problem's total budget.

========================  ===================================================
``bktf``                  ``minimize(..., strategy="bktf")`` at the problem's
                          resolution (defaults otherwise: rank 2, 1000 sweeps,
                          600 burn-in, UCB with beta = 2)
``gp_ei``, ``gp_ucb``     BoTorch ``SingleTaskGP`` (Matern-3/2, ARD; with a
                          categorical mode, ``MixedSingleTaskGP``) and EI or
                          UCB (mean + 2 sd) over the whole grid: the best
                          unvisited grid point
``bktf_ei``,               BKTF with EI from its samples, or with rank 4
``bktf_rank4``            (ablations)
``treebo``                treebo's default loop on the continuous space
``random``                unvisited grid points at random
========================  ===================================================

The measure (paper 004, Sec. 7.5.2) is the number of evaluations until the grid's
optimum is reached (a value within ``1e-9`` of the range); a run that never reaches
it counts its budget plus 100. Dolan-More performance profiles compare the methods
run by run; their AUC is the mean of the profile over ratios 1, 2, ...,
``N_max + 1``.

Command (records: ``benchmarks/records/grid.jsonl``)::

    python -m benchmarks.run grid --seeds 0-9 --methods bktf,gp_ei,gp_ucb,treebo,random
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from treebo import TreeOptimizer
from treebo.bktf import BKTFOptions, BKTFStrategy, SampleEI
from treebo.loop import initial_design

from .grid_peers import gp_grid_proposal
from .harness import stamp
from .problems.grid import GridProblem, grid_problem

METHODS = ("bktf", "gp_ei", "gp_ucb", "treebo", "random")

#: BKTF's settings by method name: the default, and variants for ablations.
BKTF_VARIANTS = {
    "bktf": BKTFOptions(),
    "bktf_ei": BKTFOptions(acquisition=SampleEI()),
    "bktf_rank4": BKTFOptions(rank=4),
}


def shared_design(problem: GridProblem, seed: int) -> list[dict]:
    """treebo's initial design for ``seed`` moved onto the grid; points that
    land on one grid point are replaced by random grid points."""
    grid, space = problem.grid, problem.space
    X = space.to_tensor(initial_design(space, problem.n_initial, seed))
    flat = grid.flat(grid.indices(grid.snap(X))).tolist()
    unique = list(dict.fromkeys(flat))
    gen = torch.Generator().manual_seed(seed)
    while len(unique) < problem.n_initial:
        candidate = int(torch.randint(grid.numel, (1,), generator=gen))
        if candidate not in unique:
            unique.append(candidate)
    return space.to_dicts(grid.points(grid.unflatten(torch.tensor(unique))))


def run(
    problem_name: str,
    method: str,
    seed: int,
    budget: int | None = None,
    checkpoint: Path | None = None,
) -> dict:
    """The record of one run (``budget``: the problem's own where ``None``;
    ``checkpoint`` is unused: every run is short)."""
    del checkpoint
    problem = grid_problem(problem_name)
    if budget is not None:
        problem = replace(problem, budget=budget)
    design = shared_design(problem, seed)
    t0 = time.time()
    if method in ("treebo", *BKTF_VARIANTS):
        if method == "treebo":
            strategy = "add_tree"
        else:
            options = replace(BKTF_VARIANTS[method], resolution=problem.resolution)
            strategy = BKTFStrategy(options)
        opt = TreeOptimizer(
            problem.space, strategy=strategy, seed=seed, n_initial=problem.n_initial
        )
        for params in design:
            opt.tell(params, problem.objective(params))
        values = [t.value for t in opt.history]
        seconds = []
        while len(values) < problem.budget:
            s0 = time.perf_counter()
            params = opt.ask()
            seconds.append(time.perf_counter() - s0)
            value = problem.objective(params)
            opt.tell(params, value)
            values.append(value)
    else:
        values, seconds = run_grid_peer(problem, method, design, seed)
    record = {
        "problem": problem_name,
        "method": method,
        "seed": seed,
        "budget": problem.budget,
        "n_initial": problem.n_initial,
        "optimal_value": problem.optimal_value,
        "values": values,
        "proposal_seconds": seconds,
    }
    record.update(stamp(time.time() - t0))
    return record


def run_grid_peer(
    problem: GridProblem, method: str, design: list[dict], seed: int
) -> tuple[list[float], list[float]]:
    """A GP peer or random search over the grid's unvisited points."""
    grid, space = problem.grid, problem.space
    X = grid.snap(space.to_tensor(design))
    values = [float(v) for v in problem.function(X)]
    seconds = []
    gen = torch.Generator().manual_seed(seed)
    while len(values) < problem.budget:
        s0 = time.perf_counter()
        visited = grid.flat(grid.indices(X))
        if method == "random":
            free = torch.ones(grid.numel, dtype=torch.bool)
            free[visited] = False
            options = free.nonzero().flatten()
            flat = int(options[torch.randint(len(options), (1,), generator=gen)])
        else:
            y = -torch.tensor(values, dtype=torch.float64).unsqueeze(-1)
            flat = gp_grid_proposal(method, grid, X, y, visited, seed + len(values))
        x = grid.points(grid.unflatten(torch.tensor([flat])))
        seconds.append(time.perf_counter() - s0)
        values.append(float(problem.function(x)[0]))
        X = torch.cat([X, x])
    return values, seconds


def evaluations_to_optimum(record: dict) -> int:
    """1-based evaluation at which the grid optimum is first reached, else the
    budget + 100."""
    values = np.asarray(record["values"])
    target = record["optimal_value"]
    tol = 1e-9 * max(1.0, abs(target))
    hit = np.nonzero(values <= target + tol)[0]
    return int(hit[0]) + 1 if hit.size else record["budget"] + 100


def performance_profiles(
    records: list[dict], methods: list[str]
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Ratios ``1 .. N_max + 1`` and each method's profile over the runs
    (``(problem, seed)`` pairs) that every method completed."""
    by_run: dict[tuple, dict[str, int]] = {}
    for r in records:
        by_run.setdefault((r["problem"], r["seed"]), {})[r["method"]] = (
            evaluations_to_optimum(r)
        )
    runs = [t for t in by_run.values() if all(m in t for m in methods)]
    n_max = max(r["budget"] for r in records)
    ratios = np.arange(1, n_max + 2, dtype=float)
    profiles = {}
    for m in methods:
        r = np.array([t[m] / min(t[k] for k in methods) for t in runs])
        profiles[m] = np.array([(r <= tau).mean() if len(r) else 0.0 for tau in ratios])
    return ratios, profiles
