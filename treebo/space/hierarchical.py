"""Reading BoTorch's ``hierarchical_dependencies`` into a tree of vertices.

BoTorch describes a conditional space by the columns of its input tensor:
``{parent_col: {value: [child_cols]}}`` (see
`botorch.models.hierarchical.HierarchicalConditionalKernelGP`). treebo reads that format
and keeps its layout, so models of both packages consume the same tensors;
[`to_hierarchical_dependencies()`][treebo.space.tree_space.TreeSpace.to_hierarchical_dependencies]
writes it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import torch
from torch import Tensor

from treebo.space.parameter_tree import build_root
from treebo.space.parameters import Choice, ConfigurationError, Real, Vertex
from treebo.space.structure import TreeStructure, dependency_key


def read_hierarchical_dependencies(
    hierarchical_dependencies: Mapping[int, Mapping[float, Sequence[int]]],
    bounds: Tensor,
    names: Sequence[str] | None = None,
    log_scale: Iterable[int] = (),
) -> tuple[Vertex, dict[str, Any]]:
    """The vertices and column layout of ``{parent_col: {value: [child_cols]}}``.

    ``TreeSpace.from_hierarchical_dependencies`` builds the space from them
    (it documents the mapping).

    Args:
        hierarchical_dependencies: The tree over columns.
        bounds: ``2 x d`` tensor; rows for choice columns are ignored.
        names: Optional parameter names (default ``x0``, ``x1``, ...).
        log_scale: Columns to model on a log scale (bounds then in raw units).

    Returns:
        The root [`Vertex`][treebo.space.parameters.Vertex] and the layout that keeps
        column ``i`` at ``i`` and each choice's values as its codes.

    Example:
        >>> root, layout = read_hierarchical_dependencies(
        ...     {0: {0: [1, 2], 1: [2]}}, torch.tensor([[0.0] * 3, [1.0] * 3]))
        >>> layout["columns"]
        {'x0': 0, 'x1': 1, 'x2': 2}
    """
    bounds = torch.as_tensor(bounds, dtype=torch.float64)
    if bounds.dim() != 2 or bounds.shape[0] != 2:
        raise ConfigurationError(
            f"bounds must be 2 x d, got shape {tuple(bounds.shape)}."
        )
    d = bounds.shape[1]
    tree = TreeStructure(d, hierarchical_dependencies)
    names = list(names) if names is not None else [f"x{i}" for i in range(d)]
    if len(names) != d:
        raise ConfigurationError(f"names has {len(names)} entries for {d} columns.")
    log_cols = set(log_scale)
    deps = tree.hierarchical_dependencies
    for c in sorted(log_cols):
        if not isinstance(c, int) or not 0 <= c < d:
            raise ConfigurationError(f"log_scale: {c!r} is not a column of 0..{d - 1}.")
        if c in deps:
            raise ConfigurationError(
                f"log_scale: column {c} ({names[c]!r}) is a choice; only "
                "continuous columns can be on a log scale."
            )

    def make(c: int, vertex) -> Real | Choice:
        if c in deps:
            options = {
                dependency_key(v): vertex(sorted(cs)) for v, cs in deps[c].items()
            }
            return Choice(names[c], options)
        lo, up = float(bounds[0, c]), float(bounds[1, c])
        return Real(names[c], lo, up, log_scale=c in log_cols)

    root = tree.vertices[0]
    codes = {names[c]: {dependency_key(v): float(v) for v in deps[c]} for c in deps}
    layout = {"columns": {n: i for i, n in enumerate(names)}, "codes": codes}
    return build_root(
        sorted(root.continuous_columns + root.choice_columns), make
    ), layout
