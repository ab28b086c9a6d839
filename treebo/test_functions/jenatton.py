r"""Tree-structured test problems (all minimized).

**Jenatton et al. (2017), P1.** Nine columns in treebo's BFS layout
``[x1, r8, x2, r9, x3, x4, x5, x6, x7]``: ``x1`` picks ``(r8, x2)`` or
``(r9, x3)``; ``x2`` picks ``x4`` or ``x5``, ``x3`` picks ``x6`` or ``x7``:

$$
f = \begin{cases}
    x_4^2 + 0.1 + r_8 & x_1 = 0, x_2 = 0\\
    x_5^2 + 0.2 + r_8 & x_1 = 0, x_2 = 1\\
    x_6^2 + 0.3 + r_9 & x_1 = 1, x_3 = 0\\
    x_7^2 + 0.4 + r_9 & x_1 = 1, x_3 = 1
\end{cases}
$$

with $r_8, r_9 \in [0, 1]$ and $x_4..x_7 \in [-1, 1]$ (variant
``"paper"``, optimum inside the box) or $[0, 1]$ (variant ``"ax"``,
optimum at a corner). $f^* = 0.1$.

**Generalized Jenatton trees, P2.** A binary tree; each internal node ``n``
owns a shared $r_n \in [0, 1]$ and a binary choice, each leaf ``l`` a
private $x_l \in [-1, 1]$ and the constant $c_l = 0.1\,\mathrm{rank}(l)$
(leaves ranked in BFS order from 1): $f = x_l^2 + c_l + \sum_{n} s(r_n)$ over
the internal nodes on the path, with the shared variables entering linearly,
$s(r) = r$, or quadratically, $s(r) = 4 (r - 1/2)^2$ (best inside the box),
or not at all (no $r_n$). $f^* = 0.1$.

The test trees of Jenatton et al.'s (2017) supplement (
small and large, balanced and unbalanced, with no, linear or quadratic
shared variables) are listed in
[`PAPER_001_TREES`][treebo.test_functions.jenatton.PAPER_001_TREES]. The
paper does not give its constants; ours follow the construction above (the
quadratic form is ours; "small" has depth 3: 4 balanced or 3 unbalanced
leaves; "large" has 8 balanced leaves (depth 4) or 9 unbalanced ones, the
paper's leaf counts).
"""

from __future__ import annotations

from typing import Any

import torch
from botorch.test_functions.synthetic import SyntheticTestFunction
from torch import Tensor

from treebo.space import Choice, Real, TreeSpace, Vertex

JENATTON_VARIANTS = {"paper": (-1.0, 1.0), "ax": (0.0, 1.0)}


def jenatton_space(variant: str = "paper") -> TreeSpace:
    """The Jenatton et al. space (``variant`` ``"paper"`` or ``"ax"``)."""
    if variant not in JENATTON_VARIANTS:
        raise ValueError(
            f"variant must be one of {list(JENATTON_VARIANTS)}, got {variant!r}."
        )
    lo, up = JENATTON_VARIANTS[variant]

    def leaf(name: str) -> Vertex:
        return Vertex([Real(name, lo, up)])

    return TreeSpace(
        Vertex(
            choices=[
                Choice(
                    "x1",
                    {
                        0: Vertex(
                            [Real("r8", 0.0, 1.0)],
                            [Choice("x2", {0: leaf("x4"), 1: leaf("x5")})],
                        ),
                        1: Vertex(
                            [Real("r9", 0.0, 1.0)],
                            [Choice("x3", {0: leaf("x6"), 1: leaf("x7")})],
                        ),
                    },
                )
            ]
        )
    )


class _TreeTestFunction(SyntheticTestFunction):
    """A ``SyntheticTestFunction`` on a [`TreeSpace`][treebo.space.tree_space.TreeSpace]
    encoding.

    Attributes:
        space: The [`TreeSpace`][treebo.space.tree_space.TreeSpace] whose tensor layout
            ``evaluate_true`` reads.
    """

    space: TreeSpace

    def objective(self, params: dict[str, Any]) -> float:
        """Evaluate one configuration given as a dict (noise-free)."""
        return float(self.evaluate_true(self.space.to_tensor(params).unsqueeze(0)))

    def __call__(self, params: Any = None, *args: Any, **kwargs: Any) -> Any:
        if isinstance(params, dict):
            return self.objective(params)
        return super().__call__(params, *args, **kwargs)


class Jenatton(_TreeTestFunction):
    r"""The 9-D Jenatton et al. (2017) function (minimize, $f^* = 0.1$).

    Args:
        variant: ``"paper"`` ($x_4..x_7 \in [-1, 1]$) or ``"ax"``
            ($[0, 1]$).
        noise_std: Observation noise standard deviation.
        negate: Negate the function.
    """

    dim = 9
    _optimal_value = 0.1
    continuous_inds = [1, 3, 5, 6, 7, 8]
    discrete_inds = [0, 2, 4]

    def __init__(
        self,
        variant: str = "paper",
        noise_std: float | None = None,
        negate: bool = False,
        dtype: torch.dtype = torch.float64,
    ) -> None:
        self.space = jenatton_space(variant)
        self.variant = variant
        self._bounds = [tuple(b) for b in self.space.bounds.T.tolist()]
        optimum = self.space.to_tensor({"x1": 0, "x2": 0, "r8": 0.0, "x4": 0.0})
        self._optimizers = [tuple(optimum.tolist())]
        super().__init__(noise_std=noise_std, negate=negate, dtype=dtype)

    def _evaluate_true(self, X: Tensor) -> Tensor:
        x1, r8, x2, r9, x3, x4, x5, x6, x7 = X.unbind(-1)
        left = torch.where(x2 < 0.5, x4.pow(2) + 0.1, x5.pow(2) + 0.2) + r8
        right = torch.where(x3 < 0.5, x6.pow(2) + 0.3, x7.pow(2) + 0.4) + r9
        return torch.where(x1 < 0.5, left, right)


#: How the shared variables enter a generalized Jenatton tree.
SHARED_FORMS = ("linear", "quadratic", "none")


def generalized_jenatton_space(
    depth: int = 4, balanced: bool = True, shared: str = "linear"
) -> TreeSpace:
    """Space of the generalized Jenatton tree (see
    [`GeneralizedJenatton`][treebo.test_functions.jenatton.GeneralizedJenatton]);
    with ``shared="none"`` the internal nodes own no variable."""
    if depth < 2:
        raise ValueError(f"depth must be >= 2, got {depth}.")
    if shared not in SHARED_FORMS:
        raise ValueError(f"shared must be one of {SHARED_FORMS}, got {shared!r}.")
    counter = {"internal": 0, "leaf": 0}

    def build(level: int) -> Vertex:
        is_leaf = level == depth
        if is_leaf:
            counter["leaf"] += 1
            return Vertex([Real(f"x{counter['leaf']}", -1.0, 1.0)])
        counter["internal"] += 1
        n = counter["internal"]
        if balanced:
            children = {0: build(level + 1), 1: build(level + 1)}
        else:
            children = {0: build(depth), 1: build(level + 1)}
        params = [] if shared == "none" else [Real(f"r{n}", 0.0, 1.0)]
        return Vertex(params, [Choice(f"c{n}", children)])

    return TreeSpace(build(1))


class GeneralizedJenatton(_TreeTestFunction):
    r"""Generalized Jenatton tree (P2): $x_l^2 + c_l + \sum s(r_n)$ (minimize).

    Args:
        depth: Number of levels including the leaves. Balanced: ``2^(depth-1)``
            leaves; unbalanced (one child of every internal node is a leaf):
            ``depth`` leaves.
        balanced: Balanced or unbalanced tree.
        shared: How the shared variables enter: ``"linear"`` ($s(r) = r$),
            ``"quadratic"`` ($s(r) = 4 (r - 1/2)^2$) or ``"none"``.
        noise_std: Observation noise standard deviation.
        negate: Negate the function.
    """

    _optimal_value = 0.1

    def __init__(
        self,
        depth: int = 4,
        balanced: bool = True,
        noise_std: float | None = None,
        negate: bool = False,
        dtype: torch.dtype = torch.float64,
        shared: str = "linear",
    ) -> None:
        self.space = generalized_jenatton_space(depth, balanced, shared)
        self.depth, self.balanced, self.shared = depth, balanced, shared
        self.dim = self.space.dim
        self._bounds = [tuple(b) for b in self.space.bounds.T.tolist()]
        self.continuous_inds = self.space.continuous_columns
        self.discrete_inds = self.space.choice_columns
        tree = self.space.tree
        # Per-vertex terms: r_n (internal) or x_l^2 + c_l (leaf), by BFS rank.
        leaf_rank = torch.zeros(tree.num_vertices, dtype=torch.float64)
        is_leaf = torch.tensor([len(v.choice_columns) == 0 for v in tree.vertices])
        leaf_rank[is_leaf] = torch.arange(
            1, int(is_leaf.sum()) + 1, dtype=torch.float64
        )
        self._leaf_const = 0.1 * leaf_rank
        self._is_leaf = is_leaf
        self._vertex_col = tree.vertex_columns[:, 0]
        best_leaf = int(torch.nonzero(leaf_rank == 1)[0])
        path = int(torch.nonzero(tree.path_vertex_mask[:, best_leaf])[0])
        x = self.space.set_paths(self.space.bounds[:1].clone(), torch.tensor([path]))
        x[0, self._vertex_col[best_leaf]] = 0.0
        if shared == "quadratic":
            internal = (~is_leaf).nonzero().flatten()
            x[0, self._vertex_col[internal]] = 0.5
        self._optimizers = [tuple(x[0].tolist())]
        super().__init__(noise_std=noise_std, negate=negate, dtype=dtype)

    def _evaluate_true(self, X: Tensor) -> Tensor:
        tree = self.space.tree
        active = tree.vertex_activity(X).to(X)  # n x V
        value = X[..., self._vertex_col.to(X.device).clamp_min(0)]  # n x V
        is_leaf = self._is_leaf.to(X.device)
        if self.shared == "linear":
            inner = value
        elif self.shared == "quadratic":
            inner = 4.0 * (value - 0.5).square()
        else:
            inner = torch.zeros_like(value)
        term = torch.where(is_leaf, value.pow(2) + self._leaf_const.to(X), inner)
        return (active * term).sum(-1)


#: The test trees of Jenatton et al.'s (2017) supplement, by name
#: (``"{small|large}_{balanced|unbalanced}_{none|linear|quadratic}"``):
#: ``(depth, balanced, shared)`` arguments of
#: [`GeneralizedJenatton`][treebo.test_functions.jenatton.GeneralizedJenatton].
PAPER_001_TREES: dict[str, tuple[int, bool, str]] = {
    f"{size}_{'balanced' if balanced else 'unbalanced'}_{shared}": (
        depth if balanced or size == "small" else 9,
        balanced,
        shared,
    )
    for size, depth in (("small", 3), ("large", 4))
    for balanced in (True, False)
    for shared in ("none", "linear", "quadratic")
}
