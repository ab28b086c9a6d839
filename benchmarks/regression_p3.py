"""P3: Add-Tree regression on Jenatton data (Ma & Blaschko 2020, Sec. 5.1).

Training points come from P1(a) with Bernoulli(0.5) choices and uniform values;
the test MSE is measured on 50 fresh points, for several training sizes and
seeds. Models: AddTreeGP, BoTorch's HierarchicalConditionalKernelGP, a
SingleTaskGP on the flattened space, and independent per-leaf GPs (one
SingleTaskGP per path on that path's active continuous columns).

Usage::

    python benchmarks/regression_p3.py --sizes 8,12,16,20,24,32,44 --seeds 0-9
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
from botorch.models.hierarchical import HierarchicalConditionalKernelGP
from botorch.models.transforms.input import Normalize
from gpytorch.mlls import ExactMarginalLogLikelihood

from treebo.models import AddTreeGP
from treebo.test_functions import Jenatton


def fit(model):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    model.eval()
    return model


def predict(model, X):
    with torch.no_grad():
        return model.posterior(X).mean.squeeze(-1)


def test_mse(method: str, problem: Jenatton, X, Y, Xt, Yt) -> float:
    space = problem.space
    deps = space.to_hierarchical_dependencies()
    if method == "add_tree":
        pred = predict(fit(AddTreeGP(X, Y, deps, bounds=space.bounds)), Xt)
    elif method == "hck":
        pred = predict(
            fit(
                HierarchicalConditionalKernelGP(
                    X,
                    Y,
                    deps,
                    input_transform=Normalize(space.dim, bounds=space.bounds),
                )
            ),
            Xt,
        )
    elif method == "flat":
        pred = predict(
            fit(
                SingleTaskGP(
                    X, Y, input_transform=Normalize(space.dim, bounds=space.bounds)
                )
            ),
            Xt,
        )
    elif method == "independent":
        tree = space.tree
        mask = tree.path_vertex_mask.double()

        def path_of(Z):
            return (
                (  # noqa: E731
                    (tree.vertex_activity(Z).double() @ mask.T) == mask.sum(-1)
                )
                .double()
                .argmax(-1)
            )

        p_train, p_test = path_of(X), path_of(Xt)
        pred = torch.full((Xt.shape[0],), float(Y.mean()), dtype=torch.float64)
        for p in range(space.num_paths):  # baseline: one GP per leaf
            cols = [
                c for c in space.continuous_columns if tree.path_active_columns[p, c]
            ]
            tr, te = p_train == p, p_test == p
            if tr.sum() == 0 or te.sum() == 0:
                continue
            if tr.sum() == 1:
                pred[te] = Y[tr].squeeze()
                continue
            b = space.bounds[:, cols]
            model = fit(
                SingleTaskGP(
                    X[tr][:, cols],
                    Y[tr],
                    input_transform=Normalize(len(cols), bounds=b),
                )
            )
            pred[te] = predict(model, Xt[te][:, cols])
    else:
        raise ValueError(method)
    return float((pred - Yt.squeeze(-1)).pow(2).mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="8,12,16,20,24,32,44")
    parser.add_argument("--seeds", default="0-9")
    parser.add_argument("--methods", default="add_tree,hck,flat,independent")
    parser.add_argument("--out", default="benchmarks/out/p3.jsonl")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    lo, hi = (int(v) for v in args.seeds.split("-"))
    sizes = [int(v) for v in args.sizes.split(",")]
    methods = args.methods.split(",")
    problem = Jenatton("paper")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    results: dict[tuple[str, int], list[float]] = {}
    for seed in range(lo, hi + 1):
        Xall = problem.space.sample(max(sizes) + 50, seed=seed, by="choice")
        Yall = problem(Xall).unsqueeze(-1)
        Xt, Yt = Xall[-50:], Yall[-50:]
        for n in sizes:
            for method in methods:
                t0 = time.perf_counter()
                mse = test_mse(method, problem, Xall[:n], Yall[:n], Xt, Yt)
                results.setdefault((method, n), []).append(mse)
                with open(out, "a") as fh:
                    fh.write(
                        json.dumps(
                            {
                                "method": method,
                                "n": n,
                                "seed": seed,
                                "mse": mse,
                                "seconds": time.perf_counter() - t0,
                                "date": time.strftime("%Y-%m-%d"),
                            }
                        )
                        + "\n"
                    )
    print(
        f"P3 test MSE on 50 points, median over seeds {lo}-{hi} "
        f"({time.strftime('%Y-%m-%d')})\n"
    )
    print("| n | " + " | ".join(methods) + " |")
    print("|---|" + "---|" * len(methods))
    for n in sizes:
        cells = [f"{statistics.median(results[(m, n)]):.2e}" for m in methods]
        print(f"| {n} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
