"""BoTorch's ``hierarchical_dependencies`` as a treebo
[`TreeSpace`][treebo.space.tree_space.TreeSpace].

BoTorch describes a conditional space by the columns of its input tensor:
``{parent_col: {value: [child_cols]}}`` (see
``botorch.models.hierarchical.HierarchicalConditionalKernelGP``). treebo reads that
format and keeps its layout, so models of both packages consume the same tensors;
[`to_hierarchical_dependencies()`][treebo.space.tree_space.TreeSpace.to_hierarchical_dependencies]
writes it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from torch import Tensor

from treebo.space import TreeSpace

__all__ = ["space_from_hierarchical_dependencies"]


def space_from_hierarchical_dependencies(
    hierarchical_dependencies: Mapping[int, Mapping[float, Sequence[int]]],
    bounds: Tensor,
    names: Sequence[str] | None = None,
    log_scale: Iterable[int] = (),
) -> TreeSpace:
    """Build a space from BoTorch's ``{parent_col: {value: [child_cols]}}``.

    The same as
    [`TreeSpace.from_hierarchical_dependencies()`][treebo.space.tree_space.TreeSpace.from_hierarchical_dependencies],
    which documents the arguments.

    Example:
        >>> import torch
        >>> space = space_from_hierarchical_dependencies(
        ...     {0: {0: [1, 2], 1: [2]}}, torch.tensor([[0.0] * 3, [1.0] * 3]))
        >>> space.to_dict(torch.tensor([1.0, 0.0, 0.25]))
        {'x0': 1, 'x2': 0.25}
    """
    return TreeSpace.from_hierarchical_dependencies(
        hierarchical_dependencies, bounds, names=names, log_scale=log_scale
    )
