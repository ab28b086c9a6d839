r"""Forests over variables: validation, connected components, level schedules.

The tree-additive model of Han et al. (2021) joins variables by the edges of a
forest (an acyclic graph). Its kernel, its structure learning and the
message-passing optimizer of its acquisition all need the same few facts about
such a graph, computed here once per structure:

- [`check_forest()`][treebo.tree_additive.forest.check_forest] validates an ``E x 2``
edge tensor and returns it in
  canonical form (``u < v`` in each row).
- [`component_labels()`][treebo.tree_additive.forest.component_labels] labels the
connected components.
- [`ForestSchedule`][treebo.tree_additive.forest.ForestSchedule] roots every tree of the
forest and groups its
  vertices by depth, so that max-sum messages can be passed for all edges of
  one level at once.

Structures are small integer data: they are built on the CPU and the index
tensors of a schedule are moved to the device of the values they index.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from torch import Tensor


def check_forest(edges: Tensor | None, num_vars: int) -> Tensor:
    r"""Validate a forest over ``num_vars`` variables and put it in canonical form.

    Args:
        edges: ``E x 2`` integer tensor of variable pairs, or ``None`` (no edges).
        num_vars: ``d``, the number of variables.

    Returns:
        ``E x 2`` long tensor on the CPU with ``u < v`` in every row (rows in
        the given order).

    Raises:
        ValueError: If ``edges`` has the wrong shape, an index outside
            ``[0, d)``, a self-loop, a repeated edge, or a cycle.

    Example:
        >>> check_forest(torch.tensor([[2, 0], [0, 1]]), 3)
        tensor([[0, 2],
                [0, 1]])
    """
    if edges is None:
        return torch.zeros(0, 2, dtype=torch.long)
    if not isinstance(edges, Tensor):
        edges = torch.as_tensor(edges)
    if edges.numel() == 0:
        return torch.zeros(0, 2, dtype=torch.long)
    if edges.dim() != 2 or edges.shape[-1] != 2:
        raise ValueError(
            f"edges must be an E x 2 tensor, got shape {tuple(edges.shape)}."
        )
    if edges.is_floating_point() or edges.is_complex() or edges.dtype == torch.bool:
        raise ValueError(f"edges must hold integer indices, got {edges.dtype}.")
    edges = edges.detach().to("cpu", torch.long)
    if bool((edges < 0).any()) or bool((edges >= num_vars).any()):
        raise ValueError(f"edges must index variables in [0, {num_vars}).")
    if bool((edges[:, 0] == edges[:, 1]).any()):
        raise ValueError("edges must not contain self-loops.")
    canonical = edges.sort(dim=1).values
    if torch.unique(canonical, dim=0).shape[0] != canonical.shape[0]:
        raise ValueError("edges must not contain the same edge twice.")
    num_trees, _ = _components(canonical, num_vars)
    if num_trees != num_vars - canonical.shape[0]:
        raise ValueError("edges must form a forest; they contain a cycle.")
    return canonical


def _components(edges: Tensor, num_vars: int) -> tuple[int, np.ndarray]:
    u, v = edges[:, 0].numpy(), edges[:, 1].numpy()
    graph = coo_matrix((np.ones(len(u)), (u, v)), shape=(num_vars, num_vars))
    return connected_components(graph, directed=False)


def component_labels(edges: Tensor, num_vars: int) -> Tensor:
    """``d`` long tensor: the connected component of each variable (CPU).

    Labels are ``0, 1, ...`` in order of each component's smallest variable.
    """
    _, labels = _components(check_forest(edges, num_vars), num_vars)
    return torch.from_numpy(labels).long()


@dataclass(frozen=True)
class ForestLevel:
    """The vertices at one depth of a rooted forest, with their parent edges.

    Attributes:
        child: ``k`` vertices at this depth.
        parent: ``k`` their parents (one depth up).
        edge: ``k`` index of the edge joining each to its parent.
        child_first: ``k`` booleans, true where the child is column 0 of its
            edge (so that the pairwise table must be transposed to read
            ``[parent, child]``).
    """

    child: Tensor
    parent: Tensor
    edge: Tensor
    child_first: Tensor


@dataclass(frozen=True)
class ForestSchedule:
    r"""A forest rooted at the smallest variable of every tree, split by depth.

    Built once per structure by
    [`from_edges()`][treebo.tree_additive.forest.ForestSchedule.from_edges]; message
    passing then runs one tensor step per depth level (all edges of a level at once)
    instead of one step per vertex.

    Attributes:
        num_vars: ``d``.
        num_edges: ``E``.
        roots: ``T`` the root of every tree (isolated variables included).
        levels: [`ForestLevel`][treebo.tree_additive.forest.ForestLevel] for depths
            ``1, 2, ...``.

    Example:
        >>> schedule = ForestSchedule.from_edges(torch.tensor([[0, 1], [1, 2]]), 4)
        >>> schedule.roots, len(schedule.levels)
        (tensor([0, 3]), 2)
    """

    num_vars: int
    num_edges: int
    roots: Tensor
    levels: tuple[ForestLevel, ...]

    @classmethod
    def from_edges(cls, edges: Tensor | None, num_vars: int) -> ForestSchedule:
        """Validate ``edges``
        ([`check_forest()`][treebo.tree_additive.forest.check_forest]) and root every
        tree."""
        edges = check_forest(edges, num_vars)
        _, labels = _components(edges, num_vars)
        labels_t = torch.from_numpy(labels).long()
        first = torch.full((int(labels.max()) + 1,), num_vars, dtype=torch.long)
        first = first.scatter_reduce(0, labels_t, torch.arange(num_vars), "amin")
        depth = torch.full((num_vars,), -1, dtype=torch.long)
        depth[first] = 0
        u, v = edges[:, 0], edges[:, 1]
        levels = []
        level = 0
        while True:
            down = (depth[u] == level) & (depth[v] < 0)  # child is v
            up = (depth[v] == level) & (depth[u] < 0)  # child is u
            edge = (down | up).nonzero().squeeze(-1)
            if edge.numel() == 0:
                break
            child_first = up[edge]
            child = torch.where(child_first, u[edge], v[edge])
            parent = torch.where(child_first, v[edge], u[edge])
            depth[child] = level + 1
            levels.append(ForestLevel(child, parent, edge, child_first))
            level += 1
        return cls(num_vars, int(edges.shape[0]), first, tuple(levels))

    def to(self, device: torch.device) -> ForestSchedule:
        """The same schedule with its index tensors on ``device``."""
        levels = tuple(
            ForestLevel(
                *(t.to(device) for t in (lv.child, lv.parent, lv.edge, lv.child_first))
            )
            for lv in self.levels
        )
        roots = self.roots.to(device)
        return ForestSchedule(self.num_vars, self.num_edges, roots, levels)
