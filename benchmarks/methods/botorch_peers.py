"""BoTorch peers: a GP, LogEI and BoTorch's mixed optimizers, one point at a time.

==================  ============================================================
``hck_logei``       ``HierarchicalConditionalKernelGP``; ``optimize_acqf_mixed``
                    over the paths (each path's choices and inactive columns fixed)
``flat_logei``      ``SingleTaskGP`` on the flattened space, likewise
``flat_alt``        the same GP with ``optimize_acqf_mixed_alternating`` (no path
                    listing: discrete steps)
``flat_warp``       ``SingleTaskGP`` with a Kumaraswamy input warp (BO-WARP)
``addtree_logei``   the plain BoTorch loop on treebo's model: ``AddTreeGP`` with its
                    defaults (BoTorch's likelihood, ``Standardize``), LogEI,
                    ``optimize_acqf_mixed`` over the paths; the shared design topped
                    up to 10 points with uniform samples
==================  ============================================================

These runs take minutes to hours: with a checkpoint folder they save their
points after every evaluation and resume from there.
"""

from __future__ import annotations

import json
import math
import time
import warnings
from pathlib import Path

import torch
from botorch.acquisition import LogExpectedImprovement
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.models.hierarchical import HierarchicalConditionalKernelGP
from botorch.models.transforms.input import ChainedInputTransform, Normalize, Warp
from botorch.optim import optimize_acqf_mixed, optimize_acqf_mixed_alternating
from gpytorch.mlls import ExactMarginalLogLikelihood

from treebo import Integer, TreeSpace
from treebo.add_tree import AddTreeGP

KINDS = ("hck_logei", "flat_logei", "flat_alt", "flat_warp", "addtree_logei")

#: The plain loop's initial design: at least this many points.
PLAIN_LOOP_INITIAL = 10


def discrete_values(space: TreeSpace) -> tuple[dict, dict]:
    """``(discrete_dims, cat_dims)`` of ``space`` for BoTorch's optimizer."""
    discrete, categorical = {}, {}
    for name, column in space.columns.items():
        if column.role == "integer":
            p = column.param
            if isinstance(p, Integer):
                values = range(p.low, p.high + 1)
                codes = [math.log10(v) if p.log_scale else float(v) for v in values]
            else:  # an ordered categorical: its ranks
                codes = list(space.choice_codes[name].values())
            discrete[column.column] = codes
        elif column.role in ("categorical", "choice"):
            categorical[column.column] = list(space.choice_codes[name].values())
    return discrete, categorical


def fixed_features_per_path(space: TreeSpace) -> list[dict[int, float]]:
    """For optimize_acqf_mixed: each path's choices and inactive columns fixed."""
    out = []
    values = space.tree.path_choice_values
    active = space.tree.path_active_columns
    for p in range(space.num_paths):
        fixed = {}
        for c in range(space.dim):
            if not math.isnan(values[p, c]):
                fixed[c] = float(values[p, c])
            elif not active[p, c]:
                fixed[c] = float(space.canonical_values[c])
        out.append(fixed)
    return out


def botorch_proposal(
    kind: str, space: TreeSpace, X: torch.Tensor, y: torch.Tensor, seed: int
) -> torch.Tensor:
    """One proposal of a BoTorch peer (maximizing ``y``).

    The seed is set before the fit as well as before the acquisition
    optimization: when a fit fails, BoTorch retries from hyper-parameters
    sampled from their priors, and those draws should not depend on what ran
    earlier in the process.
    """
    torch.manual_seed(seed)
    bounds = space.bounds
    transform = Normalize(d=space.dim, bounds=bounds)
    if kind == "hck_logei":
        model = HierarchicalConditionalKernelGP(
            X, y, space.to_hierarchical_dependencies(), input_transform=transform
        )
    elif kind == "addtree_logei":  # what a BoTorch user writes with treebo's model
        model = AddTreeGP(
            X,
            y,
            space.tree,
            bounds=bounds,
            categorical_values=space.categorical_values,
        )
    elif kind == "flat_warp":  # input warping (Snoek et al., 2014): BO-WARP
        indices = list(range(space.dim))
        warp = Warp(
            d=space.dim,
            indices=indices,
            bounds=torch.stack([torch.zeros(space.dim), torch.ones(space.dim)]).to(X),
        )
        chained = ChainedInputTransform(normalize=transform, warp=warp)
        model = SingleTaskGP(X, y, input_transform=chained)
    else:
        model = SingleTaskGP(X, y, input_transform=transform)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
        acqf = LogExpectedImprovement(model, best_f=y.max())
        if kind == "flat_alt":  # no path listing: discrete steps
            discrete, categorical = discrete_values(space)
            cand, _ = optimize_acqf_mixed_alternating(
                acqf,
                bounds=bounds,
                discrete_dims=discrete or None,
                cat_dims=categorical or None,
                num_restarts=10,
                raw_samples=512,
            )
        else:
            cand, _ = optimize_acqf_mixed(
                acqf,
                bounds=bounds,
                q=1,
                num_restarts=10,
                raw_samples=512,
                fixed_features_list=fixed_features_per_path(space),
            )
    return space.canonicalize(cand.detach())


def _peer_state_path(checkpoint: Path, problem: str, method: str, seed: int) -> Path:
    return checkpoint / f"{problem}_{method}_{seed}.json"


def _load_peer_state(
    checkpoint: Path | None, problem: str, method: str, seed: int
) -> dict | None:
    """A BoTorch peer's evaluations so far (``None`` without a checkpoint)."""
    if checkpoint is None:
        return None
    path = _peer_state_path(checkpoint, problem, method, seed)
    if not path.exists():
        return None
    state = json.loads(path.read_text())
    key = (state["problem"], state["method"], state["seed"])
    if key != (problem, method, seed) or len(state["X"]) != len(state["values"]):
        raise ValueError(f"checkpoint {path} does not hold {problem} {method} {seed}.")
    return state


def _save_peer_state(
    checkpoint: Path,
    problem: str,
    method: str,
    seed: int,
    X: torch.Tensor,
    values: list[float],
    proposal_seconds: list[float],
) -> None:
    """Write a BoTorch peer's evaluations so far, atomically (temp file + rename)."""
    checkpoint.mkdir(parents=True, exist_ok=True)
    path = _peer_state_path(checkpoint, problem, method, seed)
    state = {
        "problem": problem,
        "method": method,
        "seed": seed,
        "X": X.tolist(),
        "values": values,
        "proposal_seconds": proposal_seconds,
    }
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state))
    tmp.replace(path)


def run_botorch_peer(
    kind: str,
    problem,
    name: str,
    design: list[dict],
    seed: int,
    budget: int,
    checkpoint: Path | None = None,
) -> tuple[list[float], list[float]]:
    """``(values, proposal_seconds)`` of the peer ``kind`` from ``design``;
    ``name`` keys its checkpoint (``<problem>_<method>_<seed>.json``)."""
    space = problem.space
    state = _load_peer_state(checkpoint, name, kind, seed)
    proposal_seconds: list[float] = []
    if state is None:
        if kind == "addtree_logei" and len(design) < PLAIN_LOOP_INITIAL:
            extra = space.sample(PLAIN_LOOP_INITIAL - len(design), seed=20_000 + seed)
            design = design + space.to_dicts(extra)
        X = space.to_tensor(design)
        values = [problem.objective(c) for c in design]
    else:
        n = min(len(state["values"]), budget)
        X = torch.tensor(state["X"][:n], dtype=torch.float64)
        values = list(state["values"][:n])
        proposal_seconds = state["proposal_seconds"][: n - len(design)]
    while len(values) < budget:
        y = -torch.tensor(values, dtype=torch.float64).unsqueeze(-1)
        t0 = time.perf_counter()
        x = botorch_proposal(kind, space, X, y, seed * 1000 + len(values))
        proposal_seconds.append(time.perf_counter() - t0)
        X = torch.cat([X, x])
        values.append(problem.objective(space.to_dict(x[0])))
        if checkpoint is not None:
            _save_peer_state(checkpoint, name, kind, seed, X, values, proposal_seconds)
    return values[:budget], proposal_seconds
