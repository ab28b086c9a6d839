"""BoTorch's ``hierarchical_dependencies`` as a treebo :class:`~treebo.TreeSpace`.

BoTorch describes a conditional space by the columns of its input tensor:
``{parent_col: {value: [child_cols]}}`` (see
:class:`botorch.models.hierarchical.HierarchicalConditionalKernelGP`). treebo
reads that format and keeps its layout, so models of both packages consume the
same tensors; :meth:`~treebo.TreeSpace.to_hierarchical_dependencies` writes it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import torch
from torch import Tensor

from treebo.parameter_tree import build_root
from treebo.parameters import Choice, Real
from treebo.space import TreeSpace
from treebo.structure import TreeStructure, dependency_key


def space_from_hierarchical_dependencies(
    hierarchical_dependencies: Mapping[int, Mapping[float, Sequence[int]]],
    bounds: Tensor,
    names: Sequence[str] | None = None,
    log_scale: Iterable[int] = (),
) -> TreeSpace:
    """Build a space from BoTorch's ``{parent_col: {value: [child_cols]}}``.

    The tensor layout is the caller's: column ``i`` stays column ``i`` and a
    choice column takes the values named in the dictionary (those values are
    also the choice's labels in dicts). A column listed under several values
    of one parent is one parameter shared by those options; a choice whose
    values all list no columns becomes a categorical.

    Args:
        hierarchical_dependencies: The tree over columns.
        bounds: ``2 x d`` tensor; rows for choice columns are ignored.
        names: Optional parameter names (default ``x0``, ``x1``, ...).
        log_scale: Columns to model on a log scale (bounds then in raw units).

    Example:
        >>> space = space_from_hierarchical_dependencies(
        ...     {0: {0: [1, 2], 1: [2]}}, torch.tensor([[0.0] * 3, [1.0] * 3]))
        >>> space.to_dict(torch.tensor([1.0, 0.0, 0.25]))
        {'x0': 1, 'x2': 0.25}
    """
    bounds = torch.as_tensor(bounds, dtype=torch.float64)
    if bounds.dim() != 2 or bounds.shape[0] != 2:
        raise ValueError(f"bounds must be 2 x d, got shape {tuple(bounds.shape)}.")
    d = bounds.shape[1]
    tree = TreeStructure.build(d, hierarchical_dependencies)
    names = list(names) if names is not None else [f"x{i}" for i in range(d)]
    if len(names) != d:
        raise ValueError(f"names has {len(names)} entries for {d} columns.")
    log_cols = set(log_scale)
    deps = tree.hierarchical_dependencies
    for c in sorted(log_cols):
        if not isinstance(c, int) or not 0 <= c < d:
            raise ValueError(f"log_scale: {c!r} is not a column of 0..{d - 1}.")
        if c in deps:
            raise ValueError(
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
    return TreeSpace(
        build_root(sorted(root.continuous_columns + root.choice_columns), make),
        _layout={"columns": {n: i for i, n in enumerate(names)}, "codes": codes},
    )
