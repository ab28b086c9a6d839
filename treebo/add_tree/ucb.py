r"""Add-Tree-GP-UCB: a UCB per vertex (Algorithm 2 of Ma & Blaschko, 2020).

With the per-vertex posteriors $(\mu_v, \sigma_v)$ of an
[`AddTreeGP`][treebo.add_tree.model.AddTreeGP], the vertex acquisition is

$$
u_v(x|_v) = \pm\mu_v(x|_v) + \sqrt{\beta_v}\,\sigma_v(x|_v),
$$

(``+`` when maximizing, ``-`` when minimizing) and the value of a point on path $l$ is
$\sum_{v \in l} u_v$. Because the sum is additive over vertices, each $u_v$ can be
maximized on its own, low-dimensional domain and the best path read off afterwards
([`treebo.add_tree.optimize_add_tree_ucb()`][treebo.add_tree.optimize.optimize_add_tree_ucb]).
"""

from __future__ import annotations

import math

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.utils.transforms import t_batch_mode_transform
from torch import Tensor

from treebo.add_tree.model import AddTreeGP


def add_tree_beta(t: int, vertex_dims: Tensor, scale: float = 0.2) -> Tensor:
    r"""The paper's schedule $\beta_t = 0.2\,\tilde d \log(2t)$, per vertex.

    $\tilde d$ is the dimension of the space in which UCB is maximized, i.e. the number
    of continuous parameters of each vertex (at least 1).

    Args:
        t: Iteration (number of observations so far, at least 1).
        vertex_dims: ``V`` long tensor of per-vertex dimensions.
        scale: The constant (0.2 in the paper, after Kandasamy et al., 2015).

    Returns:
        ``V`` float64 tensor.
    """
    if t < 1:
        raise ValueError(f"t must be >= 1, got {t}.")
    return scale * vertex_dims.clamp_min(1).to(torch.float64) * math.log(2 * t)


class AddTreeUCB(AcquisitionFunction):
    r"""Per-vertex (decomposed) upper confidence bound for an
    [`AddTreeGP`][treebo.add_tree.model.AddTreeGP].

    ``forward`` scores a point by the sum of the vertex UCBs on its own path,
    ``offset + sum_{v active at x} u_v(x)``, which makes this a standard BoTorch
    acquisition function (``b x 1 x d -> b``).
    [`vertex_values()`][treebo.add_tree.ucb.AddTreeUCB.vertex_values] gives all vertex
    UCBs at once, which is what Algorithm 2 maximizes.

    Args:
        model: A fitted single-outcome [`AddTreeGP`][treebo.add_tree.model.AddTreeGP].
        beta: Scalar or ``V`` tensor of exploration weights. Default: the paper's
            [`add_tree_beta()`][treebo.add_tree.ucb.add_tree_beta] with ``t`` = number
            of training points.
        maximize: If false, the objective is minimized (lower confidence bound).
    """

    def __init__(
        self,
        model: AddTreeGP,
        beta: float | Tensor | None = None,
        maximize: bool = True,
    ) -> None:
        if not isinstance(model, AddTreeGP):
            raise TypeError(
                f"AddTreeUCB needs an AddTreeGP, got {type(model).__name__}."
            )
        kernel = model.covar_module
        for name in ("inherit_ancestors", "ancestor_interactions"):
            if getattr(kernel, name):
                raise ValueError(
                    "AddTreeUCB maximizes each vertex on its own parameters, which "
                    f"needs a kernel without {name} (a vertex's term then also "
                    "depends on its ancestors' parameters)."
                )
        super().__init__(model=model)
        tree = model.tree
        if beta is None:
            beta = add_tree_beta(
                max(1, model.train_targets.shape[-1]), tree.vertex_dims
            )
        beta = torch.as_tensor(beta, dtype=torch.float64)
        if beta.numel() not in (1, tree.num_vertices) or (beta < 0).any():
            raise ValueError(
                f"beta must be a non-negative scalar or have {tree.num_vertices} "
                f"entries (one per vertex), got shape {tuple(beta.shape)}."
            )
        self.register_buffer("beta", beta)
        self.maximize = maximize

    def vertex_values(self, X: Tensor) -> Tensor:
        r"""UCB of every vertex, each read from the columns of ``X`` it owns.

        Args:
            X: ``batch_shape x d`` points in the model's raw input space.

        Returns:
            ``batch_shape x V`` tensor.
        """
        post = self.model.vertex_posterior(X)
        sign = 1.0 if self.maximize else -1.0
        beta = self.beta.to(post.mean)
        return sign * post.mean + beta.sqrt() * post.variance.clamp_min(1e-30).sqrt()

    def offset(self) -> Tensor:
        """The constant shared by every path (the GP's mean constant)."""
        offset = self.model.vertex_offset()
        return offset if self.maximize else -offset

    @t_batch_mode_transform(expected_q=1)
    def forward(self, X: Tensor) -> Tensor:
        r"""Sum of the vertex UCBs along each point's path.

        Args:
            X: ``batch_shape x 1 x d`` points.

        Returns:
            ``batch_shape`` tensor.
        """
        x = X.squeeze(-2)
        values = self.vertex_values(x)
        active = self.model.tree.vertex_activity(
            self.model.transform_inputs(x)
            if hasattr(self.model, "input_transform")
            else x
        )
        offset = self.offset()
        return offset + (values * active.to(values)).sum(-1)
