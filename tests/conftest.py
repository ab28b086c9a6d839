"""Shared fixtures: random trees in BoTorch's hierarchical_dependencies format."""

from __future__ import annotations

import os

# The tests' models are small: one thread runs them fastest. Set before numpy,
# scipy and torch load their thread pools (docs/loop.md, "Speed").
for _pool in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_pool, "1")

import random  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402


def random_tree(
    seed: int,
    max_depth: int = 3,
    max_branching: int = 3,
    max_vertex_dim: int = 3,
    allow_multi_choice: bool = False,
) -> tuple[int, dict[int, dict[int, list[int]]]]:
    """A random tree over columns: returns ``(d, hierarchical_dependencies)``.

    Every vertex gets 0..max_vertex_dim continuous columns and, above the
    maximum depth, one choice column (two when ``allow_multi_choice`` and the
    coin says so) with 2..max_branching options.
    """
    rng = random.Random(seed)
    deps: dict[int, dict[int, list[int]]] = {}
    counter = [0]

    def new_col() -> int:
        counter[0] += 1
        return counter[0] - 1

    def vertex(depth: int) -> list[int]:
        cols = [new_col() for _ in range(rng.randint(0, max_vertex_dim))]
        if depth < max_depth:
            n_choices = 2 if allow_multi_choice and rng.random() < 0.3 else 1
            for _ in range(n_choices if rng.random() < 0.8 or depth == 0 else 0):
                c = new_col()
                cols.append(c)
                deps[c] = {
                    value: vertex(depth + 1)
                    for value in range(rng.randint(2, max_branching))
                }
        return cols

    vertex(0)
    return counter[0], deps


def random_points(d: int, deps: dict, n: int, seed: int) -> torch.Tensor:
    """Random points whose choice columns take valid values (unit-cube values)."""
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(n, d, generator=g, dtype=torch.float64)
    for col, branches in deps.items():
        values = torch.tensor(list(branches), dtype=torch.float64)
        X[:, col] = values[torch.randint(len(values), (n,), generator=g)]
    return X


@pytest.fixture(params=range(6))
def tree_case(request):
    d, deps = random_tree(request.param, allow_multi_choice=request.param % 2 == 1)
    return d, deps


@pytest.fixture(autouse=True)
def fast_optimizers(request):
    """BoTorch's optimizers capped at two iterations and few restarts
    (``botorch.test_utils.mock``), as BoTorch's own tests run: a test that checks
    what an optimizer finds opts out with ``@pytest.mark.full_optimizers``."""
    if request.node.get_closest_marker("full_optimizers"):
        yield
        return
    from botorch.test_utils.mock import mock_optimize_context_manager

    with mock_optimize_context_manager(force=True):
        yield
