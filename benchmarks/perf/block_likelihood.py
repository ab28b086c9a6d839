"""The marginal likelihood and its gradient block by block against dense.

An Add-Tree GP (Definition 4 of Ma & Blaschko, 2020) on a tree whose root owns no
parameter and chooses among ``--branches`` branches (each with two parameters and a
choice of two leaves with one each): points on different branches do not covary, so
the training covariance is block diagonal. At ``--n`` random points, one evaluation of
the marginal likelihood and its gradient is timed three ways: GPyTorch's
``ExactMarginalLogLikelihood`` (autograd through the dense factorization), treebo's
``CholeskyMarginalLogLikelihood`` on the dense covariance, and the same block by block
(the kernel evaluated on each block's pairs, the blocks factored as one batch). The
values and gradients are compared. So is the posterior's cached factorization
(``solve_cache()``, what a prediction needs once per fit), dense against block by
block, with the largest difference of the posterior mean and variance at 200 points.

Usage::

    python -m benchmarks.perf.block_likelihood --n 2000 --branches 8
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from pathlib import Path

import torch
from gpytorch.mlls import ExactMarginalLogLikelihood

from benchmarks.perf import append_record
from treebo.add_tree import AddTreeGP
from treebo.gp import noise_floor_likelihood
from treebo.gp.exact_mll import CholeskyMarginalLogLikelihood
from treebo.space import Choice, Real, TreeSpace, Vertex

RECORDS = Path(__file__).parent / "records" / "block_likelihood.jsonl"


def branchy_space(branches: int) -> TreeSpace:
    def branch(b: int) -> Vertex:
        leaves = {v: Vertex([Real(f"x{b}_{v}", -1.0, 1.0)]) for v in range(2)}
        own = [Real(f"r{b}_{i}", 0.0, 1.0) for i in range(2)]
        return Vertex(own, [Choice(f"c{b}", leaves)])

    return TreeSpace(
        Vertex([], [Choice("root", {b: branch(b) for b in range(branches)})])
    )


def timed(model: AddTreeGP, mll_class, blocks: bool, repeats: int):
    """Median seconds of value + gradient, the value and the gradients."""
    model.train()
    if not blocks:  # the dense computation, as for a model without blocks
        model.covariance_blocks = lambda: None
    mll = mll_class(model.likelihood, model)
    inputs = [model.transform_inputs(x) for x in model.train_inputs]
    times = []
    for _ in range(repeats):
        model.zero_grad()
        t0 = time.perf_counter()
        value = mll(model(*model.train_inputs), model.train_targets, *inputs)
        value.backward()
        times.append(time.perf_counter() - t0)
    if not blocks:
        del model.covariance_blocks
    grads = torch.cat([p.grad.flatten() for p in model.parameters()])
    return statistics.median(times), value.detach(), grads


def timed_posterior(model: AddTreeGP, X: torch.Tensor, blocks: bool, repeats: int):
    """Median seconds of the posterior's factorization, then the posterior at X."""
    model.eval()
    if not blocks:
        model.covariance_blocks = lambda: None
    times = []
    with torch.no_grad():
        for _ in range(repeats):
            model.train().eval()  # drops the cache
            t0 = time.perf_counter()
            model.solve_cache()
            times.append(time.perf_counter() - t0)
        mean, variance = model.posterior_mean_variance(X.unsqueeze(-2))
    if not blocks:
        del model.covariance_blocks
    return statistics.median(times), mean, variance


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--branches", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RECORDS)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    space = branchy_space(args.branches)
    X = space.sample(args.n, seed=0)
    Y = torch.sin(3 * X).sum(-1, keepdim=True)
    model = AddTreeGP(
        X,
        Y,
        space.to_hierarchical_dependencies(),
        bounds=space.bounds,
        likelihood=noise_floor_likelihood(1e-4),
    )
    torch.manual_seed(0)
    with torch.no_grad():  # away from the initial values
        for name, p in model.named_parameters():
            if "noise" not in name:
                p.add_(0.3 * torch.randn_like(p))
    model.train()
    sizes = torch.bincount(model.covariance_blocks()).tolist()
    gpytorch_s, ref, ref_grad = timed(model, ExactMarginalLogLikelihood, False, 1)
    dense_s, dense, dense_grad = timed(
        model, CholeskyMarginalLogLikelihood, False, args.repeats
    )
    block_s, block, block_grad = timed(
        model, CholeskyMarginalLogLikelihood, True, args.repeats
    )
    Xq = space.sample(200, seed=1)
    post_dense_s, mean, var = timed_posterior(model, Xq, False, args.repeats)
    post_block_s, block_mean, block_var = timed_posterior(model, Xq, True, args.repeats)
    record = {
        "n": args.n,
        "branches": args.branches,
        "block_sizes": sizes,
        "gpytorch_dense": gpytorch_s,
        "dense": dense_s,
        "blocks": block_s,
        "value_difference": float((block - ref).abs()),
        "gradient_difference": float((block_grad - ref_grad).abs().max()),
        "posterior_dense": post_dense_s,
        "posterior_blocks": post_block_s,
        "posterior_difference": max(
            float((block_mean - mean).abs().max()),
            float((block_var - var).abs().max()),
        ),
        "machine": f"{platform.machine()} {args.threads}t",
        "torch": torch.__version__,
        "date": time.strftime("%Y-%m-%d"),
    }
    append_record(args.out, record)


if __name__ == "__main__":
    main()
