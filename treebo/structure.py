r"""Tensor encoding of a tree over the columns of an input matrix.

A tree-structured (conditional) space is described, as in BoTorch, by a
``hierarchical_dependencies`` dictionary ``{parent_col: {value: [child_cols]}}``:
setting column ``parent_col`` to ``value`` activates the columns ``child_cols``.
Columns that are no one's child form the root.

treebo groups columns into *vertices* (the vertices of Ma & Blaschko, 2020): the
root vertex holds the orphan columns, and each ``(parent_col, value)`` pair opens
one vertex that holds ``child_cols``. A column that is itself a key of the
dictionary is a *choice column* (a categorical that selects branches); all other
columns are *continuous columns*. A vertex is active at a point ``x`` iff every
condition ``x[parent_col] == value`` on its path from the root holds.

:class:`TreeStructure` turns that description into padded index tensors so that
kernels, models and optimizers can evaluate all vertices at once:

- ``vertex_columns`` (``V x D_max``) and ``vertex_column_mask``: the continuous
  columns of each vertex, padded.
- ``condition_columns``, ``condition_values``, ``condition_mask`` (``V x H``):
  the conditions on the path from the root to each vertex, padded.
- ``vertex_slots`` (``V``): a slot per vertex such that two vertices that can be
  active together never share a slot. Any point has at most one active vertex
  per slot, so a kernel that sums over shared vertices needs ``S`` (the number of
  slots, the tree depth for a plain tree) terms per pair instead of ``V``.
- ``path_vertex_mask`` (``P x V``): the set of vertices active on each
  configuration ("path"; for a tree in which every vertex holds at most one
  choice column, the root-to-leaf paths).
"""

from __future__ import annotations

import itertools
import math
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

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
        condition: ``(choice_col, value)`` that activates the vertex given its
            parent, or ``None`` for the root.
        continuous_columns: Continuous columns owned by the vertex.
        choice_columns: Choice columns owned by the vertex.
        depth: Number of conditions on the path from the root.
    """

    index: int
    parent: int | None
    condition: tuple[int, float] | None
    continuous_columns: tuple[int, ...]
    choice_columns: tuple[int, ...]
    depth: int


def validate_hierarchical_dependencies(
    dim: int, hierarchical_dependencies: HierarchicalDependencies
) -> None:
    """Raise a ``ValueError`` naming the problem if the dictionary is malformed."""
    if not isinstance(hierarchical_dependencies, Mapping):
        raise TypeError(
            "hierarchical_dependencies must be a dict {parent_col: {value: "
            f"[child_cols]}}, got {type(hierarchical_dependencies).__name__}."
        )
    seen: dict[int, tuple[int, float]] = {}
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
            for child in children:
                if not 0 <= int(child) < dim:
                    raise ValueError(
                        f"hierarchical_dependencies[{parent}][{value}]: child "
                        f"column {child} is outside [0, {dim})."
                    )
                if int(child) in seen:
                    raise ValueError(
                        f"hierarchical_dependencies: column {child} is a child of "
                        f"both {seen[int(child)]} and {(parent, value)}; each "
                        "column must have one parent condition."
                    )
                seen[int(child)] = (int(parent), value)
    # Cycles: walking up from any column must reach the root.
    for col in seen:
        cur, steps = col, 0
        while cur in seen:
            cur = seen[cur][0]
            steps += 1
            if steps > dim:
                raise ValueError(
                    f"hierarchical_dependencies contains a cycle through column {col}."
                )


def _dependencies_key(
    dim: int, hierarchical_dependencies: HierarchicalDependencies
) -> tuple:
    """A hashable, order-independent form of ``(dim, hierarchical_dependencies)``."""
    return (
        int(dim),
        tuple(
            sorted(
                (
                    int(p),
                    tuple(
                        (float(v), tuple(int(c) for c in cs))
                        for v, cs in branches.items()
                    ),
                )
                for p, branches in hierarchical_dependencies.items()
            )
        ),
    )


class TreeStructure:
    r"""Padded index tensors describing a tree over the columns of ``X``.

    Args:
        dim: Number of columns ``d`` of the input matrix.
        hierarchical_dependencies: ``{parent_col: {value: [child_cols]}}``.

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
        children = {
            c for branches in deps.values() for cs in branches.values() for c in cs
        }
        orphans = [c for c in range(dim) if c not in children]

        # Breadth-first construction of the vertices.
        vertices: list[VertexInfo] = []
        queue: deque[tuple[int | None, tuple[int, float] | None, list[int], int]]
        queue = deque([(None, None, orphans, 0)])
        while queue:
            parent, condition, cols, depth = queue.popleft()
            index = len(vertices)
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
                    for value, child_cols in deps[c].items():
                        queue.append((index, (c, float(value)), child_cols, depth + 1))
        self.vertices: tuple[VertexInfo, ...] = tuple(vertices)
        self.choice_columns: tuple[int, ...] = tuple(sorted(choice_cols))
        self.continuous_columns: tuple[int, ...] = tuple(
            c for c in range(dim) if c not in choice_cols
        )
        self._build_tensors()

    # ------------------------------------------------------------------ build
    def _build_tensors(self) -> None:
        """Index tensors, built in time linear in ``V`` in Python (plus tensor
        operations): conditions and ancestors extend the parent's, co-activity
        is one comparison per choice column, the colouring one step per vertex."""
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

        # Conditions and ancestors extend the parent's (BFS: parents first).
        conds: list[tuple[tuple[int, float], ...]] = []
        ancestors: list[tuple[int, ...]] = []  # conditioned vertices on the path
        for v in vertices:
            if v.parent is None:
                conds.append(())
                ancestors.append(())
            else:
                conds.append(conds[v.parent] + (v.condition,))
                ancestors.append(ancestors[v.parent] + (v.index,))
        depth = torch.tensor([len(c) for c in conds], dtype=torch.long)
        h_max = max(1, int(depth.max()))
        flat = [cv for c in conds for cv in c]
        c_rows = torch.repeat_interleave(torch.arange(V), depth)
        c_pos = torch.tensor([j for c in conds for j in range(len(c))])
        cond_cols = torch.zeros(V, h_max, dtype=torch.long)
        cond_vals = torch.zeros(V, h_max, dtype=torch.float64)
        cond_mask = torch.zeros(V, h_max, dtype=torch.bool)
        if flat:
            cond_cols[c_rows, c_pos] = torch.tensor([c for c, _ in flat])
            cond_vals[c_rows, c_pos] = torch.tensor(
                [val for _, val in flat], dtype=torch.float64
            )
            cond_mask[c_rows, c_pos] = True
        self.vertex_dims = torch.tensor(dims, dtype=torch.long)
        self.vertex_columns = cols
        self.vertex_column_mask = col_mask
        self.condition_columns = cond_cols
        self.condition_values = cond_vals
        self.condition_mask = cond_mask
        self._conds = conds
        # Edge form of the conditions, for a fast activity test: one entry per
        # non-root vertex (its own condition), and a V x V matrix saying which
        # conditions lie on the path to each vertex.
        edge_cols = torch.tensor(
            [0 if v.condition is None else v.condition[0] for v in vertices]
        )
        edge_vals = torch.tensor(
            [0.0 if v.condition is None else v.condition[1] for v in vertices],
            dtype=torch.float64,
        )
        on_path = torch.zeros(V, V, dtype=torch.float64)  # edge u on path to v
        on_path[
            torch.tensor([u for a in ancestors for u in a], dtype=torch.long),
            torch.repeat_interleave(torch.arange(V), depth),
        ] = 1.0
        self._edge_cols = edge_cols
        self._edge_vals = edge_vals
        self._edge_tol = CHOICE_ATOL + CHOICE_RTOL * edge_vals.abs()
        # The root has no condition: give it an always-true test.
        self._edge_tol[0] = math.inf
        self._on_path = on_path
        self._device_cache: dict[tuple, tuple[Tensor, ...]] = {}

        # Which vertices can be active together: those whose conditions agree
        # on every choice column both of them test (one V x V comparison per
        # choice column).
        tested = torch.full((V, self.dim), math.nan, dtype=torch.float64)
        if flat:
            tested[c_rows, cond_cols[c_rows, c_pos]] = cond_vals[c_rows, c_pos]
        co_active = torch.ones(V, V, dtype=torch.bool)
        for c in self.choice_columns:
            vals = tested[:, c]
            both = ~vals.isnan()
            clash = both[:, None] & both[None, :] & (vals[:, None] != vals[None, :])
            co_active &= ~clash
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

        # Paths (configurations): sets of vertices active together.
        children: dict[tuple[int, int], list[int]] = {}
        for v in vertices:
            if v.parent is not None:
                children.setdefault((v.parent, v.condition[0]), []).append(v.index)
        paths = self._enumerate_configurations(0, children)
        P = len(paths)
        p_rows = torch.repeat_interleave(
            torch.arange(P), torch.tensor([len(p) for p in paths])
        )
        p_cols = torch.tensor([v for p in paths for v in sorted(p)], dtype=torch.long)
        path_mask = torch.zeros(P, V, dtype=torch.bool)
        path_mask[p_rows, p_cols] = True
        self.path_vertex_mask = path_mask
        # For each path, the value of every active choice column (NaN elsewhere):
        # the conditions of its vertices, which agree by construction.
        cond_here = torch.zeros(V, self.dim, dtype=torch.bool)
        has_cond = torch.tensor([v.condition is not None for v in vertices])
        rows_c = torch.arange(V)[has_cond]
        cond_here[rows_c, edge_cols[has_cond]] = True
        value_here = torch.zeros(V, self.dim, dtype=torch.float64)
        value_here[rows_c, edge_cols[has_cond]] = edge_vals[has_cond]
        pm = path_mask.to(torch.float64)
        hits = pm @ cond_here.to(torch.float64)  # P x d
        assignment = torch.where(
            hits > 0, (pm @ value_here) / hits.clamp_min(1.0), math.nan
        )
        self.path_choice_values = assignment
        owns = torch.zeros(V, self.dim, dtype=torch.float64)
        own_rows = [v.index for v in vertices for _ in v.continuous_columns]
        own_rows += [v.index for v in vertices for _ in v.choice_columns]
        own_cols = [c for v in vertices for c in v.continuous_columns]
        own_cols += [c for v in vertices for c in v.choice_columns]
        owns[own_rows, own_cols] = 1.0
        self.path_active_columns = (pm @ owns) > 0

    def _enumerate_configurations(
        self, v: int, children: Mapping[tuple[int, int], Sequence[int]]
    ) -> list[frozenset[int]]:
        """All sets of vertices that a full assignment activates below ``v``."""
        options_per_choice = []
        for c in self.vertices[v].choice_columns:
            opts = []
            for child in children.get((v, c), []):
                opts.extend(self._enumerate_configurations(child, children))
            options_per_choice.append(opts)
        return [
            frozenset({v}).union(*combo)
            for combo in itertools.product(*options_per_choice)
        ]

    # ------------------------------------------------------------- properties
    @property
    def num_vertices(self) -> int:
        return len(self.vertices)

    @property
    def num_paths(self) -> int:
        return self.path_vertex_mask.shape[0]

    @property
    def max_vertex_dim(self) -> int:
        return self.vertex_columns.shape[-1]

    def vertex_conditions(self, v: int) -> list[tuple[int, float]]:
        """Conditions ``(choice_col, value)`` on the path from the root to ``v``."""
        return list(self._conds[v])

    # ------------------------------------------------------------ evaluation
    def _tensors_on(self, X: Tensor) -> tuple[Tensor, ...]:
        key = (X.device, X.dtype)
        if key not in self._device_cache:
            self._device_cache[key] = (
                self._edge_cols.to(X.device),
                self._edge_vals.to(device=X.device, dtype=X.dtype),
                self._edge_tol.to(device=X.device, dtype=X.dtype),
                self._on_path.to(device=X.device, dtype=X.dtype),
            )
        return self._device_cache[key]

    def vertex_activity(self, X: Tensor) -> Tensor:
        r"""Which vertices are active at each point.

        A vertex is active iff every condition on its path from the root holds
        (choice values compared with BoTorch's tolerances). Computed as one
        gather, one comparison and one ``V x V`` product.

        Args:
            X: A ``batch_shape x n x d`` tensor.

        Returns:
            A ``batch_shape x n x V`` boolean tensor.
        """
        cols, vals, tol, on_path = self._tensors_on(X)
        failed = ((X[..., cols] - vals).abs() > tol).to(X.dtype)  # batch x n x V
        return (failed @ on_path) == 0

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
            weights: Optional precomputed :meth:`slot_weights` (on the device).

        Returns:
            A ``batch_shape x n x S`` long tensor of vertex indices in ``[0, V]``.
        """
        V = self.num_vertices
        if weights is None:
            weights = self.slot_weights(vertex_filter).to(active.device)
        # At most one active vertex per slot, so the product picks it out exactly.
        picked = (active.to(weights.dtype) @ weights).round().long() - 1
        return torch.where(picked < 0, torch.full_like(picked, V), picked)

    def to_hierarchical_dependencies(self) -> dict[int, dict[float, list[int]]]:
        """A copy of the dictionary this structure was built from."""
        return {
            p: {v: list(cs) for v, cs in b.items()}
            for p, b in self.hierarchical_dependencies.items()
        }

    @classmethod
    def build(
        cls, dim: int, hierarchical_dependencies: HierarchicalDependencies
    ) -> TreeStructure:
        """A shared :class:`TreeStructure` for ``(dim, hierarchical_dependencies)``.

        Structures are immutable, so the space, the model, its kernel and the
        optimizers can share one: this returns the same object for equal
        arguments (the 64 most recently used are kept) and builds a new one
        otherwise.

        Example:
            >>> deps = {0: {0: [1], 1: [2]}}
            >>> TreeStructure.build(3, deps) is TreeStructure.build(3, deps)
            True
        """
        key = _dependencies_key(dim, hierarchical_dependencies)
        tree = _STRUCTURES.get(key)
        if tree is None:
            tree = cls(dim, hierarchical_dependencies)
            _STRUCTURES[key] = tree
            while len(_STRUCTURES) > 64:
                _STRUCTURES.pop(next(iter(_STRUCTURES)))
        else:  # most recently used last
            _STRUCTURES[key] = _STRUCTURES.pop(key)
        return tree


_STRUCTURES: dict[tuple, TreeStructure] = {}
