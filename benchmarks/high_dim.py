"""High-dimensional BO (paper 002's P4 and P5): treebo's Tree-GP-UCB against peers.

Methods (all start from the same 10 uniform random points per seed):

    tree_additive   ``TreeOptimizer(strategy="tree_additive")`` with its defaults
                    (structure learned every 15 proposals, additive UCB by
                    zooming message passing)
    random_tree     the same model on a fixed random spanning tree drawn per
                    seed, never learned (the random-decomposition baseline)
    vanilla         BoTorch's ``SingleTaskGP`` (dimension-scaled prior),
                    ``LogExpectedImprovement``, ``optimize_acqf`` (10 restarts,
                    512 raw samples) on inputs scaled to the unit cube
    random          uniform random search

Each run appends one JSON line (``values``: noise-free f at every evaluated
point; ``proposal_seconds``; for tree-additive methods ``f1``: the F1 score of
the learned edges against the true graph after every structure update, where
the problem has one). Finished runs are skipped when run again; with
``--checkpoint DIR`` a vanilla run (hours at d = 250) saves its state after every
proposal under ``DIR`` and an interrupted run resumes from it exactly.

    python -m benchmarks.run high_dim --problems star10,star25 \\
        --methods tree_additive,random_tree,vanilla,random --seeds 0-9 \\
        --budget 300 --checkpoint /tmp/high_dim
"""

from __future__ import annotations

import time
from pathlib import Path

import torch
from botorch.acquisition import LogExpectedImprovement
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.optim import optimize_acqf
from gpytorch.mlls import ExactMarginalLogLikelihood

from treebo import TreeOptimizer
from treebo.loop.box import box_space
from treebo.tree_additive import TreeAdditiveOptions

from .harness import stamp
from .problems.high_dim import HIGH_DIM_PROBLEMS, HighDimProblem

N_INITIAL = 10


def edge_f1(found: torch.Tensor, truth: torch.Tensor) -> float:
    """F1 score of an edge set against the true one (paper 002, eq. 8)."""
    a = {tuple(sorted(e)) for e in found.reshape(-1, 2).tolist()}
    b = {tuple(sorted(e)) for e in truth.reshape(-1, 2).tolist()}
    hits = len(a & b)
    if hits == 0:
        return 0.0
    precision, recall = hits / len(a), hits / len(b)
    return 2 * precision * recall / (precision + recall)


def random_spanning_tree(d: int, seed: int) -> tuple[tuple[int, int], ...]:
    """A uniformly random attachment tree: each variable joins an earlier one."""
    g = torch.Generator().manual_seed(10_000 + seed)
    order = torch.randperm(d, generator=g).tolist()
    parents = [order[int(torch.randint(k, (1,), generator=g))] for k in range(1, d)]
    return tuple((p, c) for p, c in zip(parents, order[1:], strict=True))


def tree_additive_options(method: str, d: int, seed: int) -> TreeAdditiveOptions:
    if method == "tree_additive":
        return TreeAdditiveOptions()
    if method == "random_tree":
        return TreeAdditiveOptions(edges=random_spanning_tree(d, seed))
    raise ValueError(f"unknown method {method!r}")


def vanilla_proposal(X: torch.Tensor, y: torch.Tensor, seed: int) -> torch.Tensor:
    """One BoTorch proposal on the unit cube (``y`` to maximize)."""
    model = SingleTaskGP(X, y)
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    acqf = LogExpectedImprovement(model, best_f=y.max())
    d = X.shape[-1]
    unit = torch.stack([torch.zeros(d), torch.ones(d)]).to(X)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        x, _ = optimize_acqf(acqf, unit, q=1, num_restarts=10, raw_samples=512)
    return x


def save_partial(
    path: Path,
    X: torch.Tensor,
    observed: list[float],
    proposal_seconds: list[float],
    problem: HighDimProblem,
) -> None:
    """Save an unfinished run (points, observations, noise state) atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {
        "X": X,
        "observed": observed,
        "proposal_seconds": proposal_seconds,
        "noise_state": problem.generator.get_state(),
    }
    tmp = path.with_suffix(".tmp")
    torch.save(state, tmp)
    tmp.replace(path)


def seeded_problem(
    problem_name: str, seed: int
) -> tuple[HighDimProblem, torch.Tensor, torch.Generator]:
    """A seed's problem (noise stream seeded), initial design and generator.

    The generator has drawn the design; random search draws the rest from it.
    """
    problem: HighDimProblem = HIGH_DIM_PROBLEMS[problem_name](seed)
    problem.generator.manual_seed(20_000 + seed)
    low, width = problem.bounds[0], problem.bounds[1] - problem.bounds[0]
    g = torch.Generator().manual_seed(seed)
    shape = (N_INITIAL, problem.dim)
    design = low + width * torch.rand(*shape, generator=g, dtype=torch.float64)
    return problem, design, g


def tree_additive_run(
    problem: HighDimProblem,
    method: str,
    seed: int,
    budget: int,
    design: torch.Tensor,
    observed: list[float],
) -> tuple[torch.Tensor, list[float], list[float], list[float], TreeOptimizer]:
    """A tree-additive method's run from ``design`` (already observed).

    Returns:
        The evaluated points, the observations, the seconds per proposal, the
        edge F1 after every structure change (where the problem has a graph)
        and the optimizer.
    """
    d, bounds = problem.dim, problem.bounds
    space = box_space(bounds)
    names = space.parameter_names
    opt = TreeOptimizer(
        space,
        strategy="tree_additive",
        options=tree_additive_options(method, d, seed),
        seed=seed,
        n_initial=N_INITIAL,
    )
    for x, v in zip(design.tolist(), observed, strict=True):
        opt.tell(dict(zip(names, x, strict=True)), v)
    X, observed = design.clone(), list(observed)
    proposal_seconds: list[float] = []
    f1: list[float] = []
    last_edges = None
    while X.shape[0] < budget:
        t0 = time.perf_counter()
        params = opt.ask()
        proposal_seconds.append(time.perf_counter() - t0)
        x = torch.tensor([[params[n] for n in names]], dtype=torch.float64)
        v = float(problem.observe(x))
        opt.tell(params, v)
        X = torch.cat([X, x])
        observed.append(v)
        edges = opt.strategy.edges
        if (
            problem.edges is not None
            and edges is not None
            and (last_edges is None or not torch.equal(edges, last_edges))
        ):
            f1.append(edge_f1(edges, problem.edges))
            last_edges = edges
    return X, observed, proposal_seconds, f1, opt


def run(
    problem_name: str,
    method: str,
    seed: int,
    budget: int,
    checkpoint: Path | None = None,
) -> dict:
    """One run's record; a vanilla run saves its state under the folder
    ``checkpoint``."""
    t_start = time.time()
    problem, design, g = seeded_problem(problem_name, seed)
    d, bounds = problem.dim, problem.bounds
    low, width = bounds[0], bounds[1] - bounds[0]
    X = design.clone()
    observed = list(problem.observe(X).tolist())
    proposal_seconds: list[float] = []
    f1: list[float] = []
    if method in ("tree_additive", "random_tree"):
        X, observed, proposal_seconds, f1, _ = tree_additive_run(
            problem, method, seed, budget, design, observed
        )
    elif method == "vanilla":
        partial = None
        if checkpoint is not None:
            partial = checkpoint / f"{problem_name}_{method}_{seed}_{budget}.pt"
            if partial.exists():
                state = torch.load(partial)
                X, observed = state["X"], state["observed"]
                proposal_seconds = state["proposal_seconds"]
                problem.generator.set_state(state["noise_state"])
        while X.shape[0] < budget:
            U = (X - low) / width
            y = -torch.tensor(observed, dtype=torch.float64).unsqueeze(-1)
            t0 = time.perf_counter()
            u = vanilla_proposal(U, y, seed * 100_000 + X.shape[0])
            proposal_seconds.append(time.perf_counter() - t0)
            x = low + width * u
            X = torch.cat([X, x])
            observed.append(float(problem.observe(x)))
            if partial is not None:
                save_partial(partial, X, observed, proposal_seconds, problem)
        if partial is not None:
            partial.unlink(missing_ok=True)
    elif method == "random":
        rest = torch.rand(budget - N_INITIAL, d, generator=g, dtype=torch.float64)
        X = torch.cat([X, low + width * rest])
    else:
        raise ValueError(f"unknown method {method!r}")
    record = {
        "problem": problem_name,
        "method": method,
        "seed": seed,
        "budget": budget,
        "optimal_value": problem.optimal_value,
        "values": problem.true(X[:budget]).tolist(),
        "proposal_seconds": proposal_seconds,
    }
    if f1:
        record["f1"] = f1
    record.update(stamp(time.time() - t_start))
    return record
