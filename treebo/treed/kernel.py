r"""The treed-leaf covariance function (Assael et al., HTBO).

For a partition of the input space into closed leaf cells $C_1, \dots,
C_L$ ([`TreePartition`][treebo.treed.partition.TreePartition]) and one stationary kernel
per leaf,

$$
k(x, x') = \sum_{l=1}^{L} \mathbb{1}[x \in C_l]\, \mathbb{1}[x' \in C_l]\,
    k_l(x, x').
$$

Each term is a product of a PSD kernel and the rank-one kernel
$\mathbb{1}[x \in C_l]\mathbb{1}[x' \in C_l]$, so the sum is PSD. Points in different
cells are independent; a point on a boundary lies in both cells beside it. The leaf
kernels are one GPyTorch kernel with batch shape ``L`` (per-leaf hyper-parameters as
batched parameters), evaluated for every leaf at once and combined with the cell
memberships in one ``einsum``.
"""

from __future__ import annotations

import torch
from botorch.models.utils.gpytorch_modules import (
    get_covar_module_with_dim_scaled_prior,
)
from gpytorch.constraints import GreaterThan
from gpytorch.kernels import Kernel, ScaleKernel
from gpytorch.priors import LogNormalPrior
from torch import Tensor

from treebo.treed.partition import TreePartition

#: Lower bound of each leaf's output scale (standardized outcomes).
MIN_OUTPUTSCALE = 1e-8


def leaf_base_kernel(num_leaves: int, dim: int) -> ScaleKernel:
    r"""Matern-5/2 ARD leaf kernels with batch shape ``num_leaves``.

    Lengthscales are BoTorch's default for ``SingleTaskGP``
    (``get_covar_module_with_dim_scaled_prior``: the dimension-scaled log-normal prior
    of Hvarfner et al., 2024, and a lower bound of 0.025); each leaf has its own output
    scale with a $\mathrm{LogNormal}(0, 1)$ prior, kept above ``MIN_OUTPUTSCALE`` (a
    leaf of near-constant data would otherwise drive it to an underflowing zero).

    Args:
        num_leaves: ``L``.
        dim: ``d``, the input dimension.

    Returns:
        A ``ScaleKernel`` over a ``MaternKernel``, both of batch shape ``L``.
    """
    batch = torch.Size([num_leaves])
    matern = get_covar_module_with_dim_scaled_prior(
        ard_num_dims=dim, batch_shape=batch, use_rbf_kernel=False
    )
    return ScaleKernel(
        matern,
        batch_shape=batch,
        outputscale_prior=LogNormalPrior(0.0, 1.0),
        outputscale_constraint=GreaterThan(MIN_OUTPUTSCALE),
    )


class TreedLeafKernel(Kernel):
    r"""Sum over the leaves of a partition of cell-restricted leaf kernels.

    Args:
        partition: The [`TreePartition`][treebo.treed.partition.TreePartition] with
            ``L`` leaves.
        base_kernel: A kernel of batch shape ``L`` (default:
            [`leaf_base_kernel()`][treebo.treed.kernel.leaf_base_kernel], Matern-5/2 ARD
            with an output scale). Leaf $l$ uses batch entry $l$.
        dim: ``d``; needed only to build the default ``base_kernel``.

    Example:
        >>> import torch
        >>> from treebo.treed.partition import build_partition
        >>> X = torch.rand(30, 2, dtype=torch.float64)
        >>> part = build_partition(X, (X[:, 0] > 0.5).double(), min_leaf_size=5)
        >>> kernel = TreedLeafKernel(part, dim=2).to(X)
        >>> kernel(X).to_dense().shape
        torch.Size([30, 30])
    """

    has_lengthscale = False

    def __init__(
        self,
        partition: TreePartition,
        base_kernel: Kernel | None = None,
        dim: int | None = None,
    ) -> None:
        super().__init__()
        L = partition.num_leaves
        if base_kernel is None:
            if dim is None:
                raise ValueError("TreedLeafKernel needs dim to build its base kernel.")
            base_kernel = leaf_base_kernel(L, dim)
        if base_kernel.batch_shape != torch.Size([L]):
            raise ValueError(
                f"base_kernel must have batch shape [{L}] (one per leaf), got "
                f"{list(base_kernel.batch_shape)}."
            )
        self.partition = partition
        self.base_kernel = base_kernel

    @property
    def batch_shape(self) -> torch.Size:
        # The leaf dimension of the base kernel is summed over, not a batch.
        return torch.Size([])

    @batch_shape.setter
    def batch_shape(self, value: torch.Size) -> None:
        del value  # fixed: see the getter

    @property
    def num_leaves(self) -> int:
        return self.partition.num_leaves

    def leaf_covariances(self, x1: Tensor, x2: Tensor, diag: bool = False) -> Tensor:
        r"""Every leaf kernel on every pair: ``... x L x n1 x n2`` (or
        ``... x L x n`` with ``diag``), regardless of cells."""
        k = self.base_kernel(x1.unsqueeze(-3), x2.unsqueeze(-3), diag=diag)
        return k if diag else k.to_dense()

    def forward(self, x1: Tensor, x2: Tensor, diag: bool = False, **params) -> Tensor:
        if params.get("last_dim_is_batch"):
            raise NotImplementedError("last_dim_is_batch is not supported.")
        m1 = self.partition.membership(x1).to(x1)  # ... x n1 x L
        if diag:
            k = self.leaf_covariances(x1, x2, diag=True)  # ... x L x n
            return (k * m1.transpose(-1, -2)).sum(dim=-2)
        m2 = self.partition.membership(x2).to(x2)  # ... x n2 x L
        k = self.leaf_covariances(x1, x2)  # ... x L x n1 x n2
        return torch.einsum("...lij,...il,...jl->...ij", k, m1, m2)
