"""Speed of AddTreeKernel against BoTorch's HierarchicalConditionalKernel.

Forward + backward of the Gram matrix on a depth-6 binary tree (63 vertices,
one continuous parameter each; 94 columns with the 31 choice columns), with the
two kernels configured alike (Matern-5/2 per vertex, choice columns only gate
vertices). Prints a markdown table of median milliseconds and the ratio.

Usage::

    python -m benchmarks.perf.kernel_speed --n 100,500 --repeats 7
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import torch
from botorch.models.hierarchical import HierarchicalConditionalKernel

from treebo.add_tree import AddTreeKernel
from treebo.test_functions import generalized_jenatton_space


def time_forward_backward(
    kernel: torch.nn.Module, X: torch.Tensor, repeats: int
) -> float:
    def once() -> None:
        kernel.zero_grad()
        K = kernel(X).to_dense()
        K.sum().backward()

    once()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        once()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", default="100,500")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    space = generalized_jenatton_space(depth=6)
    deps = space.to_hierarchical_dependencies()
    d = space.dim
    ours = AddTreeKernel(d, deps, base_kernel="matern52").double()
    theirs = HierarchicalConditionalKernel(
        d, deps, eval_hierarchical_features=False, use_saas_prior=False
    ).double()
    print(
        f"depth-6 binary tree: {ours.tree.num_vertices} vertices, d={d}, "
        f"{ours.tree.num_slots} slots; {platform.machine()}, "
        f"{torch.get_num_threads()} thread(s), torch {torch.__version__}, "
        f"{time.strftime('%Y-%m-%d')}"
    )
    print()
    print("| n | AddTreeKernel (ms) | HierarchicalConditionalKernel (ms) | speed-up |")
    print("|---|---|---|---|")
    for n in [int(v) for v in args.n.split(",")]:
        X = space.sample(n, seed=n)
        t_ours = time_forward_backward(ours, X, args.repeats)
        t_theirs = time_forward_backward(theirs, X, args.repeats)
        print(
            f"| {n} | {1e3 * t_ours:.1f} | {1e3 * t_theirs:.1f} | "
            f"{t_theirs / t_ours:.1f}x |"
        )


if __name__ == "__main__":
    main()
