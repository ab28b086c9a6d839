r"""The feature map of each vertex: numeric values and one-hot categoricals.

Vertex $v$ of an [`AddTreeKernel`][treebo.add_tree.kernel.AddTreeKernel] owns parameter
columns: numeric ones (real and integer parameters, ordered categoricals) and unordered
categorical ones. Its features at a point $x$ are

- $x_c / \ell_{v,c}$ for a numeric column $c$;
- $[x_c = a] / (\sqrt2\,\ell_{v,c})$ for each value $a$ of a
  categorical column $c$ (one-hot, scaled),

so that the squared distance of two points' features is

$$
\sum_{c\ \mathrm{numeric}} \frac{(x_c - x'_c)^2}{\ell_{v,c}^2}
+ \sum_{c\ \mathrm{categorical}} \frac{[x_c \ne x'_c]}{\ell_{v,c}^2}.
$$

A stationary correlation of this distance is an RBF (or Matern) kernel of the numeric
values times a delta-type kernel $\exp(-[x_c \ne x'_c] / 2\ell_{v,c}^2)$ per categorical
for the RBF: a categorical interacts with the vertex's other parameters, and the whole
is PSD because it is a stationary kernel of a feature map. Each column keeps one
lengthscale, whatever its number of values.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import torch
from torch import Tensor

from treebo.space.structure import CHOICE_ATOL, CHOICE_RTOL, TreeStructure

_SQRT_HALF = math.sqrt(0.5)


class SlotFeatures(NamedTuple):
    """What [`AddTreeKernel`][treebo.add_tree.kernel.AddTreeKernel]'s vertex terms
    read of ``n`` points, per slot ``S`` (a set of vertices of which at most one is
    active at any point).

    Attributes:
        ids: ``*b x n x S`` the vertex each point has active in each slot (``V``
            where none: the empty slot).
        features: ``*b x n x S x F`` that vertex's scaled features.
        scales: ``*b x n x S`` that vertex's output scale.
        offsets: ``*b x n x S`` its constant, or ``None`` without ``vertex_bias``.
        has_parameters: ``*b x n x S`` whether it owns parameters, or ``None``
            without ``shared_component``.
    """

    ids: Tensor
    features: Tensor
    scales: Tensor
    offsets: Tensor | None
    has_parameters: Tensor | None


def inherited_columns(tree: TreeStructure) -> list[tuple[int, ...]]:
    """Each vertex's own parameter columns, then its ancestors' (parent first).

    Example:
        >>> from treebo.space.structure import TreeStructure
        >>> inherited_columns(TreeStructure(4, {1: {0: [2], 1: [3]}}))
        [(0,), (2, 0), (3, 0)]
    """
    columns: list[tuple[int, ...]] = []
    for vertex in tree.vertices:  # parents come first
        above = () if vertex.parent is None else columns[vertex.parent]
        columns.append(tuple(vertex.continuous_columns) + above)
    return columns


def interacting_vertices(tree: TreeStructure) -> Tensor:
    """``V`` booleans: the vertices with parameters below a vertex with
    parameters (those that get an interaction term with
    ``ancestor_interactions``).

    Example:
        >>> from treebo.space.structure import TreeStructure
        >>> interacting_vertices(TreeStructure(4, {1: {0: [2], 1: [3]}}))
        tensor([False,  True,  True])
    """
    has_params = [bool(v.continuous_columns) for v in tree.vertices]
    above = [False] * tree.num_vertices  # an ancestor has parameters
    for vertex in tree.vertices:  # parents come first
        if vertex.parent is not None:
            above[vertex.index] = above[vertex.parent] or has_params[vertex.parent]
    return torch.tensor(has_params) & torch.tensor(above)


def feature_tables(
    tree: TreeStructure,
    categorical_values: Mapping[int, Sequence[float]],
    vertex_columns: Sequence[Sequence[int]] | None = None,
) -> dict[str, Tensor]:
    """Index tables of the vertices' features (built once).

    Args:
        tree: The tree; ``tree.vertex_columns`` lists each vertex's columns.
        categorical_values: ``{column: values}`` of the categorical columns.
        vertex_columns: The parameter columns each vertex's kernel reads (default: its
            own; [`inherited_columns()`][treebo.add_tree.features.inherited_columns]
            adds its ancestors').

    Returns:
        ``V x F`` tensors: ``columns`` (the input column of each feature),
        ``codes`` (its categorical value, NaN for numeric features),
        ``slots`` (the lengthscale slot, an index into ``D_max``) and
        ``mask`` (1 for real features, 0 for padding).

    Raises:
        ValueError: If a categorical column is not a parameter column.
    """
    parameter_columns = set(tree.continuous_columns)
    for c in categorical_values:
        if int(c) not in parameter_columns:
            raise ValueError(
                f"categorical_values: column {c} is not a parameter column of the "
                "tree (choice columns select branches and are not modelled)."
            )
    if vertex_columns is None:
        vertex_columns = [v.continuous_columns for v in tree.vertices]
    rows: list[list[tuple[int, float, int]]] = []
    for own in vertex_columns:
        row = []
        for slot, c in enumerate(own):
            values = categorical_values.get(c)
            if values is None:
                row.append((c, math.nan, slot))
            else:
                row.extend((c, float(a), slot) for a in values)
        rows.append(row)
    V, F = len(rows), max(1, max(len(r) for r in rows))
    columns = torch.zeros(V, F, dtype=torch.long)
    codes = torch.full((V, F), math.nan, dtype=torch.float64)
    slots = torch.zeros(V, F, dtype=torch.long)
    mask = torch.zeros(V, F, dtype=torch.float64)
    for v, row in enumerate(rows):
        for f, (c, a, s) in enumerate(row):
            columns[v, f], codes[v, f], slots[v, f], mask[v, f] = c, a, s, 1.0
    return {"columns": columns, "codes": codes, "slots": slots, "mask": mask}


def vertex_features(
    x: Tensor,
    lengthscale: Tensor,
    columns: Tensor,
    mask: Tensor,
    codes: Tensor | None = None,
    slots: Tensor | None = None,
) -> Tensor:
    r"""Scaled features of every vertex: ``*b x n x V x F``.

    Args:
        x: ``*b x n x d`` inputs.
        lengthscale: ``*kb x V x D_max`` per-vertex lengthscales.
        columns: ``V x F`` input column of each feature.
        mask: ``V x F``, 0 on padding (padded features are zero).
        codes: ``V x F`` categorical value of each feature (NaN: numeric);
            ``None`` when there are no categoricals (then ``F = D_max`` and
            feature ``f`` is lengthscale slot ``f``).
        slots: ``V x F`` lengthscale slot of each feature (with ``codes``).
    """
    z = x[..., columns]  # *b x n x V x F
    if codes is None:
        ls = lengthscale
    else:
        codes = codes.to(z)
        onehot = (z - codes).abs() <= CHOICE_ATOL + CHOICE_RTOL * codes.abs()
        z = torch.where(codes.isnan(), z, onehot.to(z) * _SQRT_HALF)
        index = slots.expand(*lengthscale.shape[:-2], *slots.shape)
        ls = torch.take_along_dim(lengthscale, index, dim=-1)
    return z / ls.unsqueeze(-3) * mask.to(z)
