r"""Which training points covary under an Add-Tree kernel.

Two points covary only through a vertex both pass through whose term is not zero (a
vertex with parameters, or with a constant). Where no such vertex is shared by all
points (a root without parameters or constant, and no component shared across a
depth), the points fall into groups that do not covary, and the covariance matrix is
block diagonal after sorting them by group
([`BlockDiagonalCovariance`][treebo.gp.exact_mll.BlockDiagonalCovariance]).
"""

from __future__ import annotations

import torch
from torch import Tensor


def covarying_groups(active: Tensor) -> Tensor:
    """Connected groups of points that share a vertex, through any chain of vertices.

    Args:
        active: ``n x V`` booleans: whether each point passes through each vertex
            (restricted to the vertices whose terms are not zero).

    Returns:
        ``n`` labels ``0 .. B - 1``; points with no such vertex (they covary with
        nothing, noise aside) share one label.

    Example:
        >>> active = torch.tensor([[1, 0, 0], [0, 1, 0], [1, 0, 1], [0, 0, 0]]).bool()
        >>> covarying_groups(active).tolist()
        [0, 1, 0, 2]
    """
    V = active.shape[-1]
    a = active.to(torch.float64)
    linked = (a.transpose(-1, -2) @ a) > 0  # V x V: some point passes through both
    label = torch.arange(V, device=active.device)
    while True:  # spread the smallest label over linked vertices (<= V rounds)
        spread = torch.where(linked, label.unsqueeze(0), V).amin(-1)
        spread = torch.minimum(spread, label)
        if torch.equal(spread, label):
            break
        label = spread
    point = torch.where(active, label.unsqueeze(0), V).amin(-1)  # V: no vertex
    return torch.unique(point, return_inverse=True)[1]
