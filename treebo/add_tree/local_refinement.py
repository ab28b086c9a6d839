r"""Local refinement of the incumbent on its own path.

A global surrogate is standardized over every observation, so once the search has found
the right basin, differences between the best points (say $10^{-8}$ when the range of
observed values is 1) sit far below the model's noise floor and it can no longer tell
them apart: proposals stall a fixed distance from the optimum. Trust-region methods
(TuRBO, Eriksson et al.
2019) avoid this by modelling only the neighbourhood of the incumbent.

A local step does this on a tree-structured space, in four parts. With $x^*$ the best
observation and $A$ the continuous columns active on its path, it takes the $k$
observations on the same path nearest to $x^*$ (in the $\ell_\infty$ distance on
``bounds``-normalized columns $A$:
[`neighbourhood()`][treebo.add_tree.local_refinement.neighbourhood]), builds the box
([`LocalBox.around()`][treebo.add_tree.local_refinement.LocalBox.around])

$$
B = \prod_{c \in A} [x^*_c - h_c,\; x^*_c + h_c] \cap [l_c, u_c], \qquad
h_c = (u_c - l_c) \min\Big(\rho,\; \max_{i \le k}
      \frac{|x_{i,c} - x^*_c|}{u_c - l_c}\Big),
$$

fits a ``SingleTaskGP`` to those $k$ points and every other same-path observation in
$B$, with inputs scaled to $B$ and outcomes standardized over those points only
([`fit_local_model()`][treebo.add_tree.local_refinement.fit_local_model]), and
returns the maximizer of an acquisition in $B$
([`local_acquisition()`][treebo.add_tree.local_refinement.local_acquisition],
[`optimize_in_box()`][treebo.add_tree.local_refinement.optimize_in_box]);
[`LocalSteps.step()`][treebo.add_tree.local_steps.LocalSteps.step] puts them
together. As new points gather around the optimum
the box shrinks with them, so the resolution follows the incumbent down to machine
precision.

The default acquisition is an upper confidence bound with a small weight,
$\mu(x) + \sqrt{\beta}\,\sigma(x)$ with $\beta = 0.1$: the step exploits the local
model's prediction and explores only where it is unsure near that prediction.
``LogExpectedImprovement`` explores more: in a box whose corners hold no data it prefers
those corners (their posterior variance is the prior's), so its steps tend to land on
the box's edge. Exploring steps still help the box shrink onto the optimum, so the
loop's local steps alternate the two by default
([`LocalSteps`][treebo.add_tree.local_steps.LocalSteps]). The local noise floor
(default $10^{-8}$ of the neighbourhood's standardized variance) bounds how finely a
step can resolve the values near the incumbent.

With ``prior_mean`` (the global model's posterior mean $m$), the local model fits the
residuals $y - m(x)$ instead of $y$, and the acquisition scores $m(x) + \mu_r(x)$ with
the residual model's $\sigma_r(x)$. Where the box holds few observations, the step then
follows the global model's trend instead of the local model's prior (a constant).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from typing import NamedTuple

import torch
from botorch.acquisition import (
    AcquisitionFunction,
    LogExpectedImprovement,
    UpperConfidenceBound,
)
from botorch.acquisition.objective import PosteriorTransform
from botorch.exceptions import ModelFittingError
from botorch.models import SingleTaskGP
from botorch.models.model import Model
from botorch.models.transforms.outcome import Standardize
from botorch.optim import optimize_acqf
from botorch.posteriors import GPyTorchPosterior
from gpytorch.constraints import GreaterThan
from gpytorch.distributions import MultivariateNormal
from gpytorch.likelihoods import GaussianLikelihood
from torch import Tensor

from treebo.gp.fit import fit_model
from treebo.optim.tree_optimize import distinct_rows
from treebo.space import TreeSpace

LOCAL_ACQUISITIONS = ("ucb", "log_ei")


def same_path_as(space: TreeSpace, X: Tensor, x: Tensor) -> Tensor:
    """``n`` boolean: which rows of ``X`` (``n x d``) share the discrete setting of
    ``x`` (``d``).

    Two configurations share it when the same vertices are active and their
    integer and categorical columns are equal: they then differ only in real
    values, the domain of a local step.
    """
    activity = space.tree.vertex_activity(torch.cat([x.unsqueeze(0), X]))
    same = (activity[1:] == activity[:1]).all(-1)
    discrete = space.integer_columns + space.categorical_columns
    if discrete:
        same &= (X[:, discrete] == x[discrete]).all(-1)
    return same


class OffsetModel(Model):
    r"""A single-outcome model plus a known, differentiable offset.

    With $\mu_r, \sigma_r^2$ the posterior of ``model`` and $m$ the ``offset``, the
    posterior at $x$ has mean $m(x) + \mu_r(x)$ and the covariance of ``model``: a GP
    fitted to the residuals of a prior mean $m$, seen as a model of the data themselves.
    Any BoTorch acquisition function can then score it (e.g. UCB,
    $m(x) + \mu_r(x) + \sqrt{\beta}\,\sigma_r(x)$).

    Args:
        model: The residual model (one outcome).
        offset: Maps ``batch x q x d`` inputs to ``batch x q`` offsets,
            differentiably.

    Example:
        >>> import torch
        >>> from botorch.acquisition import UpperConfidenceBound
        >>> from botorch.models import SingleTaskGP
        >>> X = torch.rand(8, 2, dtype=torch.float64)
        >>> prior_mean = lambda Z: Z.sum(-1)  # batch x q x d -> batch x q
        >>> residual_gp = SingleTaskGP(X, (X.prod(-1) - X.sum(-1)).unsqueeze(-1))
        >>> shifted = OffsetModel(residual_gp, prior_mean)
        >>> Z = torch.rand(3, 1, 2, dtype=torch.float64)
        >>> ucb = UpperConfidenceBound(shifted, beta=0.1)(Z)
        >>> plain = UpperConfidenceBound(residual_gp, beta=0.1)(Z)
        >>> torch.allclose(ucb - plain, prior_mean(Z).squeeze(-1))
        True
    """

    def __init__(self, model: Model, offset: Callable[[Tensor], Tensor]) -> None:
        super().__init__()
        if model.num_outputs != 1:
            raise ValueError("OffsetModel needs a single-outcome model.")
        self.model = model
        self.offset = offset

    @property
    def num_outputs(self) -> int:
        return 1

    def posterior(
        self,
        X: Tensor,
        output_indices: list[int] | None = None,
        observation_noise: bool | Tensor = False,
        posterior_transform: PosteriorTransform | None = None,
    ) -> GPyTorchPosterior:
        """The residual model's posterior, shifted by ``offset(X)``.

        Args:
            X: ``batch x q x d`` inputs.
        """
        if posterior_transform is not None:
            raise NotImplementedError("OffsetModel takes no posterior_transform.")
        base = self.model.posterior(
            X, output_indices=output_indices, observation_noise=observation_noise
        )
        mvn = base.distribution
        shifted = MultivariateNormal(
            mvn.mean + self.offset(X), mvn.lazy_covariance_matrix
        )
        return GPyTorchPosterior(shifted)


def validate_local_acquisition(
    acquisition: str, beta: float, names: tuple[str, str] = ("acquisition", "beta")
) -> None:
    """Raise a ``ValueError`` naming the argument unless ``acquisition`` is one
    of [`LOCAL_ACQUISITIONS`][treebo.add_tree.local_refinement.LOCAL_ACQUISITIONS] and
    ``beta`` is a finite number ``>= 0``."""
    if acquisition not in LOCAL_ACQUISITIONS:
        raise ValueError(
            f"{names[0]} must be one of {LOCAL_ACQUISITIONS}, got {acquisition!r}."
        )
    if (
        isinstance(beta, bool)
        or not isinstance(beta, (int, float))
        or not (math.isfinite(beta) and beta >= 0)
    ):
        raise ValueError(f"{names[1]} must be a finite number >= 0, got {beta!r}.")


class Neighbourhood(NamedTuple):
    """The incumbent and its nearest observations on its path.

    Attributes:
        incumbent: ``d`` the best observation.
        columns: The real columns active on its path (``|A|`` of them).
        on_path: Indices of the observations that share its discrete setting.
        nearest: The ``k`` nearest distinct ones among them (positions in
            ``on_path``).
        offsets: ``len(on_path) x |A|`` their offsets from the incumbent, as
            fractions of each column's range.
    """

    incumbent: Tensor
    columns: list[int]
    on_path: Tensor
    nearest: Tensor
    offsets: Tensor


def neighbourhood(
    space: TreeSpace, X: Tensor, y: Tensor, num_neighbors: int | None = None
) -> Neighbourhood | None:
    r"""The best observation and its $k$ nearest distinct observations on its path
    (the $\ell_\infty$ distance on ``bounds``-normalized real columns).

    Args:
        space: The search space (its ``bounds`` normalize the distances).
        X: ``n x d`` encoded observations.
        y: ``n x 1`` targets (larger is better).
        num_neighbors: $k$ (default ``max(6, 3 |A| + 2)``); repeated points count
            once, so that re-evaluations of the incumbent cannot collapse a box
            onto it.

    Returns:
        The neighbourhood, or ``None`` when the path has no active real column or
        fewer than ``|A| + 2`` distinct observations.

    Example:
        >>> from treebo.test_functions import Jenatton
        >>> problem = Jenatton("paper")
        >>> space = problem.space
        >>> X = space.set_paths(space.sample(12, seed=0), torch.zeros(12).long())
        >>> near = neighbourhood(space, X, -problem(X).unsqueeze(-1))
        >>> near.columns, near.nearest.numel()  # r8 and x4 on the best path
        ([1, 5], 8)
        >>> box = LocalBox.around(space, X, near, radius=0.05)
        >>> box.contains(near.incumbent.unsqueeze(0)).tolist()
        [True]
    """
    if X.dim() != 2 or y.shape != (X.shape[0], 1):
        raise ValueError(
            "X must be n x d and y n x 1, got shapes "
            f"{tuple(X.shape)} and {tuple(y.shape)}."
        )
    x_best = X[int(y.squeeze(-1).argmax())]
    active = space.column_activity(x_best.unsqueeze(0))[0]
    cols = [c for c in space.real_columns if bool(active[c])]
    if not cols:
        return None
    k = num_neighbors if num_neighbors is not None else max(6, 3 * len(cols) + 2)
    on_path = same_path_as(space, X, x_best).nonzero().squeeze(-1)
    bounds = space.bounds.to(X)[:, cols]
    Z = (X[on_path][:, cols] - x_best[cols]) / (bounds[1] - bounds[0])
    distinct = distinct_rows(Z)
    if distinct.numel() < len(cols) + 2:
        return None
    dist = Z[distinct].abs().amax(-1)
    return Neighbourhood(x_best, cols, on_path, distinct[dist.argsort()[:k]], Z)


@dataclass(frozen=True)
class LocalBox:
    r"""The box of a local step: the incumbent's real columns $A$ within
    $[x^*_c - h_c, x^*_c + h_c] \cap [l_c, u_c]$ (module docstring), and the
    observations a local model reads.

    Attributes:
        space: The search space.
        incumbent: ``d`` the best observation (its other columns are kept).
        columns: The box's columns $A$.
        lower: ``|A|`` lower corner.
        upper: ``|A|`` upper corner.
        rows: Indices of the observations in the box on the incumbent's path
            (the $k$ nearest always among them).
    """

    space: TreeSpace
    incumbent: Tensor
    columns: list[int]
    lower: Tensor
    upper: Tensor
    rows: Tensor

    @classmethod
    def around(
        cls, space: TreeSpace, X: Tensor, near: Neighbourhood, radius: float = 0.05
    ) -> LocalBox | None:
        """The box spanned by ``near``'s nearest observations, each half-width
        capped at ``radius`` of its column's range (a column without spread takes
        the smallest spread of the others); ``None`` where nothing spreads."""
        if not radius > 0:
            raise ValueError(f"radius must be > 0, got {radius}.")
        x_best, cols = near.incumbent, near.columns
        bounds = space.bounds.to(X)[:, cols]
        width = bounds[1] - bounds[0]
        half = near.offsets[near.nearest].abs().amax(0).clamp_max(radius)
        if not bool((half > 0).any()):
            return None
        half = torch.where(half > 0, half, half[half > 0].min()) * width
        lo = torch.maximum(x_best[cols] - half, bounds[0])
        hi = torch.minimum(x_best[cols] + half, bounds[1])
        # Every same-path observation in the box is modelled, so that no
        # evaluated point in it is unknown to the local model.
        Xp = X[near.on_path][:, cols]
        inside = ((Xp >= lo) & (Xp <= hi)).all(-1)
        inside[near.nearest] = True
        return cls(space, x_best, cols, lo, hi, near.on_path[inside])

    @property
    def span(self) -> Tensor:
        """``|A|`` widths (at least the dtype's smallest positive number)."""
        return (self.upper - self.lower).clamp_min(torch.finfo(self.lower.dtype).tiny)

    def to_unit(self, X: Tensor) -> Tensor:
        """``... x d`` encodings -> ``... x |A|`` coordinates in the unit box."""
        return (X[..., self.columns] - self.lower) / self.span

    def to_full(self, U: Tensor) -> Tensor:
        """``... x |A|`` unit coordinates -> ``... x d`` encodings (the incumbent's
        values in the other columns)."""
        full = self.incumbent.expand(*U.shape[:-1], -1).clone()
        full[..., self.columns] = self.lower + U * self.span
        return full

    def contains(self, X: Tensor) -> Tensor:
        """``n`` booleans: which rows of ``X`` (``n x d``) lie in the box on the
        incumbent's path."""
        Z = X[..., self.columns]
        inside = ((Z >= self.lower) & (Z <= self.upper)).all(-1)
        return inside & same_path_as(self.space, X, self.incumbent)


def fit_local_model(
    box: LocalBox,
    X: Tensor,
    y: Tensor,
    noise_floor: float = 1e-8,
    prior_mean: Callable[[Tensor], Tensor] | None = None,
    prior_resolution: float = 0.0,
    X_pending: Tensor | None = None,
) -> Model | None:
    r"""A GP of the box's observations, in the box's unit coordinates.

    Args:
        box: The step's box.
        X: ``n x d`` encoded observations (``box.rows`` index them).
        y: ``n x 1`` targets.
        noise_floor: Lower bound on the local model's noise variance
            (standardized over the box's values). It sets the step's resolution:
            about ``sqrt(noise_floor)`` of their spread, so 1e-8 resolves 1e-4.
        prior_mean: Optional map from ``m x d`` encodings to ``m`` predictions on
            ``y``'s scale (differentiable; the global model's posterior mean). The
            local model then fits ``y - prior_mean(X)`` and is an
            [`OffsetModel`][treebo.add_tree.local_refinement.OffsetModel] of the
            residual GP.
        prior_resolution: Use ``prior_mean`` only while the box's values spread
            more than this (say, the global model's noise standard deviation,
            below which its mean carries no information).
        X_pending: ``p x d`` configurations being evaluated: those in the box are
            believed at the local model's own posterior mean (its variance there
            drops to the noise floor, so a step goes elsewhere).

    Returns:
        The model in eval mode, or ``None`` where the values have no spread or
        the fit fails.
    """
    train_X, train_Y = box.to_unit(X[box.rows]), y[box.rows]
    offset = None
    if prior_mean is not None and float(train_Y.max() - train_Y.min()) > (
        prior_resolution
    ):

        def offset(U: Tensor) -> Tensor:
            return prior_mean(box.to_full(U))

        with torch.no_grad():
            train_Y = train_Y - offset(train_X).unsqueeze(-1)
    model = _fit_gp(train_X, train_Y, noise_floor)
    if model is None:
        return None
    if X_pending is not None and X_pending.shape[0]:
        pending = X_pending.to(X)
        pending = pending[box.contains(pending)]
        if pending.shape[0]:
            model = _believe(model, box.to_unit(pending))
    if offset is not None:
        return OffsetModel(model, lambda U: offset(U.squeeze(-2)).unsqueeze(-1))
    return model


def local_acquisition(
    model: Model, acquisition: str, beta: float, best_f: Tensor
) -> AcquisitionFunction:
    r"""The step's acquisition function: ``"ucb"`` ($\mu + \sqrt{\beta}\sigma$ of
    the local model) or ``"log_ei"`` (``LogExpectedImprovement`` over ``best_f``,
    the box's best value)."""
    validate_local_acquisition(acquisition, beta)
    if acquisition == "ucb":
        if isinstance(model, OffsetModel):
            beta = torch.tensor(beta, dtype=torch.float64)
        return UpperConfidenceBound(model, beta=beta)
    return LogExpectedImprovement(model, best_f=best_f)


def optimize_in_box(
    box: LocalBox,
    acquisition_function: AcquisitionFunction,
    num_restarts: int = 4,
    raw_samples: int = 128,
    seed: int | None = None,
) -> Tensor | None:
    """The maximizer of ``acquisition_function`` (of unit-box coordinates) in the
    box, as a ``1 x d`` encoding on the incumbent's path; ``None`` where the
    optimization fails numerically or ends off the finite numbers.

    Args:
        box: The step's box.
        acquisition_function: Scores ``b x 1 x |A|`` unit-box points.
        num_restarts: L-BFGS-B starts.
        raw_samples: Random points scored to choose the starts.
        seed: Seed of the start selection (the global random state is kept).
    """
    n = len(box.columns)
    unit = torch.stack([torch.zeros(n), torch.ones(n)]).to(box.lower)
    fork = torch.random.fork_rng() if seed is not None else nullcontext()
    try:
        with fork, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if seed is not None:
                torch.manual_seed(seed)
            u, _ = optimize_acqf(
                acquisition_function,
                bounds=unit,
                q=1,
                num_restarts=num_restarts,
                raw_samples=raw_samples,
            )
    except RuntimeError:  # a numerical failure: let the global proposal stand
        return None
    candidate = box.to_full(u.detach())
    if not bool(torch.isfinite(candidate).all()):
        return None
    return box.space.canonicalize(candidate)


def _fit_gp(train_X: Tensor, train_Y: Tensor, noise_floor: float) -> Model | None:
    """A ``SingleTaskGP`` fitted to ``train_Y`` (standardized), in eval mode;
    ``None`` when ``train_Y`` has no spread or the fit fails."""
    if float(train_Y.max() - train_Y.min()) == 0.0:
        return None
    likelihood = GaussianLikelihood(noise_constraint=GreaterThan(noise_floor))
    try:
        with warnings.catch_warnings():
            # Tiny local spreads are expected: Standardize rescales them.
            warnings.simplefilter("ignore")
            model = SingleTaskGP(
                train_X,
                train_Y,
                likelihood=likelihood,
                outcome_transform=Standardize(m=1),
            )
            fit_model(model)  # batched with other runs' fits in lockstep
    except (ModelFittingError, RuntimeError, ValueError):
        return None
    return model.eval()


def _believe(model: SingleTaskGP, U: Tensor) -> SingleTaskGP:
    """``model`` conditioned on ``m x k`` inputs ``U`` at its posterior mean
    there (the kriging believer; hyper-parameters unchanged), or ``model``
    itself where the conditioning fails numerically."""
    try:
        with torch.no_grad():
            mean = model.posterior(U).mean
        return model.condition_on_observations(U, mean)
    except RuntimeError:  # e.g. a covariance that is not positive definite
        return model


def linf_distance(space: TreeSpace, a: Tensor, b: Tensor) -> float:
    """``bounds``-normalized $\\ell_\\infty$ distance of two ``d`` encodings
    over their real columns (``inf`` unless they share the discrete setting)."""
    if not bool(same_path_as(space, a.unsqueeze(0), b)[0]):
        return math.inf
    cols = list(space.real_columns)
    if not cols:
        return 0.0
    width = (space.bounds[1] - space.bounds[0]).to(a)[cols]
    return float(((a[cols] - b[cols]).abs() / width).max())
