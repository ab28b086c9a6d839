r"""The additive UCB of Tree-GP-UCB (Han, Arora & Scarlett, 2021, eq. 4).

With the component posteriors $(\mu_G, \sigma_G)$ of a
[`TreeAdditiveGP`][treebo.tree_additive.model.TreeAdditiveGP],

$$
\phi(x) = c + \sum_G \big(\pm\mu_G(x^G) + \sqrt{\beta}\,\sigma_G(x^G)\big)
$$

(``+`` when maximizing, ``-`` when minimizing; $c$ is the signed mean constant). Summing
per-component bounds is what makes the acquisition a sum of 1-D and 2-D terms on the
forest, so it can be maximized exactly on a grid by message passing
([`optimize_acqf_zooming()`][treebo.tree_additive.zooming.optimize_acqf_zooming]).
"""

from __future__ import annotations

import math

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.utils.transforms import t_batch_mode_transform
from torch import Tensor

from treebo.tree_additive.model import TreeAdditiveGP


def tree_additive_beta(t: int) -> float:
    r"""Paper 002's schedule $\beta_t = \tfrac12 \log(2t)$.

    Args:
        t: Iteration (number of observations so far, at least 1).
    """
    if t < 1:
        raise ValueError(f"t must be >= 1, got {t}.")
    return 0.5 * math.log(2 * t)


class TreeAdditiveUCB(AcquisitionFunction):
    r"""Sum of per-component upper confidence bounds of a
    [`TreeAdditiveGP`][treebo.tree_additive.model.TreeAdditiveGP].

    A standard BoTorch acquisition (``batch_shape x 1 x d -> batch_shape``);
    [`grid_values()`][treebo.tree_additive.ucb.TreeAdditiveUCB.grid_values] gives the
    unary and pairwise tables of the same sum on a product grid, which is what message
    passing maximizes.

    Args:
        model: A single-outcome
            [`TreeAdditiveGP`][treebo.tree_additive.model.TreeAdditiveGP] (in eval
            mode).
        beta: Exploration weight; default
            [`tree_additive_beta()`][treebo.tree_additive.ucb.tree_additive_beta] with
            ``t`` the number of training points.
        maximize: If false, the objective is minimized (lower bound, negated).

    Example:
        >>> from treebo.tree_additive import TreeAdditiveGP
        >>> X = torch.rand(20, 3, dtype=torch.float64)
        >>> model = TreeAdditiveGP(X, X.sum(-1, keepdim=True)).eval()
        >>> acqf = TreeAdditiveUCB(model)
        >>> acqf(torch.rand(5, 1, 3, dtype=torch.float64)).shape
        torch.Size([5])
    """

    def __init__(
        self,
        model: TreeAdditiveGP,
        beta: float | Tensor | None = None,
        maximize: bool = True,
    ) -> None:
        if not isinstance(model, TreeAdditiveGP):
            raise TypeError(
                f"TreeAdditiveUCB needs a TreeAdditiveGP, got {type(model).__name__}."
            )
        super().__init__(model=model)
        if beta is None:
            beta = tree_additive_beta(max(1, model.train_targets.shape[-1]))
        beta = torch.as_tensor(beta, dtype=torch.float64)
        if beta.numel() != 1 or bool(beta < 0) or not bool(beta.isfinite()):
            raise ValueError(f"beta must be a non-negative scalar, got {beta!r}.")
        self.register_buffer("beta", beta.reshape(()))
        self.maximize = maximize

    def _bound(self, mean: Tensor, variance: Tensor) -> Tensor:
        sign = 1.0 if self.maximize else -1.0
        root_beta = self.beta.to(mean).sqrt()
        return sign * mean + root_beta * variance.clamp_min(1e-30).sqrt()

    def constant(self) -> Tensor:
        """The signed mean constant $c$ shared by every point."""
        offset = self.model.constant_offset()
        return offset if self.maximize else -offset

    @t_batch_mode_transform(expected_q=1)
    def forward(self, X: Tensor) -> Tensor:
        r"""The additive UCB at ``X`` (``batch_shape x 1 x d``) -> ``batch_shape``."""
        post = self.model.component_posterior(X)  # *b x 1 x C
        values = self._bound(post.mean, post.variance).sum(-1).squeeze(-1)
        return self.constant() + values

    def grid_values(self, grid: Tensor) -> tuple[Tensor, Tensor]:
        r"""Unary and pairwise tables of the UCB on a product grid.

        Args:
            grid: ``batch_shape x d x R`` values of every variable.

        Returns:
            ``(unary, pairwise)``: ``batch_shape x d x R`` (zero for variables
            on an edge) and ``batch_shape x E x R x R`` (edges as in
            ``model.edges``), such that the UCB of the grid point with index
            ``i`` is ``constant() + sum_j unary[j, i_j] + sum_e pairwise[e,
            i_u, i_v]``.
        """
        post = self.model.grid_posterior(grid)
        isolated = self.model.covar_module.isolated.to(grid.device)
        unary = self._bound(post.variable_mean, post.variable_variance)
        unary = unary * isolated.unsqueeze(-1).to(unary)
        pairwise = self._bound(post.edge_mean, post.edge_variance)
        return unary, pairwise
