r"""Treed GPs for non-stationary objectives (HTBO, Assael et al.).

[`TreedGP`][treebo.treed.model.TreedGP] partitions the inputs with a CART-style tree
([`build_partition()`][treebo.treed.partition.build_partition]: thresholds at observed
points that both children keep; pruned by leave-one-out validation,
[`loo_prune()`][treebo.treed.pruning.loo_prune]) and fits one Matern-5/2 ARD GP per leaf
on the leaf's points. A query is answered by the GP of its leaf, so a smooth region and
a rugged one get their own lengthscales, output scales and noise.

Leaf hyper-parameters $\theta_j$ maximize the weighted marginal pseudo-likelihood of
Assael et al. (2014, eq. 8-9): with $\rho^j_0 = j, \rho^j_1,
\dots$ the nodes from leaf $j$ up to the root and $D_{j,i}$ the data of $\rho^j_i$ not
in $\rho^j_{i-1}$ ($D_{j,0}$ the leaf's own data),

$$
\mathcal{L}(\theta) = \sum_{j} \sum_{i=0}^{\delta^j} w_i\,
    \log p(y_{D_{j,i}} \mid x_{D_{j,i}}, \theta_j),
\qquad w_i = \frac{2}{1 + i},
$$

so a leaf's own data count twice and each level above it less, and a leaf with few
points borrows the lengthscales of its neighbourhood. The factors of all leaves are
grouped by size, and each group is one batch of padded Gaussian log-likelihoods (padded
rows are independent unit variables with zero residual, which add nothing), so a few
batched Choleskys evaluate the whole objective. With ``warp=True`` each leaf also learns
a Kumaraswamy input warp (BoTorch's `Warp`, in place of the paper's Beta CDF):
HTBO-WARP.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from botorch.acquisition.objective import PosteriorTransform
from botorch.models.model import Model
from botorch.models.transforms.input import Warp
from botorch.models.transforms.outcome import Standardize
from botorch.models.transforms.utils import kumaraswamy_warp
from botorch.posteriors.gpytorch import GPyTorchPosterior
from gpytorch.constraints import GreaterThan
from gpytorch.distributions import MultivariateNormal
from gpytorch.likelihoods import GaussianLikelihood
from gpytorch.mlls import MarginalLogLikelihood
from gpytorch.models import GP
from gpytorch.priors import LogNormalPrior
from linear_operator import to_linear_operator
from linear_operator.utils.cholesky import psd_safe_cholesky
from torch import Tensor

from treebo.gp.correlation import pairwise_sq_dist, stationary_correlation
from treebo.treed.factors import FactorGroup, build_factor_groups
from treebo.treed.fit import WeightedPseudoLikelihood, fit_treed_gp
from treebo.treed.kernel import TreedLeafKernel
from treebo.treed.partition import TreePartition, build_partition, padded_rows
from treebo.treed.pruning import loo_prune

#: Smallest posterior variance returned (standardized units).
MIN_VARIANCE = 1e-12
#: Inputs are squeezed into [eps, 1 - eps] before a Kumaraswamy warp.
WARP_EPS = 1e-7


class TreedGP(Model, GP):
    r"""Independent Matern-5/2 ARD GPs on the leaves of a data-built partition.

    Args:
        train_X: ``n x d`` training inputs.
        train_Y: ``n x 1`` training outcomes.
        min_leaf_size: The fewest points a leaf holds (Assael et al. (2014): 5).
        warp: Learn a Kumaraswamy input warp per leaf (HTBO-WARP).
        bounds: ``2 x d`` bounds of the inputs, mapped to the unit cube
            (default: the inputs are in the unit cube already).
        max_depth: The deepest a leaf may be (``None``: no limit).
        noise_floor: Lower bound on each leaf's noise variance (standardized
            outcomes).
        outcome_transform: Applied to ``train_Y`` (default ``Standardize``;
            ``None`` for none).

    The partition comes from
    [`grow_partition()`][treebo.treed.model.TreedGP.grow_partition]; a subclass that
    overrides it tries another (e.g. Assael et al.'s (2014) tree, unpruned).

    Attributes:
        partition: The [`TreePartition`][treebo.treed.partition.TreePartition], in
            unit-cube coordinates.
        covar_module: The [`TreedLeafKernel`][treebo.treed.kernel.TreedLeafKernel] (leaf
            kernels with batch shape ``L``).

    Example:
        >>> import torch
        >>> from botorch.fit import fit_gpytorch_mll
        >>> X = torch.rand(40, 2, dtype=torch.float64)
        >>> Y = torch.where(X[:, :1] < 0.5, torch.sin(20 * X[:, 1:]), X[:, 1:])
        >>> model = TreedGP(X, Y)
        >>> _ = fit_gpytorch_mll(WeightedPseudoLikelihood(model))
        >>> model.posterior(torch.rand(3, 2, dtype=torch.float64)).mean.shape
        torch.Size([3, 1])
    """

    def __init__(
        self,
        train_X: Tensor,
        train_Y: Tensor,
        min_leaf_size: int = 5,
        warp: bool = False,
        bounds: Tensor | None = None,
        max_depth: int | None = None,
        noise_floor: float = 1e-6,
        outcome_transform: Any = "DEFAULT",
    ) -> None:
        super().__init__()
        if train_X.dim() != 2 or train_Y.dim() != 2 or train_Y.shape[-1] != 1:
            raise ValueError(
                "TreedGP takes train_X of shape n x d and train_Y of shape n x 1, "
                f"got {tuple(train_X.shape)} and {tuple(train_Y.shape)}."
            )
        if train_X.shape[0] != train_Y.shape[0] or train_X.shape[0] < 1:
            raise ValueError(
                f"train_X has {train_X.shape[0]} rows but train_Y has "
                f"{train_Y.shape[0]}; both need at least one."
            )
        if not (math.isfinite(noise_floor) and noise_floor > 0):
            raise ValueError(f"noise_floor must be > 0, got {noise_floor!r}.")
        d = train_X.shape[-1]
        if bounds is None:
            bounds = torch.stack([torch.zeros(d), torch.ones(d)]).to(train_X)
        if bounds.shape != (2, d) or not bool((bounds[1] > bounds[0]).all()):
            raise ValueError(
                f"bounds must be 2 x {d} with upper > lower, got {tuple(bounds.shape)}."
            )
        self.register_buffer("bounds", bounds.to(train_X))
        if outcome_transform == "DEFAULT":
            outcome_transform = Standardize(m=1)
        if outcome_transform is not None:
            train_Y, _ = outcome_transform(train_Y)
            self.outcome_transform = outcome_transform
        X = self.normalize(train_X)
        y = train_Y.squeeze(-1)
        self.train_inputs = (X,)
        self.train_targets = y
        self.partition = self.grow_partition(X, y, min_leaf_size, max_depth)
        L = self.partition.num_leaves
        batch = torch.Size([L])
        self.covar_module = TreedLeafKernel(self.partition, dim=d)
        self.mean_constant = torch.nn.Parameter(torch.zeros(L))
        self.likelihood = GaussianLikelihood(
            batch_shape=batch,
            noise_prior=LogNormalPrior(-4.0, 1.0),
            noise_constraint=GreaterThan(noise_floor),
        )
        self.warp = (
            # Holds the per-leaf concentrations (priors, constraints); the
            # warp itself is applied leaf by leaf in ``_leaf_inputs``.
            Warp(
                d=d,
                indices=list(range(d)),
                batch_shape=batch,
                eps=WARP_EPS,
                concentration0_prior=LogNormalPrior(0.0, 0.75**0.5),
                concentration1_prior=LogNormalPrior(0.0, 0.75**0.5),
            )
            if warp
            else None
        )
        self._set_factor_tables()
        self.to(train_X)
        self._cache: tuple[Tensor, ...] | None = None

    # ------------------------------------------------------------ structure

    def grow_partition(
        self, X: Tensor, y: Tensor, min_leaf_size: int, max_depth: int | None
    ) -> TreePartition:
        """The partition of the training points: grown by
        [`build_partition()`][treebo.treed.partition.build_partition] (every split
        that reduces the squared error), then pruned to the subtree whose leaf GPs
        predict the points best in leave-one-out
        ([`loo_prune()`][treebo.treed.pruning.loo_prune]).

        Args:
            X: ``n x d`` training inputs in the unit cube.
            y: ``n`` training targets (transformed).
            min_leaf_size: The fewest points a leaf holds.
            max_depth: The deepest a leaf may be (``None``: no limit).

        Returns:
            The [`TreePartition`][treebo.treed.partition.TreePartition] of ``X``.
        """
        partition = build_partition(X, y, min_leaf_size, max_depth)
        return loo_prune(partition, X, y)

    def _set_factor_tables(self) -> None:
        """Keep the pseudo-likelihood factors
        ([`build_factor_groups()`][treebo.treed.factors.build_factor_groups]) and each
        leaf's rows as
        buffers, so that they follow the model's device and dtype."""
        groups = build_factor_groups(
            self.partition, *self.train_inputs, self.train_targets
        )
        self.num_factor_groups = len(groups)
        for k, group in enumerate(groups):
            for name, value in zip(FactorGroup._fields, group, strict=True):
                self.register_buffer(f"factor_{name}_{k}", value)
        leaf_index, leaf_rows = padded_rows(self.partition.leaf_members)
        self.register_buffer("leaf_data_index", leaf_index)
        self.register_buffer("leaf_data_rows", leaf_rows)

    def factor_groups(self) -> list[FactorGroup]:
        """The [`FactorGroup`][treebo.treed.factors.FactorGroup] of each size class of
        factors."""
        return [
            FactorGroup(
                *(getattr(self, f"factor_{name}_{k}") for name in FactorGroup._fields)
            )
            for k in range(self.num_factor_groups)
        ]

    @property
    def num_leaves(self) -> int:
        return self.partition.num_leaves

    @property
    def num_outputs(self) -> int:
        return 1

    @property
    def batch_shape(self) -> torch.Size:
        return torch.Size([])

    @property
    def leaf_train_indices(self) -> tuple[Tensor, ...]:
        """The training rows each leaf holds (a boundary point in both)."""
        return tuple(row.nonzero().squeeze(-1) for row in self.partition.leaf_members)

    def normalize(self, X: Tensor) -> Tensor:
        """``X`` mapped from ``bounds`` to the unit cube."""
        lo, hi = self.bounds
        return (X - lo) / (hi - lo)

    def leaf_index(self, X: Tensor) -> Tensor:
        """``...`` long: the leaf of each of the ``... x d`` points ``X``."""
        return self.partition.leaf_index(self.normalize(X))

    # --------------------------------------------------------------- pieces
    def _leaf_inputs(self, X: Tensor, leaf: Tensor | None = None) -> Tensor:
        """``X`` (unit cube) as the leaves' kernels see it: warped with each
        leaf's Kumaraswamy CDF with ``warp``. ``leaf`` (``B``) picks one leaf
        per batch entry of ``X`` (``B x m x d``); without it the leaves
        broadcast over dimension -3."""
        if self.warp is None:
            return X
        c0, c1 = self.warp.concentration0, self.warp.concentration1  # L x 1 x d
        if leaf is not None:
            c0, c1 = c0[leaf], c1[leaf]
        return kumaraswamy_warp(X, c0=c0, c1=c1, eps=WARP_EPS)

    def _leaf_correlation(self, A: Tensor, B: Tensor, leaf: Tensor) -> Tensor:
        r"""The Matern-5/2 correlation of leaf ``leaf`` between ``A`` and ``B``.

        Args:
            A: ``... x a x d`` (warped) inputs.
            B: ``... x b x d`` (warped) inputs.
            leaf: ``...`` long: the leaf whose lengthscales each batch entry
                uses.

        Returns:
            ``... x a x b``: $\kappa(\lVert (A_i - B_j) / \ell_l \rVert)$.
        """
        ls = self.covar_module.base_kernel.base_kernel.lengthscale[leaf]
        return stationary_correlation(pairwise_sq_dist(A / ls, B / ls), "matern52")

    def _leaf_kernel(self, A: Tensor, B: Tensor, leaf: Tensor) -> Tensor:
        r"""The Matern-5/2 kernel of leaf ``leaf`` between ``A`` and ``B``:
        ``... x a x b`` values $\sigma_l^2 \kappa(\lVert (A_i - B_j) / \ell_l
        \rVert)$ (the same as the batched ``covar_module.base_kernel`` entry ``l``;
        arguments as in
        [`_leaf_correlation()`][treebo.treed.model.TreedGP._leaf_correlation])."""
        outputscale = self.covar_module.base_kernel.outputscale[leaf]
        corr = self._leaf_correlation(A, B, leaf)
        return outputscale.unsqueeze(-1).unsqueeze(-1) * corr

    def _gaussian_terms(
        self, index: Tensor, rows: Tensor, leaf: Tensor
    ) -> tuple[Tensor, Tensor, Tensor]:
        r"""Cholesky factors, residuals and inputs of padded data sets.

        Args:
            index, rows: ``B x m`` training rows of each set, and which are
                members (the rest is padding).
            leaf: ``B``: the leaf whose hyper-parameters each set uses.

        Returns:
            ``(chol, resid, X)``: ``B x m x m`` lower Cholesky factors of
            $K_l + \sigma_l^2 I$ on the members and the identity on the padding,
            ``B x m`` residuals from the leaf's mean (zero on the padding), and the
            ``B x m x d`` inputs as the leaf's kernel sees them.
        """
        X = self._leaf_inputs(self.train_inputs[0][index], leaf)
        K = self._leaf_kernel(X, X, leaf)
        w = rows.to(K)
        noise = self.likelihood.noise.squeeze(-1)[leaf].unsqueeze(-1)  # B x 1
        K = K * w.unsqueeze(-1) * w.unsqueeze(-2)
        K.diagonal(dim1=-2, dim2=-1).add_(w * noise + (1 - w))
        chol = psd_safe_cholesky(K)
        resid = (self.train_targets[index] - self.mean_constant[leaf].unsqueeze(-1)) * w
        return chol, resid, X

    def pseudo_log_likelihood(self) -> Tensor:
        r"""The weighted pseudo-likelihood $\mathcal{L}(\theta)$ (the
        sum over every leaf's factors, without priors)."""
        total = self.mean_constant.new_zeros(())
        for group in self.factor_groups():
            chol, resid, _ = self._gaussian_terms(group.index, group.mask, group.leaf)
            alpha = torch.linalg.solve_triangular(
                chol, resid.unsqueeze(-1), upper=False
            ).squeeze(-1)
            loglik = -0.5 * alpha.square().sum(-1)
            loglik = loglik - chol.diagonal(dim1=-2, dim2=-1).log().sum(-1)
            loglik = loglik - 0.5 * group.mask.sum(-1) * math.log(2 * math.pi)
            total = total + (group.weight.to(loglik) * loglik).sum()
        return total

    def custom_fit(
        self, mll: MarginalLogLikelihood, **kwargs: Any
    ) -> MarginalLogLikelihood:
        """Fit by [`fit_treed_gp()`][treebo.treed.fit.fit_treed_gp] (called by
        ``botorch.fit.fit_gpytorch_mll``; ``optimizer_kwargs={"options":
        {"maxiter": k}}`` sets its iterations).

        Raises:
            TypeError: If ``mll`` is not this model's
                [`WeightedPseudoLikelihood`][treebo.treed.fit.WeightedPseudoLikelihood].
        """
        if not isinstance(mll, WeightedPseudoLikelihood) or mll.model is not self:
            raise TypeError(
                "A TreedGP is fitted through WeightedPseudoLikelihood(model), got "
                f"{type(mll).__name__}."
            )
        options = (kwargs.get("optimizer_kwargs") or {}).get("options", {})
        settings = {k: v for k, v in options.items() if k in ("maxiter", "ftol")}
        fit_treed_gp(self, **settings)
        return mll.eval()

    def train(self, mode: bool = True) -> TreedGP:
        if mode:
            self._cache = None  # hyper-parameters may change
        return super().train(mode)

    def _leaf_posterior_terms(self) -> tuple[Tensor, ...]:
        """Cholesky factors, weights and inputs of every leaf's GP (computed
        once in eval mode, detached: gradients flow to the query points)."""
        if self._cache is None or self.training:
            leaves = torch.arange(self.num_leaves, device=self.leaf_data_index.device)
            chol, resid, X = self._gaussian_terms(
                self.leaf_data_index, self.leaf_data_rows, leaves
            )
            alpha = torch.cholesky_solve(resid.unsqueeze(-1), chol)
            terms = (chol, alpha, X)
            if self.training:
                return terms
            self._cache = tuple(t.detach() for t in terms)
        return self._cache

    def _leaf_solves(self, points: Tensor, leaf: Tensor) -> tuple[Tensor, Tensor]:
        r"""Posterior means and whitened cross-covariances of ``P`` points.

        The points are sorted by leaf and cut into blocks of at most ``S``
        points of one leaf (``S`` about ``P / (8L)``, at least 32), so that a
        leaf holding most of the points costs no padding in the others and
        the padding of partly filled blocks stays below ``P / 8`` slots; each
        block is solved against its leaf's Cholesky factor in one batched
        triangular solve.

        Args:
            points: ``P x d`` points as their leaves' kernels see them.
            leaf: ``P`` long: the leaf of each point.

        Returns:
            ``(mean, V)``: ``P`` posterior means and ``P x m`` rows
            $L_l^{-1} k_l(X_l, x)$ (zero beyond the leaf's data), so that two points of
            one leaf have posterior covariance $k_l(x, x') - V_x \cdot V_{x'}$.
        """
        chol, alpha, Xl = self._leaf_posterior_terms()
        L, P = self.num_leaves, leaf.numel()
        size = max(32, -(-P // (8 * L)))  # points per block
        order = leaf.argsort(stable=True)
        counts = torch.bincount(leaf, minlength=L)
        blocks = torch.div(counts + size - 1, size, rounding_mode="floor")
        num_blocks = int(blocks.sum())
        first_block = blocks.cumsum(0) - blocks
        sorted_leaf = leaf[order]
        rank = (
            torch.arange(P, device=leaf.device)
            - (counts.cumsum(0) - counts)[sorted_leaf]
        )
        block = first_block[sorted_leaf] + torch.div(rank, size, rounding_mode="floor")
        slot = torch.full((num_blocks, size), -1, dtype=torch.long, device=leaf.device)
        slot[block, rank % size] = order
        block_leaf = torch.repeat_interleave(
            torch.arange(L, device=leaf.device), blocks, output_size=num_blocks
        )
        grouped = points[slot.clamp(min=0)]  # blocks x size x d
        rows = self.leaf_data_rows.to(points)[block_leaf].unsqueeze(-2)  # b x 1 x m
        Kx = self._leaf_kernel(grouped, Xl[block_leaf], block_leaf) * rows
        mean = self.mean_constant[block_leaf].unsqueeze(-1) + (
            Kx @ alpha[block_leaf]
        ).squeeze(-1)
        V = torch.linalg.solve_triangular(
            chol[block_leaf], Kx.transpose(-1, -2), upper=False
        )
        # From (block, position) order back to the input's.
        valid = (slot >= 0).reshape(-1)
        back = order.argsort()
        mean = mean.reshape(-1)[valid][back]
        V = V.transpose(-1, -2).reshape(-1, V.shape[-2])[valid][back]
        return mean, V

    # ------------------------------------------------------------ posterior
    def posterior(
        self,
        X: Tensor,
        output_indices: list[int] | None = None,
        observation_noise: bool | Tensor = False,
        posterior_transform: PosteriorTransform | None = None,
        **kwargs: Any,
    ) -> GPyTorchPosterior:
        r"""The posterior of the GP of each point's leaf.

        Points in different leaves are independent; points in one leaf share
        its GP's posterior covariance.

        Args:
            X: ``batch x q x d`` points.
            output_indices: Must be ``None`` or ``[0]`` (one output).
            observation_noise: If true, add each point's leaf noise.
            posterior_transform: Applied to the posterior.

        Returns:
            A ``GPyTorchPosterior`` over ``batch x q x 1``.
        """
        if output_indices not in (None, [0]):
            raise ValueError(f"TreedGP has one output, got {output_indices}.")
        if self.training:
            self.eval()
        Xn = self.normalize(X)
        leaf = self.partition.leaf_index(Xn)  # batch x q
        # Each point against its own leaf's data only. The points are sorted
        # by leaf into an L x (most points in a leaf) layout, so that each
        # leaf's Cholesky factor serves all of its points in one solve.
        Xq = self._leaf_inputs(Xn.unsqueeze(-2), leaf)  # batch x q x 1 x d
        mean, V = self._leaf_solves(Xq.reshape(-1, Xq.shape[-1]), leaf.reshape(-1))
        mean = mean.reshape(leaf.shape)  # batch x q
        V = V.reshape(*leaf.shape, V.shape[-1])  # batch x q x m
        # Row i of the prior covariance with leaf(x_i)'s kernel; only pairs in
        # one leaf are kept, and there both rows use the same kernel.
        points = Xq.squeeze(-2)  # batch x q x d
        every = points.unsqueeze(-3).expand(*points.shape[:-1], *points.shape[-2:])
        Kqq = self._leaf_kernel(Xq, every, leaf).squeeze(-2)  # batch x q x q
        same = (leaf.unsqueeze(-1) == leaf.unsqueeze(-2)).to(Kqq)
        cov = (Kqq - V @ V.transpose(-1, -2)) * same
        var = cov.diagonal(dim1=-2, dim2=-1)
        extra = var.clamp(min=MIN_VARIANCE) - var
        if observation_noise is True:
            extra = extra + self.likelihood.noise.squeeze(-1)[leaf]
        elif isinstance(observation_noise, Tensor):
            raise NotImplementedError("TreedGP takes observation_noise as a bool.")
        cov = cov + torch.diag_embed(extra)
        # A lazy covariance: no Cholesky unless a sampler asks for one.
        posterior = GPyTorchPosterior(MultivariateNormal(mean, to_linear_operator(cov)))
        if hasattr(self, "outcome_transform"):
            posterior = self.outcome_transform.untransform_posterior(posterior)
        if posterior_transform is not None:
            return posterior_transform(posterior)
        return posterior
