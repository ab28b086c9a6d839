r"""A ``SingleTaskGP`` with the tree-structured additive kernel (Han et al., 2021).

[`TreeAdditiveGP`][treebo.tree_additive.model.TreeAdditiveGP] models
$f(x) = c + \sum_G f^G(x^G)$, one independent GP per component (edges of a forest and
isolated variables, see
[`TreeAdditiveKernel`][treebo.tree_additive.kernel.TreeAdditiveKernel]). Besides
BoTorch's ``posterior``, it reports the posterior of every component separately
([`TreeAdditiveGP.component_posterior()`][treebo.tree_additive.model.TreeAdditiveGP.component_posterior],
Han et al., 2021, eq. 3), the quantity the additive UCB and its message-passing
optimizer work with, and on a product grid of per-variable values
([`TreeAdditiveGP.grid_posterior()`][treebo.tree_additive.model.TreeAdditiveGP.grid_posterior])
without forming the grid's points.
"""

from __future__ import annotations

from typing import NamedTuple

from botorch.models import SingleTaskGP
from botorch.models.transforms.input import InputTransform
from botorch.models.transforms.outcome import OutcomeTransform
from botorch.utils.types import DEFAULT, _DefaultType
from gpytorch.likelihoods import Likelihood
from torch import Tensor

from treebo.gp.cached_solve import CachedSolveMixin
from treebo.tree_additive.kernel import TreeAdditiveKernel


class ComponentPosterior(NamedTuple):
    r"""Posterior of every additive component at a set of query points.

    Attributes:
        mean: ``batch_shape x r x C`` posterior means (original outcome scale).
        variance: ``batch_shape x r x C`` posterior variances (no noise).
        offset: The constant that completes the sum: ``offset + mean.sum(-1)``
            is the model's posterior mean.
    """

    mean: Tensor
    variance: Tensor
    offset: Tensor


class GridPosterior(NamedTuple):
    r"""Component posteriors on the product grid of per-variable values.

    For a grid ``g`` (``batch_shape x d x R``):

    Attributes:
        variable_mean: ``batch_shape x d x R``: the 1-D component of variable
            ``i`` at ``g[..., i, a]`` (meaningful for isolated variables; zero
            scale elsewhere).
        variable_variance: ``batch_shape x d x R``.
        edge_mean: ``batch_shape x E x R x R``: edge ``(u, v)`` at
            ``(g[..., u, a], g[..., v, b])``.
        edge_variance: ``batch_shape x E x R x R``.
        offset: As in
            [`ComponentPosterior`][treebo.tree_additive.model.ComponentPosterior].
    """

    variable_mean: Tensor
    variable_variance: Tensor
    edge_mean: Tensor
    edge_variance: Tensor
    offset: Tensor


class TreeAdditiveGP(CachedSolveMixin, SingleTaskGP):
    r"""Exact GP whose kernel is a sum over the components of a forest.

    Inputs are expected in the unit cube (lengthscale priors assume it); pass
    ``input_transform=Normalize(d, bounds=...)`` otherwise.

    Args:
        train_X: ``n x d`` training inputs.
        train_Y: ``n x 1`` training observations.
        edges: ``E x 2`` forest over the ``d`` variables (``None``: fully
            additive). Change it later with ``model.covar_module.set_edges``.
        train_Yvar: Optional observed noise variances, ``n x 1``.
        likelihood: Optional likelihood (default as in ``SingleTaskGP``).
        covar_module: Optional ready
            [`TreeAdditiveKernel`][treebo.tree_additive.kernel.TreeAdditiveKernel] over
            ``d`` variables (e.g. with other priors); ``edges`` must then be ``None``.
        outcome_transform: Default ``Standardize``.
        input_transform: Default none.

    Example:
        >>> import torch
        >>> from treebo.gp import fit_model
        >>> X = torch.rand(30, 3, dtype=torch.float64)
        >>> Y = (X[:, :1] * X[:, 1:2]).sin() + X[:, 2:]
        >>> model = TreeAdditiveGP(X, Y, edges=torch.tensor([[0, 1]]))
        >>> _ = fit_model(model)
        >>> post = model.component_posterior(X[:4])
        >>> post.mean.shape  # one edge and one isolated variable
        torch.Size([4, 2])
        >>> torch.allclose(post.offset + post.mean.sum(-1),
        ...                model.posterior(X[:4]).mean.squeeze(-1))
        True
    """

    def __init__(
        self,
        train_X: Tensor,
        train_Y: Tensor,
        edges: Tensor | None = None,
        train_Yvar: Tensor | None = None,
        likelihood: Likelihood | None = None,
        covar_module: TreeAdditiveKernel | None = None,
        outcome_transform: OutcomeTransform | _DefaultType | None = DEFAULT,
        input_transform: InputTransform | None = None,
    ) -> None:
        if train_X.dim() != 2 or train_Y.dim() != 2 or train_Y.shape[-1] != 1:
            raise ValueError(
                "TreeAdditiveGP takes train_X of shape n x d and train_Y of shape "
                f"n x 1, got {tuple(train_X.shape)} and {tuple(train_Y.shape)}."
            )
        d = train_X.shape[-1]
        if covar_module is None:
            covar_module = TreeAdditiveKernel(dim=d, edges=edges)
        elif not isinstance(covar_module, TreeAdditiveKernel) or covar_module.dim != d:
            raise ValueError(
                "covar_module must be a TreeAdditiveKernel over the columns of train_X."
            )
        elif edges is not None:
            raise ValueError("pass edges to the covar_module, not to both.")
        super().__init__(
            train_X=train_X,
            train_Y=train_Y,
            train_Yvar=train_Yvar,
            likelihood=likelihood,
            covar_module=covar_module,
            outcome_transform=outcome_transform,
            input_transform=input_transform,
        )

    @property
    def edges(self) -> Tensor:
        """``E x 2`` the current forest."""
        return self.covar_module.edges

    def set_edges(self, edges: Tensor | None) -> None:
        """Swap the forest (hyper-parameters kept; cached solves dropped)."""
        self.covar_module.set_edges(edges)
        self._cached_solve = None

    def _inputs(self, X: Tensor) -> Tensor:
        return self.transform_inputs(X) if hasattr(self, "input_transform") else X

    def component_posterior(self, X: Tensor) -> ComponentPosterior:
        r"""Posterior mean and variance of every component at ``X``, at once.

        Args:
            X: ``batch_shape x r x d`` query points.

        Returns:
            A [`ComponentPosterior`][treebo.tree_additive.model.ComponentPosterior] with
            ``batch_shape x r x C`` means and variances (components ordered as in the
            kernel: edges, then isolated variables).
        """
        cache = self.solve_cache()
        kernel: TreeAdditiveKernel = self.covar_module
        k = kernel.component_covariances(self._inputs(X), cache["X"])  # *b C r n
        k = k.transpose(-2, -3)  # *b x r x C x n
        prior = kernel.component_scales()
        mean, var = self.component_moments(k, prior, component_dims=2)
        return ComponentPosterior(mean, var, self.constant_offset())

    def grid_posterior(self, grid: Tensor) -> GridPosterior:
        r"""Component posteriors on the product grid of per-variable values.

        Evaluates each 1-D component on its variable's ``R`` values and each edge on the
        ``R x R`` pairs of its two variables' values, from the ``d x R x n``
        one-dimensional correlations (the grid's ``R^d`` points are never formed). Cost
        $O((d R + E R^2) n^2)$.

        Args:
            grid: ``batch_shape x d x R`` values of every variable, in the
                model's raw input space.

        Returns:
            A [`GridPosterior`][treebo.tree_additive.model.GridPosterior].
        """
        cache = self.solve_cache()
        kernel: TreeAdditiveKernel = self.covar_module
        d, R = grid.shape[-2:]
        if hasattr(self, "input_transform"):
            # Transform the grid as d x R inputs of R points each.
            grid = self.transform_inputs(grid.transpose(-1, -2)).transpose(-1, -2)
        corr = kernel.variable_correlations(grid, cache["X"])  # *b x d x R x n
        scale = kernel.scale.unsqueeze(-1)  # d x 1
        var_mean, var_var = self.component_moments(
            corr * scale.unsqueeze(-1), scale, component_dims=2
        )
        u, v = kernel.edges[:, 0], kernel.edges[:, 1]
        edge_scale = kernel.component_scales()[..., : u.shape[0]]
        k_edge = corr[..., u, :, None, :] * corr[..., v, None, :, :]  # E R R n
        k_edge = k_edge * edge_scale[..., None, None, None]
        edge_mean, edge_var = self.component_moments(
            k_edge, edge_scale[..., None, None], component_dims=3
        )
        return GridPosterior(
            var_mean, var_var, edge_mean, edge_var, self.constant_offset()
        )
