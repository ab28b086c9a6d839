r"""A cached Cholesky solve for models that report additive components.

[`AddTreeGP`][treebo.add_tree.model.AddTreeGP] (vertex components) and
[`TreeAdditiveGP`][treebo.tree_additive.model.TreeAdditiveGP] (edge and variable
components) give the posterior of each component of their kernel separately. Both need
the same pieces of the exact GP posterior, computed once per set of hyper-parameters:

$$
\hat K = L L^\top = K(X, X) + \mathrm{diag}(\sigma^2_n), \qquad
\alpha = \hat K^{-1} (y - c),
$$

with $c$ the constant mean, and for a component $k_G$, $\mu_G(x) = k_G(x, X)\alpha$ and
$\sigma^2_G(x) = k_G(x, x) - \lVert L^{-1} k_G(X, x) \rVert^2$.

For a model whose training covariance is block diagonal
([`BlockDiagonalCovariance`][treebo.gp.exact_mll.BlockDiagonalCovariance]), the
training points are put block after block and $L$ is factored block by block, as one
padded batch: $\sum_b n_b^3$ instead of $n^3$. $L$ is then block diagonal (and lower
triangular), and the posterior is the dense computation's in another order of the
training points.
"""

from __future__ import annotations

from typing import Any

import torch
from botorch.models.transforms.outcome import Standardize
from torch import Tensor

from treebo.gp.exact_mll import (
    BlockDiagonalCovariance,
    padded_block_system,
    padded_blocks,
)


class CachedSolveMixin:
    """Adds [`solve_cache()`][treebo.gp.cached_solve.CachedSolveMixin.solve_cache],
    [`outcome_scale()`][treebo.gp.cached_solve.CachedSolveMixin.outcome_scale] and
    [`constant_offset()`][treebo.gp.cached_solve.CachedSolveMixin.constant_offset].

    Mix into a ``SingleTaskGP`` subclass (before it in the bases). In eval mode
    the cache is kept and detached (hyper-parameters are constants; gradients
    flow to query points only); ``train()`` and ``eval()`` drop it.
    """

    _cached_solve: dict[str, Tensor] | None = None

    def train(self, mode: bool = True) -> Any:
        self._cached_solve = None
        return super().train(mode)

    def solve_cache(self) -> dict[str, Tensor]:
        """``{"X", "L", "alpha", "constant"}`` of the training data (see module)."""
        if self._cached_solve is not None and not self.training:
            return self._cached_solve
        X = self.train_inputs[0]
        labels = None
        if isinstance(self, BlockDiagonalCovariance):
            labels = self.covariance_blocks()
        if labels is None:
            y = self.train_targets  # *b x n (m = 1)
            K = self.covar_module(X).to_dense()
            noise = self.likelihood.noise
            if noise.shape[-1] != K.shape[-1]:
                noise = noise.expand(*noise.shape[:-1], K.shape[-1])
            L = torch.linalg.cholesky(K + torch.diag_embed(noise))
            mean = self.mean_module(X)
            alpha = torch.cholesky_solve((y - mean).unsqueeze(-1), L).squeeze(-1)
            cache = {"X": X, "L": L, "alpha": alpha, "constant": mean[..., 0]}
        else:
            cache = self._block_solve(X, labels.to(X.device))
        if not self.training:
            cache = {k: v.detach() for k, v in cache.items()}
            self._cached_solve = cache
        return cache

    def _block_solve(self, X: Tensor, labels: Tensor) -> dict[str, Tensor]:
        """The cache with the training points block after block (module docstring)."""
        index, mask = padded_blocks(labels)
        K, residual = padded_block_system(self, X, index, mask)
        L_blocks = torch.linalg.cholesky(K)  # B x m x m
        alpha = torch.cholesky_solve(residual.unsqueeze(-1), L_blocks).squeeze(-1)
        n = labels.shape[-1]
        position = torch.zeros_like(index)
        position[mask] = torch.arange(n, device=X.device)
        pair = mask.unsqueeze(-1) & mask.unsqueeze(-2)
        rows = position.unsqueeze(-1).expand_as(pair)[pair]
        cols = position.unsqueeze(-2).expand_as(pair)[pair]
        L = X.new_zeros(n, n).index_put((rows, cols), L_blocks[pair])
        order = index[mask]
        X = X[order]
        constant = self.mean_module(X)[..., 0]
        return {"X": X, "L": L, "alpha": alpha[mask], "constant": constant}

    def outcome_scale(self) -> tuple[Tensor, Tensor] | None:
        """``(std, loc)`` of the Standardize outcome transform, if there is one."""
        if not hasattr(self, "outcome_transform"):
            return None
        ot = self.outcome_transform
        if not isinstance(ot, Standardize):
            raise NotImplementedError(
                "component posteriors support the Standardize outcome transform "
                f"only, got {type(ot).__name__}."
            )
        return ot.stdvs[..., 0, 0], ot.means[..., 0, 0]

    def untransform_moments(self, mean: Tensor, var: Tensor) -> tuple[Tensor, Tensor]:
        """Means and variances (``batch_shape x q``) on the original scale."""
        scale = self.outcome_scale()
        if scale is None:
            return mean, var
        std, loc = scale
        return mean * std[..., None] + loc[..., None], var * std.square()[..., None]

    def component_moments(
        self, k: Tensor, prior_variance: Tensor, component_dims: int
    ) -> tuple[Tensor, Tensor]:
        r"""Posterior means and variances of components, original outcome scale.

        Args:
            k: ``batch_shape x *c x n`` covariances of each component at each
                query with the training inputs, where ``*c`` has
                ``component_dims`` dimensions and ``batch_shape`` is the model's.
            prior_variance: ``k_G(x, x)``, broadcastable to ``batch_shape x *c``.
            component_dims: ``len(*c)``.

        Returns:
            ``(mean, variance)``, each ``batch_shape x *c``: ``k alpha`` and
            ``k_G(x, x) - ||L^{-1} k||^2`` (clamped at zero), scaled by the outcome
            transform's standard deviation (no shift: see
            [`constant_offset()`][treebo.gp.cached_solve.CachedSolveMixin.constant_offset]).
        """
        cache = self.solve_cache()
        n = k.shape[-1]
        lead = k.shape[:-1]
        batch = lead[: len(lead) - component_dims]
        mean = (k.reshape(*batch, -1, n) @ cache["alpha"].unsqueeze(-1)).reshape(lead)
        rhs = k.reshape(*batch, -1, n).transpose(-1, -2)
        w = torch.linalg.solve_triangular(cache["L"], rhs, upper=False)
        var = (prior_variance - w.square().sum(-2).reshape(lead)).clamp_min(0.0)
        scale = self.outcome_scale()
        if scale is None:
            return mean, var
        std = scale[0].reshape(*scale[0].shape, *([1] * component_dims))
        return mean * std, var * std.square()

    def constant_offset(self) -> Tensor:
        """The constant that completes a sum of component means (original scale)."""
        offset = self.solve_cache()["constant"]
        scale = self.outcome_scale()
        if scale is not None:
            std, loc = scale
            offset = offset * std + loc
        return offset
