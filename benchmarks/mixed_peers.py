"""BoTorch's flattened GP on spaces with integers, categoricals and many paths.

``flat_alternating_proposal``: a ``SingleTaskGP`` on the flat encoding (inactive
columns at their canonical values), LogEI, maximized by BoTorch's
``optimize_acqf_mixed_alternating`` with the integer columns as discrete
dimensions and the choice and categorical columns as categorical ones: the
peer that does not enumerate paths either.
"""

from __future__ import annotations

import math
import warnings

import torch
from botorch.acquisition import LogExpectedImprovement
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.models.transforms.input import Normalize
from botorch.optim import optimize_acqf_mixed_alternating
from gpytorch.mlls import ExactMarginalLogLikelihood

from treebo import Integer, TreeSpace


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


def flat_alternating_proposal(
    space: TreeSpace, X: torch.Tensor, y: torch.Tensor, seed: int
) -> torch.Tensor:
    """One proposal (maximizing ``y``) of the flattened GP."""
    torch.manual_seed(seed)
    model = SingleTaskGP(
        X, y, input_transform=Normalize(d=space.dim, bounds=space.bounds)
    )
    discrete, categorical = discrete_values(space)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
        acqf = LogExpectedImprovement(model, best_f=y.max())
        cand, _ = optimize_acqf_mixed_alternating(
            acqf,
            bounds=space.bounds,
            discrete_dims=discrete or None,
            cat_dims=categorical or None,
            num_restarts=10,
            raw_samples=512,
        )
    return space.canonicalize(cand.detach())


def run_smac(problem, seed: int, budget: int) -> list[float]:
    """SMAC3's hyperparameter-optimization facade (random forest surrogate),
    ask/tell on the space exported to ConfigSpace, its own initial design."""
    import tempfile

    from smac import HyperparameterOptimizationFacade, Scenario
    from smac.runhistory.dataclasses import TrialValue

    from treebo.integrations.configspace import configspace_from_tree_space

    cs = configspace_from_tree_space(problem.space, seed=seed)
    with tempfile.TemporaryDirectory() as folder:
        scenario = Scenario(
            cs,
            deterministic=True,
            n_trials=budget,
            seed=seed,
            output_directory=folder,
        )
        smac = HyperparameterOptimizationFacade(
            scenario,
            lambda config, seed=0: 0.0,  # ask/tell: never called
            overwrite=True,
            logging_level=40,
        )
        values = []
        for _ in range(budget):
            info = smac.ask()
            config = {
                k: v.item() if hasattr(v, "item") else v
                for k, v in dict(info.config).items()
            }
            value = problem.objective(problem.space.validate(config))
            smac.tell(info, TrialValue(cost=value))
            values.append(value)
    return values
