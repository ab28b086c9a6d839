"""P8: Bayesian optimization over a grid (paper 004, BKTF), with its own runner.

Every problem is a space of parameters without choices and a resolution; its grid is
``treebo.bktf.Grid.from_space(space, resolution)`` and its optimum the best value on
that grid. Every method starts from the same ``n_initial`` grid points for a seed
(treebo's initial design, moved onto the grid) and has the same total budget.

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

    python -m benchmarks.grid_bo --seeds 0-9 --methods bktf,gp_ei,gp_ucb,treebo,random
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch
from botorch.test_functions.synthetic import Branin, Griewank, Hartmann

from treebo import Categorical, Real, TreeOptimizer, TreeSpace, Vertex
from treebo.bktf import BKTFOptions, BKTFStrategy, Grid, SampleEI
from treebo.loop import initial_design

from .grid_peers import gp_grid_proposal
from .harness import stamp

RECORDS = Path(__file__).parent / "records" / "grid.jsonl"


@dataclass
class GridProblem:
    """A function on a grid of a space without choices.

    Attributes:
        space: The space (parameters ``x0, x1, ...`` unless named).
        resolution: Grid values per real parameter.
        n_initial: Size of the shared initial design.
        budget: Total evaluations, the initial design included.
        function: ``m x D`` encodings to ``m`` values to minimize.
    """

    space: TreeSpace
    resolution: int
    n_initial: int
    budget: int
    function: Callable[[torch.Tensor], torch.Tensor]

    @property
    def grid(self) -> Grid:
        return Grid.from_space(self.space, self.resolution)

    def objective(self, params: dict) -> float:
        x = self.space.to_tensor([params])
        return float(self.function(x)[0])

    def grid_values(self) -> torch.Tensor:
        """The function at every grid point (flat order)."""
        grid = self.grid
        out = []
        for start in range(0, grid.numel, 2**16):
            flat = torch.arange(start, min(start + 2**16, grid.numel))
            out.append(self.function(grid.points(grid.unflatten(flat))))
        return torch.cat(out)


def _reals(bounds: list[tuple[float, float]]) -> TreeSpace:
    return TreeSpace(
        Vertex([Real(f"x{i}", lo, hi) for i, (lo, hi) in enumerate(bounds)])
    )


def damavandi(X: torch.Tensor) -> torch.Tensor:
    """Damavandi on ``[0, 14]^2``: 0 at (2, 2); ``torch.sinc`` is the
    ``sin(pi t) / (pi t)`` of the definition, exact at ``t = 0``."""
    x1, x2 = X[..., 0], X[..., 1]
    peak = (torch.sinc(x1 - 2) * torch.sinc(x2 - 2)).abs() ** 5
    return (1 - peak) * (2 + (x1 - 7) ** 2 + 2 * (x2 - 7) ** 2)


def schaffer(X: torch.Tensor) -> torch.Tensor:
    """Schaffer N.2 on ``[-10, 10]^2``: 0 at the origin."""
    x1, x2 = X[..., 0], X[..., 1]
    num = torch.sin(x1**2 - x2**2) ** 2 - 0.5
    return 0.5 + num / (1 + 0.001 * (x1**2 + x2**2)) ** 2


def _botorch(function) -> Callable[[torch.Tensor], torch.Tensor]:
    return lambda X: function.evaluate_true(X.to(torch.float64))


def svc_space() -> TreeSpace:
    return TreeSpace(
        Vertex(
            [
                Categorical("kernel", ["rbf", "poly", "sigmoid"]),
                Categorical("scaler", ["standard", "minmax"]),
                Real("C", 1e-2, 1e3, log_scale=True),
                Real("gamma", 1e-4, 1e1, log_scale=True),
            ]
        )
    )


class SVCTable:
    """3-fold cross-validated error of an SVC on breast_cancer at every point of
    its grid, computed once per process (a tabular objective with a known
    optimum)."""

    _table: dict[tuple, float] | None = None

    def __init__(self, space: TreeSpace, resolution: int) -> None:
        self.space, self.resolution = space, resolution

    def table(self) -> dict[tuple, float]:
        if SVCTable._table is None:
            from sklearn.datasets import load_breast_cancer
            from sklearn.model_selection import StratifiedKFold, cross_val_score
            from sklearn.pipeline import make_pipeline
            from sklearn.preprocessing import MinMaxScaler, StandardScaler
            from sklearn.svm import SVC

            X, y = load_breast_cancer(return_X_y=True)
            folds = StratifiedKFold(3, shuffle=True, random_state=0)
            grid = Grid.from_space(self.space, self.resolution)
            points = grid.points(grid.unflatten(torch.arange(grid.numel)))
            table = {}
            for row, params in zip(points, self.space.to_dicts(points), strict=True):
                scaler = (
                    StandardScaler()
                    if params["scaler"] == "standard"
                    else MinMaxScaler()
                )
                svc = SVC(
                    kernel=params["kernel"],
                    C=params["C"],
                    gamma=params["gamma"],
                    max_iter=20000,
                )
                score = cross_val_score(make_pipeline(scaler, svc), X, y, cv=folds)
                table[_key(row)] = 1.0 - float(score.mean())
            SVCTable._table = table
        return SVCTable._table

    def __call__(self, X: torch.Tensor) -> torch.Tensor:
        table = self.table()
        grid = Grid.from_space(self.space, self.resolution)
        snapped = grid.snap(X.reshape(-1, X.shape[-1]))
        return torch.tensor([table[_key(row)] for row in snapped], dtype=torch.float64)


def _key(row: torch.Tensor) -> tuple:
    return tuple(round(float(v), 9) for v in row)


def make_problem(name: str) -> GridProblem:
    """The P8 problem ``name`` (see ``PROBLEMS``)."""
    if name == "branin":
        return GridProblem(_reals([(-5, 10), (0, 15)]), 16, 2, 30, _botorch(Branin()))
    if name == "damavandi":
        return GridProblem(_reals([(0, 14)] * 2), 29, 2, 30, damavandi)
    if name == "schaffer":
        return GridProblem(_reals([(-10, 10)] * 2), 21, 2, 30, schaffer)
    if name in ("griewank3", "griewank4"):
        dim = int(name[-1])
        function = Griewank(dim=dim, bounds=[(-10.0, 10.0)] * dim)
        return GridProblem(
            _reals([(-10, 10)] * dim), 21, dim, 10 * dim, _botorch(function)
        )
    if name == "hartmann6":
        return GridProblem(_reals([(0, 1)] * 6), 11, 6, 40, _botorch(Hartmann(dim=6)))
    if name == "svc_cancer":
        space = svc_space()
        return GridProblem(space, 11, 4, 30, SVCTable(space, 11))
    raise ValueError(f"problem must be one of {PROBLEMS}, got {name!r}.")


PROBLEMS = (
    "branin",
    "damavandi",
    "schaffer",
    "griewank3",
    "griewank4",
    "hartmann6",
    "svc_cancer",
)
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


def run_one(name: str, method: str, seed: int) -> dict:
    """The record of one run."""
    problem = make_problem(name)
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
        "problem": name,
        "method": method,
        "seed": seed,
        "budget": problem.budget,
        "n_initial": problem.n_initial,
        "optimal_value": float(problem.grid_values().min()),
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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", default=",".join(PROBLEMS))
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--seeds", default="0-9")
    parser.add_argument("--out", type=Path, default=RECORDS)
    args = parser.parse_args(argv)
    lo, _, hi = args.seeds.partition("-")
    seeds = range(int(lo), int(hi or lo) + 1)
    done = set()
    if args.out.exists():
        for line in args.out.read_text().splitlines():
            r = json.loads(line)
            done.add((r["problem"], r["method"], r["seed"]))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for seed in seeds:
        for name in args.problems.split(","):
            for method in args.methods.split(","):
                if (name, method, seed) in done:
                    continue
                record = run_one(name, method, seed)
                with open(args.out, "a") as fh:
                    fh.write(json.dumps(record) + "\n")
                print(
                    f"{name} {method} seed={seed} evals-to-opt="
                    f"{evaluations_to_optimum(record)} {record['wall_seconds']:.0f}s",
                    flush=True,
                )


if __name__ == "__main__":
    main()
