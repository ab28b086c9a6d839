"""Sharing groups of [`AddTreeKernel`][treebo.add_tree.kernel.AddTreeKernel]'s
hyper-parameters.

Vertices in one group share a lengthscale vector (or an output scale): each
group holds one parameter, and vertices read theirs by a gather.
"""

from __future__ import annotations

import torch
from torch import Tensor

from treebo.add_tree.kernel_options import validate_sharing
from treebo.space.structure import TreeStructure


def sharing_groups(tree: TreeStructure, share: str, name: str) -> Tensor:
    """``V`` group index per vertex for a sharing mode (groups numbered from 0)."""
    validate_sharing(share, name)
    if share == "none":
        group = torch.arange(tree.num_vertices)
    elif share == "depth":
        group = torch.tensor([v.depth for v in tree.vertices])
    else:
        group = torch.zeros(tree.num_vertices, dtype=torch.long)
    return torch.unique(group, return_inverse=True)[1]


def first_of_groups(group: Tensor) -> Tensor:
    """``G``: the first vertex of each group."""
    V = group.numel()
    first = torch.full((int(group.max()) + 1,), V, device=group.device)
    return first.scatter_reduce(
        0, group, torch.arange(V, device=group.device), reduce="amin"
    )


def fold_prior_sample(sample: Tensor, shape: torch.Size) -> Tensor:
    """Fold a prior draw of ``sample_shape x prior_batch`` into ``shape``.

    BoTorch's ``sample_all_priors`` (used when ``fit_gpytorch_mll`` retries)
    draws ``prior.sample(param.shape)``, which appends the prior's own batch
    shape (``G x D_max`` for the default lengthscale prior). Each of the
    ``prod(shape)`` leading draws is a full draw of the prior; the first
    ``prod(shape) / prior_numel`` of them fill ``shape``.
    """
    if sample.shape == shape:
        return sample
    extra = sample.dim() - len(shape)
    if extra <= 0:
        return sample.expand(shape)
    prior_shape = sample.shape[len(shape) :]
    draws = sample.reshape(-1, *prior_shape)  # shape.numel() independent draws
    count = shape.numel() // max(1, prior_shape.numel())
    if count * prior_shape.numel() == shape.numel():
        return draws[:count].reshape(shape)
    return draws[0].expand(shape)
