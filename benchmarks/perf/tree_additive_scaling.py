"""Seconds per proposal of the tree-additive strategy against vanilla BoTorch.

For each dimension ``d``, ``n`` Styblinski-Tang observations (uniform points)
are told to a ``TreeOptimizer(strategy="tree_additive")``; then proposals are
timed: the first (fit, structure learning, refit, acquisition), and the next
``learn_interval - 1`` (conditioning with the kept hyper-parameters, or a warm
refit where ``refit_interval`` says so, then the acquisition). The seconds per
iteration are their mean over one structure-learning cycle. The phases come
from the strategy's ``timings``. Vanilla BoTorch (``SingleTaskGP`` with its
dimension-scaled prior, ``fit_gpytorch_mll``, ``LogExpectedImprovement``,
``optimize_acqf`` with 10 restarts and 512 raw samples) is timed on the same
data for ``d <= --vanilla-max-dim``. ``--grid-sizes`` times the acquisition
alone against ``R`` at the largest ``d``.

    python -m benchmarks.perf.tree_additive_scaling --dims 25,100,250,500,1000 --n 300
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import torch
from botorch.test_functions import StyblinskiTang

from benchmarks.high_dim import vanilla_proposal
from treebo import TreeOptimizer
from treebo.loop.box import box_space
from treebo.tree_additive import (
    TreeAdditiveOptions,
    TreeAdditiveStrategy,
    TreeAdditiveUCB,
    optimize_acqf_zooming,
)


class RefitEvery(TreeAdditiveStrategy):
    """The strategy with a hyper-parameter refit every ``interval`` proposals
    (between the learning steps) as well."""

    def __init__(self, options: TreeAdditiveOptions, interval: int) -> None:
        super().__init__(options)
        self.interval = interval

    def refit_due(self, step: int) -> bool:
        return step % self.interval == 0


def data(d: int, n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    U = torch.rand(n, d, generator=g, dtype=torch.float64)
    return U, StyblinskiTang(dim=d)(8 * U - 4)


def time_tree_additive(
    d: int, n: int, options: TreeAdditiveOptions, refit_interval: int | None
) -> dict:
    U, Y = data(d, n)
    space = box_space(torch.tensor([[0.0] * d, [1.0] * d]))
    names = space.parameter_names
    strategy = (
        TreeAdditiveStrategy(options)
        if refit_interval is None
        else RefitEvery(options, refit_interval)
    )
    opt = TreeOptimizer(space, strategy=strategy, seed=0, n_initial=n)
    for u, y in zip(U.tolist(), Y.tolist(), strict=True):
        opt.tell(dict(zip(names, u, strict=True)), y)
    cycle, phases = [], []
    for _ in range(options.learn_interval):
        t0 = time.perf_counter()
        params = opt.ask()
        cycle.append(time.perf_counter() - t0)
        phases.append(dict(opt.last_timings))
        x = torch.tensor([[params[k] for k in names]], dtype=torch.float64)
        opt.tell(params, float(StyblinskiTang(dim=d)(8 * x - 4)))
    rest = phases[1:] or phases
    return {
        "per_iteration": sum(cycle) / len(cycle),
        "learning_step": cycle[0],
        "fit": phases[0]["fit"],
        "structure": phases[0]["structure"],
        "acquisition": sum(p["optimize"] for p in phases) / len(phases),
        "other_step_model": sum(p["fit"] for p in rest) / len(rest),
    }


def time_vanilla(d: int, n: int, repeats: int = 1) -> float:
    U, Y = data(d, n)
    t0 = time.perf_counter()
    for r in range(repeats):
        vanilla_proposal(U, -Y.unsqueeze(-1), r)
    return (time.perf_counter() - t0) / repeats


def time_grid_sizes(d: int, n: int, sizes: list[int]) -> dict:
    from treebo.gp import fit_model
    from treebo.tree_additive import TreeAdditiveGP

    U, Y = data(d, n)
    model = fit_model(TreeAdditiveGP(U, -Y.unsqueeze(-1)))
    acqf = TreeAdditiveUCB(model, beta=2.0)
    bounds = torch.stack([torch.zeros(d), torch.ones(d)]).double()
    out = {}
    for R in sizes:
        t0 = time.perf_counter()
        optimize_acqf_zooming(acqf, bounds, grid_size=R, seed=0)
        out[R] = time.perf_counter() - t0
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", default="25,100,250,500,1000")
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--vanilla-max-dim", type=int, default=250)
    parser.add_argument("--refit-interval", type=int, default=None)
    parser.add_argument("--grid-sizes", default="2,4,8,16")
    parser.add_argument(
        "--out", default="benchmarks/perf/records/tree_additive_scaling.jsonl"
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    options = TreeAdditiveOptions()
    dims = [int(d) for d in args.dims.split(",")]
    stamp = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()} {args.threads}t",
        "n": args.n,
        "refit_interval": args.refit_interval or options.learn_interval,
    }
    with open(args.out, "a") as fh:
        for d in dims:
            row = {
                "d": d,
                **stamp,
                **time_tree_additive(d, args.n, options, args.refit_interval),
            }
            if d <= args.vanilla_max_dim:
                row["vanilla"] = time_vanilla(d, args.n)
            print(json.dumps(row), flush=True)
            fh.write(json.dumps(row) + "\n")
        if args.grid_sizes:
            sizes = [int(r) for r in args.grid_sizes.split(",")]
            row = {"grid_sizes": time_grid_sizes(dims[-1], args.n, sizes), **stamp}
            row["d"] = dims[-1]
            print(json.dumps(row), flush=True)
            fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
