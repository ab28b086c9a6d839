"""P3: Add-Tree regression on Jenatton data (Ma & Blaschko 2020, Sec. 5.1).

Training points come from P1(a) with Bernoulli(0.5) choices and uniform values;
the test MSE is measured on 50 fresh points, for several training sizes and
seeds. Models: AddTreeGP, BoTorch's HierarchicalConditionalKernelGP, a
SingleTaskGP on the flattened space, independent per-leaf GPs (one
SingleTaskGP per path on that path's active continuous columns), and
treebo's batched per-leaf models: ``leaf_gp`` (IndependentLeafGP),
``jenatton_tree`` and ``jenatton_tree_nonlinear`` (JenattonTreeGP). Each can be
fitted by marginal likelihood (the default) or, with the suffix ``_loo``, by
leave-one-out likelihood with a 1e-6 noise floor; ``add_tree_shared`` shares one
lengthscale and one output scale across all vertices (paper 000's single
``k_c``).

Runs append to ``--out`` and skip the cells already there, so a stopped run
resumes with the same arguments.

Usage::

    python -m benchmarks.experiments.regression_p3 --sizes 8,12,16,20,24,32,44 \
        --seeds 0-9 \
        --methods add_tree,add_tree_shared_loo,hck,hck_loo,flat,flat_loo,independent
    python -m benchmarks.experiments.regression_p3 \
        --sizes 10,16,20,24,30,36,44,52,60 --seeds 0-19 \
        --methods add_tree,jenatton_tree,jenatton_tree_nonlinear,leaf_gp \
        --out benchmarks/records/p3_regression.jsonl \
        --plot benchmarks/plots/p3_regression.png
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import warnings
from pathlib import Path

import torch
from botorch.exceptions import ModelFittingError
from botorch.models import SingleTaskGP
from botorch.models.hierarchical import HierarchicalConditionalKernelGP
from botorch.models.transforms.input import Normalize
from gpytorch.mlls import LeaveOneOutPseudoLikelihood

from treebo.add_tree import AddTreeGP
from treebo.gp import fit_model, noise_floor_likelihood
from treebo.gp.exact_mll import CholeskyMarginalLogLikelihood
from treebo.jenatton import IndependentLeafGP, JenattonTreeGP, fit_leaf_gp
from treebo.test_functions import Jenatton

#: The fit objective of each criterion.
OBJECTIVES = {
    "mll": CholeskyMarginalLogLikelihood,
    "loo": LeaveOneOutPseudoLikelihood,
}

FALLBACKS: list[str] = []  # fits that failed, for the record of the current cell


def fit(make_model, criterion: str):
    """Fit a fresh ``make_model()`` by ``criterion``, falling back if it fails.

    If every attempt fails, a fresh model is fitted by the marginal likelihood;
    if that fails too, the fresh model keeps its initial hyper-parameters. Each
    fallback is recorded in ``FALLBACKS`` (and in the output line), not hidden.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fit_model(make_model(), OBJECTIVES[criterion])
        except ModelFittingError:
            FALLBACKS.append(f"{criterion} fit failed")
        if criterion != "mll":
            try:
                return fit_model(make_model())
            except ModelFittingError:
                FALLBACKS.append("mll fit failed")
        return make_model().eval()


def predict(model, X):
    with torch.no_grad():
        return model.posterior(X).mean.squeeze(-1)


def test_mse(method: str, problem: Jenatton, X, Y, Xt, Yt) -> float:
    """Test MSE of ``method``: a base model plus optional suffixes.

    ``_shared``: one lengthscale and one output scale for all vertices
    (AddTreeGP only). ``_bias``: ``vertex_bias=True`` (AddTreeGP only).
    ``_shc``: ``shared_component=True`` (AddTreeGP only).
    ``_loo``: hyper-parameters by leave-one-out likelihood and a noise floor of
    1e-6 (the data are noise-free) instead of the marginal likelihood and
    BoTorch's default likelihood.
    """
    space = problem.space
    deps = space.to_hierarchical_dependencies()
    if method in ("jenatton_tree", "jenatton_tree_nonlinear", "leaf_gp"):
        if method == "leaf_gp":
            leaf_model = IndependentLeafGP(X, Y, space)
        else:
            leaf_model = JenattonTreeGP(
                X, Y, space, nonlinear=method.endswith("nonlinear")
            )
        pred = predict(fit_leaf_gp(leaf_model), Xt)
        return float((pred - Yt.squeeze(-1)).pow(2).mean())
    base, *suffixes = method.split("_")
    unknown = set(suffixes) - {"shared", "loo", "tree", "bias", "shc"}
    if unknown:
        raise ValueError(f"unknown suffix in method {method!r}: {unknown}")
    criterion = "loo" if "loo" in suffixes else "mll"

    def options() -> dict:
        return {"likelihood": noise_floor_likelihood(1e-6)} if "loo" in suffixes else {}

    if base == "add":  # add_tree[_shared][_loo]
        share = "all" if "shared" in suffixes else "none"

        def model():
            return AddTreeGP(
                X,
                Y,
                deps,
                bounds=space.bounds,
                share_lengthscales=share,
                share_outputscales=share,
                vertex_bias="bias" in suffixes,
                shared_component="shc" in suffixes,
                **options(),
            )

        pred = predict(fit(model, criterion), Xt)
    elif base == "hck":

        def model():
            hck = HierarchicalConditionalKernelGP(
                X, Y, deps, input_transform=Normalize(space.dim, bounds=space.bounds)
            )
            if "loo" in suffixes:
                hck.likelihood = noise_floor_likelihood(1e-6).to(X)
            return hck

        pred = predict(fit(model, criterion), Xt)
    elif base == "flat":

        def model():
            bounds = space.bounds
            transform = Normalize(space.dim, bounds=bounds)
            return SingleTaskGP(X, Y, input_transform=transform, **options())

        pred = predict(fit(model, criterion), Xt)
    elif base == "independent":
        tree = space.tree
        mask = tree.path_vertex_mask.double()

        def path_of(Z):
            active = tree.vertex_activity(Z).double() @ mask.T
            return (active == mask.sum(-1)).double().argmax(-1)

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
            leaf_X, leaf_Y = X[tr][:, cols], Y[tr]
            transform = Normalize(len(cols), bounds=space.bounds[:, cols])

            def model(leaf_X=leaf_X, leaf_Y=leaf_Y, transform=transform):
                return SingleTaskGP(
                    leaf_X, leaf_Y, input_transform=transform, **options()
                )

            pred[te] = predict(fit(model, criterion), Xt[te][:, cols])
    else:
        raise ValueError(method)
    return float((pred - Yt.squeeze(-1)).pow(2).mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="8,12,16,20,24,32,44")
    parser.add_argument("--seeds", default="0-9")
    parser.add_argument("--methods", default="add_tree,hck,flat,independent")
    parser.add_argument("--out", default="benchmarks/experiments/records/p3.jsonl")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--plot", help="write the median MSE against n to this PNG")
    parser.add_argument(
        "--tables-only", action="store_true", help="print the tables of --out"
    )
    args = parser.parse_args()
    if args.tables_only:
        print_tables(Path(args.out))
        if args.plot:
            plot(Path(args.out), Path(args.plot))
        return
    torch.set_num_threads(args.threads)
    lo, hi = (int(v) for v in args.seeds.split("-"))
    sizes = [int(v) for v in args.sizes.split(",")]
    methods = args.methods.split(",")
    problem = Jenatton("paper")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = set()
    if out.exists():  # resume: skip the cells already written
        for line in out.read_text().splitlines():
            r = json.loads(line)
            done.add((r["method"], r["n"], r["seed"]))
    for seed in range(lo, hi + 1):
        Xall = problem.space.sample(max(sizes) + 50, seed=seed, by="choice")
        Yall = problem(Xall).unsqueeze(-1)
        Xt, Yt = Xall[-50:], Yall[-50:]
        for n in sizes:
            for method in methods:
                if (method, n, seed) in done:
                    continue
                t0 = time.perf_counter()
                FALLBACKS.clear()
                mse = test_mse(method, problem, Xall[:n], Yall[:n], Xt, Yt)
                with open(out, "a") as fh:
                    fh.write(
                        json.dumps(
                            {
                                "method": method,
                                "n": n,
                                "seed": seed,
                                "mse": mse,
                                "seconds": time.perf_counter() - t0,
                                "fallbacks": list(FALLBACKS),
                                "date": time.strftime("%Y-%m-%d"),
                            }
                        )
                        + "\n"
                    )
    print_tables(out)
    if args.plot:
        plot(out, Path(args.plot))


def plot(path: Path, png: Path) -> None:
    """Median test MSE (and quartiles) against the training size, per method."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    results: dict[str, dict[int, list[float]]] = {}
    for line in path.read_text().splitlines():
        r = json.loads(line)
        results.setdefault(r["method"], {}).setdefault(r["n"], []).append(r["mse"])
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for method, by_n in results.items():
        sizes = sorted(by_n)
        q = np.array([np.percentile(by_n[n], [25, 50, 75]) for n in sizes])
        ax.plot(sizes, q[:, 1], marker="o", label=method)
        ax.fill_between(sizes, q[:, 0], q[:, 2], alpha=0.15)
    ax.axhline(1e-4, color="k", ls=":", lw=1)
    ax.set_yscale("log")
    ax.set_xlabel("training points")
    ax.set_ylabel("test MSE (median, quartiles)")
    ax.set_title("P3: regression on Jenatton data")
    ax.legend(fontsize="small")
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=100)


def print_tables(path: Path) -> None:
    """Median and worst test MSE per method and size, from a JSONL output."""
    results: dict[tuple[str, int], list[dict]] = {}
    for line in path.read_text().splitlines():
        r = json.loads(line)
        results.setdefault((r["method"], r["n"]), []).append(r)
    methods = list(dict.fromkeys(m for m, _ in results))
    sizes = sorted({n for _, n in results})
    for title, stat in (("median", statistics.median), ("worst seed", max)):
        seeds = {len(v) for v in results.values()}
        print(f"\nP3 test MSE on 50 points, {title} over {sorted(seeds)} seeds\n")
        print("| n | " + " | ".join(methods) + " |")
        print("|---|" + "---|" * len(methods))
        for n in sizes:
            cells = [
                f"{stat(r['mse'] for r in results[(m, n)]):.1e}"
                if (m, n) in results
                else "-"
                for m in methods
            ]
            print(f"| {n} | " + " | ".join(cells) + " |")
    fallbacks = [r for rs in results.values() for r in rs if r.get("fallbacks")]
    if fallbacks:
        print(f"\n{len(fallbacks)} fits fell back to the marginal likelihood:")
        for r in fallbacks:
            print(f"  {r['method']} n={r['n']} seed={r['seed']}: {r['fallbacks']}")


if __name__ == "__main__":
    main()
