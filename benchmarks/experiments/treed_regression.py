"""Held-out MSE of treed GPs against stationary GPs on non-stationary functions.

For each function, training size and seed, every model is fitted to the same
uniformly random training points and scored on 2,000 uniformly random test
points (inputs scaled to the unit cube, MSE divided by the test variance of
the function, so 1.0 is "predicts the mean").

Models: ``stgp`` (``SingleTaskGP`` defaults), ``stgp_warp`` (with a
Kumaraswamy ``Warp`` input transform), and ``treed`` variants named by their
settings, e.g. ``treed_m5`` (``min_leaf_size=5``), ``treed_m10_d1``
(``max_depth=1``), ``_noprune`` for paper 003's unpruned tree, ``_warp`` for
HTBO-WARP.

Usage::

    python -m benchmarks.treed_regression --functions halves,rkhs,exp2d \\
        --sizes 20,40,60,100 --seeds 0-4 --models stgp,treed_m5,treed_m5_d1
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import warnings
from pathlib import Path

import torch
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.models.transforms.input import Warp
from gpytorch.mlls import ExactMarginalLogLikelihood

from treebo.test_functions.nonstationary import RKHS, Exp2D
from treebo.treed import TreedGP, WeightedPseudoLikelihood
from treebo.treed.partition import build_partition
from treebo.treed.pruning import loo_prune


def treed_variant(split_test=None, prune: bool = True) -> type[TreedGP]:
    """``TreedGP`` whose partition accepts each split by ``split_test`` (see
    ``build_partition``) and is pruned or not (Assael et al.'s (2014) tree)."""

    class Variant(TreedGP):
        def grow_partition(self, X, y, min_leaf_size, max_depth):
            partition = build_partition(X, y, min_leaf_size, max_depth, split_test)
            return loo_prune(partition, X, y) if prune else partition

    return Variant


def halves(X):
    """Rugged for x1 < 0.5, a gentle slope for x1 >= 0.5 (unit square)."""
    x1, x2 = X[..., 0], X[..., 1]
    rugged = torch.sin(4 * torch.pi * x1) * torch.sin(4 * torch.pi * x2)
    return torch.where(x1 < 0.5, rugged, 0.5 * x2)


def unit_function(name: str):
    """``(f, d)``: the function on the unit cube."""
    if name == "halves":
        return halves, 2
    problem = {"rkhs": RKHS, "exp2d": Exp2D}[name]()
    lo, hi = problem.bounds.double()

    def f(U):
        return problem(lo + (hi - lo) * U)

    return f, problem.dim


def fit_model(name: str, X, Y):
    if name.startswith("stgp"):
        d = X.shape[-1]
        tf = Warp(d=d, indices=list(range(d))) if name == "stgp_warp" else None
        model = SingleTaskGP(X, Y, input_transform=tf)
        fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
        return model
    settings = {"min_leaf_size": 5, "max_depth": None, "warp": False}
    variant = {}
    for part in name.split("_")[1:]:
        if part == "warp":
            settings["warp"] = True
        elif part.startswith("ev"):  # experiment: treed_split_evidence.py
            from benchmarks.experiments.treed_split_evidence import (
                evidence_split_test,
            )

            # ev: no amplitude floor; ev2 / ev3: floor 1e-2 / 1e-3
            floor = 10.0 ** -int(part[2:]) if part[2:] else 0.0
            Ys = (Y - Y.mean()) / Y.std()
            variant["split_test"] = evidence_split_test(X, Ys, floor)
            variant["prune"] = False  # the split test alone, as measured
        elif part == "noprune":
            variant["prune"] = False
        elif part.startswith("m"):
            settings["min_leaf_size"] = int(part[1:])
        elif part.startswith("d"):
            settings["max_depth"] = int(part[1:])
        else:
            raise ValueError(f"unknown setting {part!r} in {name!r}")
    model = (treed_variant(**variant) if variant else TreedGP)(X, Y, **settings)
    fit_gpytorch_mll(WeightedPseudoLikelihood(model))
    return model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--functions", default="halves,rkhs,exp2d")
    parser.add_argument("--sizes", default="20,40,60,100")
    parser.add_argument("--seeds", default="0-4")
    parser.add_argument("--models", default="stgp,stgp_warp,treed_m5,treed_m5_warp")
    parser.add_argument(
        "--out", default="benchmarks/experiments/records/treed_regression.jsonl"
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    lo, _, hi = args.seeds.partition("-")
    seeds = range(int(lo), int(hi or lo) + 1)
    results: dict[tuple, list[dict]] = {}
    with Path(args.out).open("a") as out:
        for fname in args.functions.split(","):
            f, d = unit_function(fname)
            for n in map(int, args.sizes.split(",")):
                for seed in seeds:
                    gen = torch.Generator().manual_seed(seed)
                    X = torch.rand(n, d, generator=gen, dtype=torch.float64)
                    Xt = torch.rand(2000, d, generator=gen, dtype=torch.float64)
                    Y, ft = f(X).unsqueeze(-1), f(Xt)
                    for model_name in args.models.split(","):
                        t0 = time.perf_counter()
                        model = fit_model(model_name, X, Y)
                        with torch.no_grad():
                            mu = model.posterior(Xt.unsqueeze(-2)).mean.reshape(-1)
                        nmse = float((mu - ft).square().mean() / ft.var())
                        row = {
                            "function": fname,
                            "n": n,
                            "seed": seed,
                            "model": model_name,
                            "nmse": nmse,
                            "seconds": time.perf_counter() - t0,
                            "leaves": getattr(model, "num_leaves", 1),
                        }
                        out.write(json.dumps(row) + "\n")
                        out.flush()
                        results.setdefault((fname, n, model_name), []).append(row)
    print_table(results, args.models.split(","))


def print_table(results: dict[tuple, list[dict]], models: list[str]) -> None:
    """Markdown: median [IQR] normalized MSE per function, size and model,
    then the median leaves and seconds per fit of each model."""

    def quartiles(v: list[float]) -> tuple[float, float, float]:
        q = statistics.quantiles(v, n=4, method="inclusive") if len(v) > 1 else v * 3
        return q[0], statistics.median(v), q[-1]

    print("| function | n | " + " | ".join(models) + " |")
    print("|---" * (len(models) + 2) + "|")
    cells: dict[tuple, list[str]] = {}
    for (fname, n, _model), rows in results.items():
        lo, med, hi = quartiles([r["nmse"] for r in rows])
        cells.setdefault((fname, n), []).append(f"{med:.3f} [{lo:.3f}, {hi:.3f}]")
    for (fname, n), row in cells.items():
        print(f"| {fname} | {n} | " + " | ".join(row) + " |")
    print()
    for model in models:
        rows = [r for (_, _, m), v in results.items() if m == model for r in v]
        leaves = statistics.median(r["leaves"] for r in rows)
        seconds = statistics.median(r["seconds"] for r in rows)
        print(f"{model}: median leaves {leaves:g}, seconds per fit {seconds:.2f}")


if __name__ == "__main__":
    main()
