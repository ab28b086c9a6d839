r"""Functions drawn from additive GPs over a graph (Han et al., 2021: their synthetic
problems, P4).

On the grid $u = (0, \frac{1}{N-1}, \dots, 1)$ of every axis, each isolated variable $i$
gets a 1-D GP sample $g_i$ and each edge $(i, j)$ a 2-D GP sample $g_{ij}$ (RBF kernel,
lengthscale 0.2, variance 1), and

$$
f(x) = \sum_{i \text{ isolated}} g_i(x_i) + \sum_{(i, j)} g_{ij}(x_i, x_j)
$$

with $x$ snapped to the grid. A 2-D sample is drawn as $L Z L^\top$ with $L$ the
Cholesky factor of the 1-D Gram matrix (plus $10^{-6} I$) and $Z$ standard normal, so
all samples cost $O(E N^3)$ and take milliseconds. The minimum is exact: min-sum message
passing on a forest, variable elimination when the graph has cycles.

[`additive_graph()`][treebo.test_functions.additive.additive_graph] builds the graphs of
Han et al. (2021): ``star`` (variable 0 joined to all others), ``grid`` (an ``a x b``
lattice, with cycles), ``partition`` (disjoint triangles) and ``ancestry`` (a depth-3
rooted tree of 1 / 15 / 43 / 73 vertices per level, the shape of Ancestry-132).

Example:
    >>> dim, edges = additive_graph("star", 10)
    >>> f = AdditiveGPFunction(dim, edges, seed=0)
    >>> x = f.optimizers  # the grid point where f is lowest
    >>> bool(torch.isclose(f(x), torch.tensor(f.optimal_value, dtype=f(x).dtype)))
    True
"""

from __future__ import annotations

from typing import Any

import torch
from botorch.test_functions.synthetic import SyntheticTestFunction
from torch import Tensor

from treebo.tree_additive.forest import check_forest
from treebo.tree_additive.message_passing import message_passing_discrete

GRAPHS = ("star", "grid", "partition", "ancestry")


def additive_graph(name: str, size: int | tuple[int, int] = 10) -> tuple[int, Tensor]:
    """``(dim, edges)`` of one of Han et al.'s (2021) dependency graphs.

    Args:
        name: ``"star"`` (``size`` variables), ``"grid"`` (``size = (a, b)``),
            ``"partition"`` (``size`` a multiple of 3: disjoint triangles) or
            ``"ancestry"`` (132 variables; ``size`` is ignored).
        size: As above.

    Returns:
        The number of variables and an ``E x 2`` long tensor of edges.
    """
    if name == "star":
        d = int(size)
        return d, torch.stack(
            [torch.zeros(d - 1, dtype=torch.long), torch.arange(1, d)], -1
        )
    if name == "grid":
        a, b = size
        index = torch.arange(a * b).reshape(a, b)
        right = torch.stack([index[:, :-1].reshape(-1), index[:, 1:].reshape(-1)], -1)
        down = torch.stack([index[:-1].reshape(-1), index[1:].reshape(-1)], -1)
        return a * b, torch.cat([right, down])
    if name == "partition":
        d = int(size)
        if d % 3:
            raise ValueError(f"partition needs a multiple of 3 variables, got {d}.")
        base = torch.arange(0, d, 3)
        tri = torch.stack([base, base + 1, base + 2], -1)
        edges = torch.cat([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [0, 2]]])
        return d, edges
    if name == "ancestry":
        sizes = (1, 15, 43, 73)
        g = torch.Generator().manual_seed(132)
        edges, start = [], 0
        for parents, children in zip(sizes[:-1], sizes[1:], strict=True):
            first_child = start + parents
            # Every parent gets a child, the rest are spread at random.
            extra = torch.randint(parents, (children - parents,), generator=g)
            owner = torch.cat([torch.arange(parents), extra]) + start
            child = torch.arange(first_child, first_child + children)
            edges.append(torch.stack([owner, child], -1))
            start = first_child
        return sum(sizes), torch.cat(edges)
    raise ValueError(f"name must be one of {GRAPHS}, got {name!r}.")


def _min_sum(
    dim: int, unary: dict[int, Tensor], pairwise: dict[tuple[int, int], Tensor]
) -> tuple[float, Tensor]:
    """Exact ``(min, argmin indices)`` of a sum of tables by variable elimination.

    Eliminates the variable with the fewest neighbours first; factors are
    dense tensors over their scopes (fine for the small treewidths of the
    lattices and triangles here).
    """
    factors: list[tuple[tuple[int, ...], Tensor]] = [
        ((i,), t) for i, t in unary.items()
    ]
    factors += [((u, v), t) for (u, v), t in pairwise.items()]
    remaining = set(range(dim))
    trace = []  # (variable, scope of its combined factor, argmin table)
    while remaining:
        scopes = [set(s) for s, _ in factors]

        def width(v: int, scopes: list[set[int]] = scopes) -> int:
            return len(set().union(*(s for s in scopes if v in s)))

        var = min(sorted(remaining), key=width)
        touching = [f for f in factors if var in f[0]]
        factors = [f for f in factors if var not in f[0]]
        scope = tuple(sorted({w for s, _ in touching for w in s}))
        total = 0.0
        for s, t in touching:
            perm = sorted(range(len(s)), key=lambda k: scope.index(s[k]))
            shape = [t.shape[0] if w in s else 1 for w in scope]
            total = total + t.permute(perm).reshape(shape)
        axis = scope.index(var)
        value, arg = total.min(dim=axis)
        rest = tuple(w for w in scope if w != var)
        trace.append((var, rest, arg))
        if rest:
            factors.append((rest, value))
        else:
            factors.append(((), value))
        remaining.discard(var)
    best = sum(float(t) for s, t in factors if s == ())
    index = torch.zeros(dim, dtype=torch.long)
    for var, rest, arg in reversed(trace):
        index[var] = arg[tuple(int(index[w]) for w in rest)] if rest else arg
    return best, index


class AdditiveGPFunction(SyntheticTestFunction):
    r"""A function drawn from an additive GP over a graph, on $[0, 1]^d$.

    Args:
        dim: ``d``.
        edges: ``E x 2`` edges of the dependency graph (cycles allowed).
        grid_points: ``N`` grid values per axis (150 in Han et al. (2021)).
        lengthscale: Of the RBF kernel the samples are drawn from.
        seed: Seed of the draw (the function is fixed by it).
        noise_std: Standard deviation of observation noise (paper: 0.15).
        negate: Maximize instead.

    Attributes:
        edges: The graph.
        optimizers: ``1 x d``, a grid point where the noise-free function is
            lowest.
    """

    continuous_inds: list[int] = []

    def __init__(
        self,
        dim: int,
        edges: Tensor,
        grid_points: int = 150,
        lengthscale: float = 0.2,
        seed: int = 0,
        noise_std: float | None = None,
        negate: bool = False,
        **kwargs: Any,
    ) -> None:
        self.dim = dim
        self.continuous_inds = list(range(dim))
        edges = torch.as_tensor(edges, dtype=torch.long).reshape(-1, 2)
        super().__init__(
            noise_std=noise_std, negate=negate, bounds=[(0.0, 1.0)] * dim, **kwargs
        )
        N = grid_points
        u = torch.linspace(0, 1, N, dtype=torch.float64)
        K = torch.exp(-0.5 * (u[:, None] - u[None, :]).square() / lengthscale**2)
        L = torch.linalg.cholesky(K + 1e-6 * torch.eye(N, dtype=torch.float64))
        g = torch.Generator().manual_seed(seed)
        on_edge = torch.zeros(dim, dtype=torch.bool)
        on_edge[edges.reshape(-1)] = True
        isolated = (~on_edge).nonzero().squeeze(-1)
        Z1 = torch.randn(N, isolated.shape[0], generator=g, dtype=torch.float64)
        Z2 = torch.randn(edges.shape[0], N, N, generator=g, dtype=torch.float64)
        self.register_buffer("edges", edges)
        self.register_buffer("isolated", isolated)
        self.register_buffer("unary", (L @ Z1).T.contiguous())  # n_iso x N
        self.register_buffer("pairwise", L @ Z2 @ L.T)  # E x N x N
        self.grid_points = N
        value, index = self._minimum()
        self._optimal_value = value if not negate else -value
        self._optimizers = [tuple((index.double() / (N - 1)).tolist())]

    def _minimum(self) -> tuple[float, Tensor]:
        d, N = self.dim, self.grid_points
        try:
            check_forest(self.edges, d)
        except ValueError:  # cycles: variable elimination
            unary = {int(i): t for i, t in zip(self.isolated, self.unary, strict=True)}
            pairwise = {
                (int(u), int(v)): t
                for (u, v), t in zip(self.edges.tolist(), self.pairwise, strict=True)
            }
            return _min_sum(d, unary, pairwise)
        full = torch.zeros(d, N, dtype=torch.float64)
        full[self.isolated] = self.unary
        index, value = message_passing_discrete(-full, -self.pairwise, self.edges)
        return -float(value), index

    @property
    def optimizers(self) -> Tensor:
        return torch.tensor(self._optimizers, dtype=torch.float64)

    def _evaluate_true(self, X: Tensor) -> Tensor:
        N = self.grid_points
        idx = (X * (N - 1)).round().long().clamp(0, N - 1)  # *b x d
        value = self.unary.to(X)[
            torch.arange(self.isolated.shape[0], device=X.device),
            idx[..., self.isolated],
        ].sum(-1)
        u, v = self.edges[:, 0], self.edges[:, 1]
        pair = self.pairwise.to(X)[
            torch.arange(u.shape[0], device=X.device), idx[..., u], idx[..., v]
        ]
        return value + pair.sum(-1)
