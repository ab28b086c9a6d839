r"""The factors of the treed GP's weighted pseudo-likelihood, batched by size.

Paper 003 fits the leaf GPs' hyper-parameters jointly: each node on a leaf's path
contributes the Gaussian log-likelihood of the points that it holds and its child on the
path does not, under that leaf's hyper-parameters, weighted $2 / (1 + \text{level})$.
The factors differ in size, so they are padded into a few batches of similar sizes
([`group_by_size()`][treebo.treed.partition.group_by_size] with `FACTOR_BATCH_COST`: few
batches, little padding); each batch keeps its inputs, membership mask and right-hand
sides, which every evaluation of the fit would otherwise gather again.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

from treebo.treed.partition import TreePartition, group_by_size, padded_rows

#: The fixed cost of one batch of pseudo-likelihood factors in the fit, as the
#: cube of a factor size (one batched call costs about as much as factoring a
#: 90-point matrix on a CPU core).
FACTOR_BATCH_COST = 90.0**3


class FactorGroup(NamedTuple):
    r"""A batch of ``B`` pseudo-likelihood factors padded to ``m`` rows.

    Attributes:
        index: ``B x m`` long: each row's training point (0 on padding).
        leaf: ``B`` long: the leaf whose hyper-parameters the factor uses.
        weight: ``B``: the factor's weight $2 / (1 + \text{level})$.
        inputs: ``B x m x d``: the rows' inputs (unit cube, unwarped).
        mask: ``B x m``: 1 on the factor's rows, 0 on the padding.
        rhs: ``B x m x 2``: the rows' outcomes and ones, zero on padding.
    """

    index: Tensor
    leaf: Tensor
    weight: Tensor
    inputs: Tensor
    mask: Tensor
    rhs: Tensor


def build_factor_groups(
    partition: TreePartition, X: Tensor, y: Tensor
) -> list[FactorGroup]:
    """The pseudo-likelihood factors of ``partition``, one group per size class.

    Args:
        partition: The tree over the ``n`` training points.
        X: ``n x d`` training inputs (unit cube).
        y: ``n`` training outcomes.

    Returns:
        One [`FactorGroup`][treebo.treed.factors.FactorGroup] per size class (one
        batched call each).

    Example:
        >>> from treebo.treed.partition import build_partition
        >>> X = torch.rand(30, 2, dtype=torch.float64)
        >>> y = torch.where(X[:, 0] < 0.5, 0.0, 1.0) + 0.01 * X[:, 1]
        >>> groups = build_factor_groups(build_partition(X, y.unsqueeze(-1)), X, y)
        >>> sum(int(g.mask.sum()) for g in groups) >= 30  # every point, per level
        True
    """
    ancestors = partition.ancestors()  # L x (D + 1)
    members = partition.members[ancestors.clamp(min=0)]  # L x (D+1) x n
    valid = (ancestors >= 0).unsqueeze(-1)
    below = torch.nn.functional.pad(members[:, :-1], (0, 0, 1, 0))
    sets = members & ~below & valid  # L x (D+1) x n
    leaf, level = (ancestors >= 0).nonzero(as_tuple=True)
    masks = sets[leaf, level]  # F x n
    group = group_by_size(masks.sum(dim=-1), FACTOR_BATCH_COST)
    groups = []
    for g in group.unique().tolist():  # one batch per size class (a few)
        selected = group == g
        index, rows = padded_rows(masks[selected])
        w = rows.to(X)
        groups.append(
            FactorGroup(
                index=index,
                leaf=leaf[selected],
                weight=2.0 / (1.0 + level[selected].to(X)),
                inputs=X[index],
                mask=w,
                rhs=torch.stack([y[index] * w, w], dim=-1),
            )
        )
    return groups
