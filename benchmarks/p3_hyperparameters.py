"""P3 diagnosis: how much of AddTreeGP's test error comes from its hyper-parameters.

For each seed, AddTreeGP is evaluated on a grid of shared hyper-parameters
(one lengthscale for every vertex, one output scale, one noise variance, on
standardized outcomes and normalized inputs). Three choices from the grid are
reported: the one with the highest marginal likelihood, the one with the lowest
leave-one-out squared error, and the oracle (lowest test MSE), next to the
fitted model (``fit_gpytorch_mll`` with the default priors).

Usage::

    python benchmarks/p3_hyperparameters.py --n 24 --seeds 0-9
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import warnings

import torch
from botorch.fit import fit_gpytorch_mll
from gpytorch.mlls import ExactMarginalLogLikelihood

from treebo.models import AddTreeGP
from treebo.test_functions import Jenatton

LENGTHSCALES = (0.1, 0.2, 0.3, 0.5, 1.0, 2.0, 4.0)
OUTPUTSCALES = (0.1, 0.3, 1.0, 3.0, 10.0, 100.0, 1e3, 1e4)
NOISES = (1e-6, 1e-4, 1e-2)


def test_mse(model: AddTreeGP, Xt: torch.Tensor, Yt: torch.Tensor) -> float:
    model.eval()
    with torch.no_grad():
        return float((model.posterior(Xt).mean - Yt).pow(2).mean())


def grid_scores(model: AddTreeGP, Xt, Yt) -> list[tuple[float, float, float, tuple]]:
    """(log marginal likelihood, LOO squared error, test MSE, setting) per setting."""
    y = model.train_targets
    n = y.shape[-1]
    one = torch.ones(n, dtype=y.dtype)
    out = []
    for ls, os_, noise in itertools.product(LENGTHSCALES, OUTPUTSCALES, NOISES):
        model.covar_module.lengthscale = ls
        model.covar_module.outputscale = os_
        model.likelihood.noise = noise
        model.train()
        with torch.no_grad():
            K = model.covar_module(model.train_inputs[0]).to_dense()
            K_inv = torch.linalg.inv(K + noise * torch.eye(n, dtype=K.dtype))
            constant = (one @ K_inv @ y) / (one @ K_inv @ one)  # GLS mean
            model.mean_module.constant.data.fill_(float(constant))
            loo = float(((K_inv @ (y - constant)) / K_inv.diagonal()).pow(2).mean())
            mll = ExactMarginalLogLikelihood(model.likelihood, model)
            value = float(mll(model(*model.train_inputs), y))
        out.append((value, loo, test_mse(model, Xt, Yt), (ls, os_, noise)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=24)
    parser.add_argument("--seeds", default="0-9")
    args = parser.parse_args()
    torch.set_num_threads(1)
    lo, hi = (int(v) for v in args.seeds.split("-"))
    problem = Jenatton("paper")
    space = problem.space
    deps = space.to_hierarchical_dependencies()
    rows = {"fitted": [], "grid_mll": [], "grid_loo": [], "grid_oracle": []}
    for seed in range(lo, hi + 1):
        X_all = space.sample(args.n + 50, seed=seed, by="choice")
        Y_all = problem(X_all).unsqueeze(-1)
        X, Y, Xt, Yt = X_all[: args.n], Y_all[: args.n], X_all[-50:], Y_all[-50:]
        model = AddTreeGP(X, Y, deps, bounds=space.bounds)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
        rows["fitted"].append(test_mse(model, Xt, Yt))
        scores = grid_scores(AddTreeGP(X, Y, deps, bounds=space.bounds), Xt, Yt)
        by_mll = max(scores, key=lambda s: s[0])
        by_loo = min(scores, key=lambda s: s[1])
        oracle = min(scores, key=lambda s: s[2])
        rows["grid_mll"].append(by_mll[2])
        rows["grid_loo"].append(by_loo[2])
        rows["grid_oracle"].append(oracle[2])
        print(
            f"seed {seed}: fitted {rows['fitted'][-1]:.1e} | "
            f"mll {by_mll[2]:.1e} at {by_mll[3]} | loo {by_loo[2]:.1e} at "
            f"{by_loo[3]} | oracle {oracle[2]:.1e} at {oracle[3]}",
            flush=True,
        )
    print(f"\nn = {args.n}, seeds {args.seeds}: median test MSE")
    print("| choice of hyper-parameters | median MSE |")
    print("|---|---|")
    for name, values in rows.items():
        print(f"| {name} | {statistics.median(values):.2e} |")


if __name__ == "__main__":
    main()
