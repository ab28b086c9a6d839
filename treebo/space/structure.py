r"""Tensor encoding of a tree over the columns of an input matrix.

A tree-structured (conditional) space is described, as in BoTorch, by a
``hierarchical_dependencies`` dictionary ``{parent_col: {value: [child_cols]}}``:
setting column ``parent_col`` to ``value`` activates the columns ``child_cols``.
Columns that are no one's child form the root. A column may be listed under
several values of the same parent (ConfigSpace's ``InCondition``: ``gamma`` is
active for the ``rbf``, ``poly`` and ``sigmoid`` kernels), never under two
different parents.

treebo groups columns into *vertices* (the vertices of Ma & Blaschko, 2020): the
root vertex holds the orphan columns; each ``(parent_col, value)`` pair opens one
vertex that holds the columns only that value activates, and each larger set of
values of one parent that activates columns together opens one *shared* vertex
that holds them. A column that is itself a key of the dictionary is a *choice
column* (a categorical that selects branches); all other columns are parameter
columns, modelled inside their vertex. A vertex is active at a point ``x`` iff
every condition ``x[parent_col] in values`` on its path from the root holds.

[`TreeStructure`][treebo.space.structure.TreeStructure] turns that description into
padded index tensors so that kernels, models and optimizers can evaluate all vertices at
once:

- ``vertex_columns`` (``V x D_max``) and ``vertex_column_mask``: the parameter
  columns of each vertex, padded.
- ``vertex_slots`` (``V``): a slot per vertex such that two vertices that can be
  active together never share a slot. Any point has at most one active vertex
  per slot, so a kernel that sums over shared vertices needs ``S`` (the number of
  slots, the tree depth for a plain tree) terms per pair instead of ``V``.
- ``num_paths``: the number of configurations ("paths"), counted by dynamic
  programming; ``path_vertex_mask`` (``P x V``) and the other path tables are built on
  first use and only for trees with few paths
  ([`treebo.space.configurations`][treebo.space.configurations]).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import torch
from torch import Tensor

from treebo.space.configurations import (
    ConfigurationSearch,
    PathTable,
    count_configurations,
    max_active_vertices,
)

HierarchicalDependencies = Mapping[int, Mapping[int | float, Sequence[int]]]

# Same tolerances as BoTorch's ``HierarchicalConditionalKernel`` for comparing
# the values of choice columns.
CHOICE_RTOL = 1e-5
CHOICE_ATOL = 1e-8


@dataclass(frozen=True)
class VertexInfo:
    """Plain-Python description of one vertex.

    Attributes:
        index: Position of the vertex in breadth-first order (root is 0).
        parent: Index of the parent vertex, or ``None`` for the root.
        condition: ``(choice_col, values)`` that activates the vertex given its
            parent (one value, or several for a shared vertex), or ``None``
            for the root.
        continuous_columns: Parameter (non-choice) columns owned by the vertex.
        choice_columns: Choice columns owned by the vertex.
        depth: Number of conditions on the path from the root.
    """

    index: int
    parent: int | None
    condition: tuple[int, tuple[float, ...]] | None
    continuous_columns: tuple[int, ...]
    choice_columns: tuple[int, ...]
    depth: int


def validate_hierarchical_dependencies(
    dim: int, hierarchical_dependencies: HierarchicalDependencies
) -> None:
    """Raise a ``ValueError`` naming the problem if the dictionary is malformed.

    A column may be the child of several values of one parent column; a column
    under two different parent columns, and cycles, are not trees.
    """
    if not isinstance(hierarchical_dependencies, Mapping):
        raise TypeError(
            "hierarchical_dependencies must be a dict {parent_col: {value: "
            f"[child_cols]}}, got {type(hierarchical_dependencies).__name__}."
        )
    seen: dict[int, int] = {}
    for parent, branches in hierarchical_dependencies.items():
        if not 0 <= int(parent) < dim:
            raise ValueError(
                f"hierarchical_dependencies: parent column {parent} is outside "
                f"[0, {dim})."
            )
        if not isinstance(branches, Mapping) or len(branches) == 0:
            raise ValueError(
                f"hierarchical_dependencies[{parent}] must be a non-empty dict "
                "{value: [child_cols]}."
            )
        for value, children in branches.items():
            if len(set(children)) != len(children):
                raise ValueError(
                    f"hierarchical_dependencies[{parent}][{value}] lists a column "
                    "twice."
                )
            for child in children:
                if not 0 <= int(child) < dim:
                    raise ValueError(
                        f"hierarchical_dependencies[{parent}][{value}]: child "
                        f"column {child} is outside [0, {dim})."
                    )
                other = seen.setdefault(int(child), int(parent))
                if other != int(parent):
                    raise ValueError(
                        f"hierarchical_dependencies: column {child} is a child of "
                        f"both column {other} and column {parent}; a column may "
                        "have one parent column (under one or several of its "
                        "values)."
                    )
    # Cycles: walking up from any column must reach the root.
    for col in seen:
        cur, steps = col, 0
        while cur in seen:
            cur = seen[cur]
            steps += 1
            if steps > dim:
                raise ValueError(
                    f"hierarchical_dependencies contains a cycle through column {col}."
                )


def dependency_key(value: float) -> int | float:
    """``value`` as a key of ``hierarchical_dependencies``: an ``int`` where it
    is integral, else a ``float``."""
    return int(value) if float(value).is_integer() else float(value)


def _value_groups(
    branches: Mapping[float, Sequence[int]],
) -> list[tuple[tuple[float, ...], list[int]]]:
    """The vertices a choice column opens: one per value (the columns only it
    activates), then one per larger set of values that activates columns
    together (in order of first appearance)."""
    values = [float(v) for v in branches]
    sets: dict[int, list[float]] = {}
    for value, cols in zip(values, branches.values(), strict=True):
        for c in cols:
            sets.setdefault(int(c), []).append(value)
    groups: dict[tuple[float, ...], list[int]] = {(v,): [] for v in values}
    for c, vals in sets.items():
        groups.setdefault(tuple(vals), []).append(c)
    return list(groups.items())


class TreeStructure:
    r"""Padded index tensors describing a tree over the columns of ``X``.

    Args:
        dim: Number of columns ``d`` of the input matrix.
        hierarchical_dependencies: ``{parent_col: {value: [child_cols]}}``.

    Attributes:
        vertices: The [`VertexInfo`][treebo.space.structure.VertexInfo] of every vertex,
            in BFS order.
        children: ``{(vertex, choice_col): [child vertices]}``.
        choice_values: ``{choice_col: [values]}`` (floats, in the dictionary's
            order).

    Example:
        >>> # Jenatton et al.: x1 picks (r8, x2) or (r9, x3); x2, x3 pick a leaf.
        >>> deps = {0: {0: [1, 2], 1: [3, 4]}, 2: {0: [5], 1: [6]},
        ...         4: {0: [7], 1: [8]}}
        >>> tree = TreeStructure(9, deps)
        >>> tree.num_vertices, tree.num_slots, tree.num_paths
        (7, 3, 4)
    """

    def __init__(
        self, dim: int, hierarchical_dependencies: HierarchicalDependencies
    ) -> None:
        validate_hierarchical_dependencies(dim, hierarchical_dependencies)
        self.dim = dim
        self.hierarchical_dependencies = {
            int(p): {v: [int(c) for c in cs] for v, cs in branches.items()}
            for p, branches in hierarchical_dependencies.items()
        }
        deps = self.hierarchical_dependencies
        choice_cols = set(deps)
        self.choice_values = {c: [float(v) for v in b] for c, b in deps.items()}
        children = {
            c for branches in deps.values() for cs in branches.values() for c in cs
        }
        orphans = [c for c in range(dim) if c not in children]

        # Breadth-first construction of the vertices.
        vertices: list[VertexInfo] = []
        self.children: dict[tuple[int, int], list[int]] = {}
        Condition = tuple[int, tuple[float, ...]]
        queue: deque[tuple[int | None, Condition | None, list[int], int]]
        queue = deque([(None, None, orphans, 0)])
        while queue:
            parent, condition, cols, depth = queue.popleft()
            index = len(vertices)
            if parent is not None:
                self.children.setdefault((parent, condition[0]), []).append(index)
            cols_sorted = sorted(cols)
            vertices.append(
                VertexInfo(
                    index=index,
                    parent=parent,
                    condition=condition,
                    continuous_columns=tuple(
                        c for c in cols_sorted if c not in choice_cols
                    ),
                    choice_columns=tuple(c for c in cols_sorted if c in choice_cols),
                    depth=depth,
                )
            )
            for c in cols_sorted:
                if c in choice_cols:
                    self.children[(index, c)] = []
                    for values, child_cols in _value_groups(deps[c]):
                        queue.append((index, (c, values), child_cols, depth + 1))
        self.vertices: tuple[VertexInfo, ...] = tuple(vertices)
        self.choice_columns: tuple[int, ...] = tuple(sorted(choice_cols))
        self.continuous_columns: tuple[int, ...] = tuple(
            c for c in range(dim) if c not in choice_cols
        )
        self._build_tensors()
        self.num_paths = count_configurations(self)

    # ------------------------------------------------------------------ build
    def _build_tensors(self) -> None:
        """Index tensors, built in time linear in ``V`` in Python (plus tensor
        operations): ancestors extend the parent's, co-activity is one product
        per choice column, the colouring one step per vertex."""
        vertices, V = self.vertices, len(self.vertices)
        dims = [len(v.continuous_columns) for v in vertices]
        d_max = max(1, max(dims))
        flat_cols = [c for v in vertices for c in v.continuous_columns]
        rows = torch.repeat_interleave(torch.arange(V), torch.tensor(dims))
        slots_in_row = torch.arange(len(flat_cols)) - torch.repeat_interleave(
            torch.cumsum(torch.tensor([0, *dims[:-1]]), 0), torch.tensor(dims)
        )
        cols = torch.zeros(V, d_max, dtype=torch.long)
        col_mask = torch.zeros(V, d_max, dtype=torch.bool)
        cols[rows, slots_in_row] = torch.tensor(flat_cols, dtype=torch.long)
        col_mask[rows, slots_in_row] = True
        self.vertex_dims = torch.tensor(dims, dtype=torch.long)
        self.vertex_columns = cols
        self.vertex_column_mask = col_mask

        # Conditions and ancestors extend the parent's (BFS: parents first).
        conds: list[tuple[tuple[int, tuple[float, ...]], ...]] = []
        ancestors: list[tuple[int, ...]] = []  # conditioned vertices on the path
        for v in vertices:
            if v.parent is None:
                conds.append(())
                ancestors.append(())
            else:
                conds.append(conds[v.parent] + (v.condition,))
                ancestors.append(ancestors[v.parent] + (v.index,))
        depth = torch.tensor([len(c) for c in conds], dtype=torch.long)
        self._conds = conds
        # Edge form of the conditions, for a fast activity test: one entry per
        # non-root vertex (its own condition: a column and up to K values,
        # NaN-padded), and each vertex's parent (the root its own).
        k_max = max([len(v.condition[1]) for v in vertices[1:]], default=1)
        edge_cols = torch.tensor(
            [0 if v.condition is None else v.condition[0] for v in vertices]
        )
        edge_vals = torch.full((V, k_max), math.nan, dtype=torch.float64)
        for v in vertices[1:]:
            edge_vals[v.index, : len(v.condition[1])] = torch.tensor(v.condition[1])
        edge_tol = CHOICE_ATOL + CHOICE_RTOL * edge_vals.abs()
        # The root has no condition: give it an always-true test.
        edge_vals[0, 0], edge_tol[0, 0] = 0.0, math.inf
        self._edge_cols = edge_cols
        self._edge_vals = edge_vals
        self._edge_tol = edge_tol
        self._parents = torch.tensor([v.parent or 0 for v in vertices])
        self.depth = int(depth.max())
        self._device_cache: dict[tuple, tuple[Tensor, ...]] = {}

        # Which vertices can be active together: those whose conditions admit
        # a common value of every choice column both of them test. Only the
        # vertices below a column test it, so each column compares a block.
        testers: dict[int, list[tuple[int, tuple[float, ...]]]] = {}
        for v, cond in enumerate(conds):
            for col, vals in cond:
                testers.setdefault(col, []).append((v, vals))
        co_active = torch.ones(V, V, dtype=torch.bool)
        for c, rows in testers.items():
            values = self.choice_values[c]
            index = torch.tensor([v for v, _ in rows])
            allowed = torch.tensor([[x in vals for x in values] for _, vals in rows])
            meet = (allowed.unsqueeze(1) & allowed.unsqueeze(0)).any(-1)
            co_active[index.unsqueeze(-1), index] &= meet
        self.co_active = co_active
        # Greedy colouring in BFS order: vertices that can be active together get
        # different slots; mutually exclusive branches share slots.
        slots = torch.zeros(V, dtype=torch.long)
        free = torch.ones(V + 1, dtype=torch.bool)
        for v in range(1, V):
            free.fill_(True)
            free[slots[:v][co_active[:v, v]]] = False
            slots[v] = int(free.to(torch.uint8).argmax())
        self.vertex_slots = slots
        self.num_slots = int(slots.max()) + 1

    # ------------------------------------------------------------------ paths
    @cached_property
    def path_table(self) -> PathTable:
        """Every configuration as tensors (built on first use; few paths only)."""
        return PathTable(self)

    @cached_property
    def configuration_search(self) -> ConfigurationSearch:
        """The best configuration of vertex scores by dynamic programming."""
        return ConfigurationSearch(self)

    @property
    def path_vertex_mask(self) -> Tensor:
        """``P x V`` boolean: the vertices active on each configuration."""
        return self.path_table.vertex_mask

    @property
    def path_choice_values(self) -> Tensor:
        """``P x d``: each configuration's choice values (NaN elsewhere)."""
        return self.path_table.choice_values

    @property
    def path_active_columns(self) -> Tensor:
        """``P x d`` boolean: the columns active on each configuration."""
        return self.path_table.active_columns

    def max_active_vertices(self, weight: Tensor | None = None) -> int:
        """The largest number (or total ``weight``) of vertices of one
        configuration, by dynamic programming."""
        w = [1] * self.num_vertices if weight is None else weight.long().tolist()
        return max_active_vertices(self, w)

    # ------------------------------------------------------------- properties
    @property
    def num_vertices(self) -> int:
        return len(self.vertices)

    @property
    def max_vertex_dim(self) -> int:
        return self.vertex_columns.shape[-1]

    def vertex_conditions(self, v: int) -> list[tuple[int, tuple[float, ...]]]:
        """Conditions ``(choice_col, values)`` on the path from the root to ``v``."""
        return list(self._conds[v])

    # ------------------------------------------------------------ evaluation
    def _tensors_on(self, X: Tensor) -> tuple[Tensor, ...]:
        key = (X.device, X.dtype)
        if key not in self._device_cache:
            self._device_cache[key] = (
                self._edge_cols.to(X.device),
                self._edge_vals.to(device=X.device, dtype=X.dtype),
                self._edge_tol.to(device=X.device, dtype=X.dtype),
                self._parents.to(X.device),
            )
        return self._device_cache[key]

    def vertex_activity(self, X: Tensor) -> Tensor:
        r"""Which vertices are active at each point.

        A vertex is active iff its own condition holds (its choice column's
        value among the ``K`` it admits, compared with BoTorch's tolerances)
        and its parent is active: one gather and one comparison, then one
        gather from the parents per level of the tree (no matrix product,
        whose threading costs more than it saves at these sizes).

        Args:
            X: A ``batch_shape x n x d`` tensor.

        Returns:
            A ``batch_shape x n x V`` boolean tensor.
        """
        cols, vals, tol, parents = self._tensors_on(X)
        if vals.shape[-1] == 1:  # one value per condition (no shared vertex)
            holds = (X[..., cols] - vals[:, 0]).abs() <= tol[:, 0]
        else:
            holds = ((X[..., cols].unsqueeze(-1) - vals).abs() <= tol).any(-1)
        active = holds  # batch x n x V; after level h, right to depth h
        for _ in range(self.depth):
            active = holds & active[..., parents]
        return active

    def slot_weights(self, vertex_filter: Tensor | None = None) -> Tensor:
        """``V x S`` matrix with ``v + 1`` at ``(v, slot(v))`` (0 if filtered out)."""
        V = self.num_vertices
        w = torch.zeros(V, self.num_slots, dtype=torch.float64)
        keep = (
            torch.ones(V, dtype=torch.float64)
            if vertex_filter is None
            else vertex_filter.cpu().to(torch.float64)
        )
        ids = torch.arange(1, V + 1, dtype=torch.float64)
        w[torch.arange(V), self.vertex_slots] = ids * keep
        return w

    def slot_vertices(
        self,
        active: Tensor,
        vertex_filter: Tensor | None = None,
        weights: Tensor | None = None,
    ) -> Tensor:
        r"""The active vertex in each slot, or ``V`` where a slot is empty.

        Args:
            active: A ``batch_shape x n x V`` boolean activity tensor.
            vertex_filter: Optional ``V`` boolean tensor; vertices outside it are
                treated as inactive.
            weights: Optional precomputed
                [`slot_weights()`][treebo.space.structure.TreeStructure.slot_weights]
                (on the device).

        Returns:
            A ``batch_shape x n x S`` long tensor of vertex indices in ``[0, V]``.
        """
        V, S = self.num_vertices, self.num_slots
        if weights is None:
            weights = self.slot_weights(vertex_filter).to(active.device)
        # At most one active vertex per slot: the largest id in a slot is it
        # (a scatter, not a matrix product, whose threading costs more than it
        # saves at these sizes).
        ids = weights.amax(-1).long()  # V: v + 1, or 0 if filtered out
        slots = weights.argmax(-1).expand(*active.shape)
        picked = torch.zeros(*active.shape[:-1], S, dtype=torch.long, device=ids.device)
        picked = picked.scatter_reduce(-1, slots, active.long() * ids, reduce="amax")
        picked = picked - 1
        return torch.where(picked < 0, torch.full_like(picked, V), picked)

    def to_hierarchical_dependencies(self) -> dict[int, dict[float, list[int]]]:
        """A copy of the dictionary this structure was built from."""
        return {
            p: {v: list(cs) for v, cs in b.items()}
            for p, b in self.hierarchical_dependencies.items()
        }


def as_tree_structure(
    dim: int, hierarchical_dependencies: HierarchicalDependencies | TreeStructure
) -> TreeStructure:
    """``hierarchical_dependencies`` as a
    [`TreeStructure`][treebo.space.structure.TreeStructure] of ``dim`` columns.

    A structure is returned as it is (after checking its ``dim``), so that the
    space, the model, its kernel and the optimizers share one; a dictionary
    is built into a new one.

    Example:
        >>> tree = TreeStructure(3, {0: {0: [1], 1: [2]}})
        >>> as_tree_structure(3, tree) is tree
        True
    """
    if isinstance(hierarchical_dependencies, TreeStructure):
        if hierarchical_dependencies.dim != dim:
            raise ValueError(
                f"hierarchical_dependencies: the tree has "
                f"{hierarchical_dependencies.dim} columns but dim={dim}."
            )
        return hierarchical_dependencies
    return TreeStructure(dim, hierarchical_dependencies)
