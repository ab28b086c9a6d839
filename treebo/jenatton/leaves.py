r"""Leaves and shared parameters of a tree, for the per-leaf models of
Jenatton et al. (ICML 2017).

Jenatton et al. give every leaf (path) $p$ of the tree a GP $g_p$ of its own
parameters and let the parameters of inner vertices, shared by several leaves,
enter linearly: for a point $x$ on leaf $p$,

$$
f(x) = g_p(x_p) + z(x)^\top c, \qquad c \sim \mathcal{N}(0, \alpha^2 I),
$$

with $z(x) = [r_v(x)]_{v}$ the shared parameters $r_v$ of every inner vertex
$v$ on the path (zero for the vertices off it), so that one coefficient
vector $c_v$ is shared by all the leaves below $v$. ``tree-nonlinear``
replaces $r_v$ by random Fourier features $\phi_v(r_v)$ (Jenatton et al., 2017, Sec. 3):

$$
\phi_v(r) = \sqrt{2 / R_v}\, \cos(W_v r + q_v), \quad
(W_v)_{ij} \sim \mathcal{N}(0, 1/\gamma), \quad (q_v)_i \sim U[0, 2\pi],
$$

concatenated over $\gamma \in \{0.1, 1, 10\}$ with $R$ features each
($R_v = 3R$), so that $\phi_v(r)^\top \phi_v(r')$ approximates the mean of
three RBF kernels of squared lengthscales $\gamma$.

A vertex is *shared* if it lies on two or more leaves; its real parameters
are the shared ones. A leaf's *own* parameters are the real parameters of
its vertices that lie on it alone. [`LeafLayout`][treebo.jenatton.leaves.LeafLayout]
builds these index tensors once per tree; the features are then one gather
and one matrix product for any batch of points.

Example:
    >>> from treebo.test_functions import Jenatton
    >>> space = Jenatton().space
    >>> layout = LeafLayout(space.tree)
    >>> names = space.parameter_names
    >>> layout.num_leaves, [names[c] for c in layout.shared_columns]
    (4, ['r8', 'r9'])
    >>> [names[c] for row in layout.own_columns for c in row.nonzero()]  # by leaf
    ['x4', 'x5', 'x6', 'x7']
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from treebo.space.configurations import path_rows
from treebo.space.structure import TreeStructure

#: The squared lengthscales $\gamma$ of ``tree-nonlinear``'s random features.
FEATURE_GAMMAS = (0.1, 1.0, 10.0)


class LeafLayout:
    r"""The leaves of a tree, their own and shared columns, as tensors.

    Args:
        tree: The tree (``space.tree``), with at most
            ``treebo.space.configurations.MAX_ENUMERATED_PATHS`` paths.

    Attributes:
        num_leaves: ``P``, the number of paths of the tree.
        own_columns: ``P x d`` boolean: the real columns each leaf owns alone.
        active_columns: ``P x d`` boolean: the real columns active on each
            leaf (its own and the shared ones).
        shared_columns: ``s`` long: the real columns of shared vertices.
        shared_groups: ``s`` long: the shared vertex of each shared column,
            numbered ``0 .. S - 1``.
        num_shared_vertices: ``S``.
    """

    def __init__(self, tree: TreeStructure) -> None:
        self.tree = tree
        self.table = tree.path_table
        vertex_mask = self.table.vertex_mask  # P x V
        d = tree.dim
        owner = torch.full((d,), -1, dtype=torch.long)
        for vertex in tree.vertices:
            owner[list(vertex.continuous_columns)] = vertex.index
        real = owner >= 0
        shared_vertex = vertex_mask.sum(0) >= 2  # V
        column_shared = real & shared_vertex[owner.clamp(min=0)]
        active = self.table.active_columns & real
        self.num_leaves = vertex_mask.shape[0]
        self.active_columns = active
        self.own_columns = active & ~column_shared
        self.shared_columns = column_shared.nonzero().flatten()
        vertices = owner[self.shared_columns]
        _, self.shared_groups = torch.unique(vertices, return_inverse=True)
        self.shared_vertices = torch.unique(vertices)
        self.num_shared_vertices = int(self.shared_vertices.numel())

    def leaf_of(self, X: Tensor) -> Tensor:
        """The leaf (path index) of each row: ``batch x n x d -> batch x n``."""
        flat = X.reshape(-1, X.shape[-1])
        return path_rows(self.tree, self.table, flat).reshape(X.shape[:-1])

    def shared_activity(self, X: Tensor) -> Tensor:
        """``batch x n x S`` boolean: which shared vertices are active."""
        active = self.tree.vertex_activity(X)
        return active[..., self.shared_vertices.to(X.device)]


class SharedFeatures(torch.nn.Module):
    r"""$z(x)$: the shared parameters of the active inner vertices, as they
    enter the shared linear term (zero where a vertex is inactive).

    Args:
        layout: The tree's [`LeafLayout`][treebo.jenatton.leaves.LeafLayout].
        nonlinear: Random Fourier features per shared vertex (``tree-nonlinear``)
            instead of the parameters themselves (``tree``).
        num_features: $R$, features per $\gamma$ and vertex (paper: 25).
        gammas: The squared lengthscales $\gamma$ (paper: 0.1, 1, 10).
        seed: Seed of $W$ and $q$.

    Example:
        >>> from treebo.test_functions import Jenatton
        >>> space = Jenatton().space
        >>> features = SharedFeatures(LeafLayout(space.tree), nonlinear=True)
        >>> features(space.sample(5, seed=0)).shape  # 2 shared vertices x 75
        torch.Size([5, 150])
    """

    def __init__(
        self,
        layout: LeafLayout,
        nonlinear: bool = False,
        num_features: int = 25,
        gammas: tuple[float, ...] = FEATURE_GAMMAS,
        seed: int = 0,
    ) -> None:
        super().__init__()
        if isinstance(num_features, bool) or not isinstance(num_features, int):
            raise TypeError(f"num_features must be an int, got {num_features!r}.")
        if num_features < 1:
            raise ValueError(f"num_features must be >= 1, got {num_features}.")
        self.layout = layout
        self.nonlinear = nonlinear
        S = layout.num_shared_vertices
        # Shared columns padded per vertex: S x D_max, -1 where there is none.
        counts = torch.bincount(layout.shared_groups, minlength=S)
        width = int(counts.max()) if S else 0
        slots = torch.full((S, width), -1, dtype=torch.long)
        order = torch.argsort(layout.shared_groups, stable=True)
        starts = torch.cumsum(counts, 0) - counts
        position = torch.arange(order.numel()) - starts[layout.shared_groups[order]]
        slots[layout.shared_groups[order], position] = layout.shared_columns[order]
        self.register_buffer("slots", slots, persistent=False)
        if nonlinear:
            generator = torch.Generator().manual_seed(seed)
            R = num_features * len(gammas)
            scale = torch.tensor(gammas, dtype=torch.float64).rsqrt()
            scale = scale.repeat_interleave(num_features)  # R
            W = torch.randn(S, R, width, generator=generator, dtype=torch.float64)
            q = 2 * math.pi * torch.rand(S, R, generator=generator, dtype=torch.float64)
            self.register_buffer("W", W * scale[:, None], persistent=False)
            self.register_buffer("q", q, persistent=False)
            self.num_outputs = S * R
        else:
            self.num_outputs = int(layout.shared_columns.numel())

    def forward(self, X: Tensor) -> Tensor:
        """``batch x n x d`` (inputs scaled to the unit cube) ``-> batch x n x D``."""
        layout = self.layout
        active = layout.shared_activity(X).to(X)  # ... x S
        if not self.nonlinear:
            columns = layout.shared_columns.to(X.device)
            groups = layout.shared_groups.to(X.device)
            return X[..., columns] * active[..., groups]
        slots = self.slots.to(X.device)
        r = X[..., slots.clamp(min=0)] * (slots >= 0).to(X)  # ... x S x D_max
        W, q = self.W.to(X), self.q.to(X)
        phase = torch.einsum("...sd,srd->...sr", r, W) + q
        phi = math.sqrt(2.0 / W.shape[1]) * torch.cos(phase)  # ... x S x R
        return (phi * active.unsqueeze(-1)).flatten(-2)
