r"""The treed strategy: HTBO (Assael et al.) on spaces of real parameters.

Each proposal builds a [`TreedGP`][treebo.treed.model.TreedGP] on the observations (the
partition is rebuilt from the data every time, as in Assael et al. (2014), and pruned by
leave-one-out validation), fits its leaves by the weighted pseudo-likelihood
([`fit_treed_gp()`][treebo.treed.fit.fit_treed_gp]), and maximizes expected improvement
over a 20,000-point Sobol set with the best points polished by L-BFGS-B
([`optimize_acqf_sobol()`][treebo.optim.sobol.optimize_acqf_sobol]). Pending
configurations enter through BoTorch's Monte Carlo ``qLogExpectedImprovement`` with
``X_pending``. Hyper-parameters are fitted from their defaults each time (the number of
leaves changes between proposals), so the strategy keeps no state and a resumed run
continues exactly.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from typing import Any

from botorch.acquisition import AcquisitionFunction
from botorch.exceptions import ModelFittingError

from treebo.optim.sobol import optimize_acqf_sobol
from treebo.space import TreeSpace
from treebo.strategies.base import (
    Observations,
    Proposal,
    Strategy,
    register_strategy,
    require_real_parameters,
)
from treebo.strategies.expected_improvement import log_ei
from treebo.strategies.validation import check_count, check_positive
from treebo.treed.fit import fit_treed_gp
from treebo.treed.model import TreedGP


@dataclass(frozen=True)
class TreedOptions:
    """Settings of the ``"treed"`` strategy (Assael et al.'s (2014), plus tree pruning).

    Attributes:
        min_leaf_size: The fewest observations a leaf holds.
        max_depth: The deepest a leaf may be (``None``: no limit).
        warp: Learn a Kumaraswamy input warp per leaf (HTBO-WARP).
        noise_floor: Lower bound on each leaf's noise variance (standardized
            scores).
        num_points: Size of the Sobol set the acquisition is scored on.
        num_polish: How many of its best points L-BFGS-B refines.
        fit_maxiter: L-BFGS-B iterations of the hyper-parameter fit (``None``: 20, or 50
            with ``warp``, whose two concentrations per input and leaf take longer to
            settle). The fit starts each leaf from the best point of a grid
            ([`start_from_grid()`][treebo.treed.fit.start_from_grid]).

    Example:
        >>> from treebo import Real, TreeOptimizer, TreeSpace, Vertex
        >>> space = TreeSpace(Vertex([Real("x", 0.0, 1.0)]))
        >>> strategy = TreedStrategy(TreedOptions(warp=True))
        >>> opt = TreeOptimizer(space, strategy=strategy)
        >>> opt.strategy.options.min_leaf_size
        5
    """

    min_leaf_size: int = 5
    max_depth: int | None = None
    warp: bool = False
    noise_floor: float = 1e-6
    num_points: int = 20_000
    num_polish: int = 5
    fit_maxiter: int | None = None

    def __post_init__(self) -> None:
        check_count(self.min_leaf_size, "min_leaf_size", 1)
        if self.max_depth is not None:
            check_count(self.max_depth, "max_depth", 0)
        if not isinstance(self.warp, bool):
            raise TypeError(f"warp must be a bool, got {self.warp!r}.")
        check_positive(self.noise_floor, "noise_floor")
        check_count(self.num_points, "num_points", 1)
        check_count(self.num_polish, "num_polish", 0)
        if self.fit_maxiter is not None:
            check_count(self.fit_maxiter, "fit_maxiter", 1)

    @property
    def fit_iterations(self) -> int:
        """The fit's L-BFGS-B iterations (``fit_maxiter`` or its default)."""
        if self.fit_maxiter is not None:
            return self.fit_maxiter
        return 50 if self.warp else 20


@register_strategy
class TreedStrategy(Strategy):
    """Expected improvement on a [`TreedGP`][treebo.treed.model.TreedGP].

    Args:
        options: [`TreedOptions`][treebo.treed.strategy.TreedOptions].
        **kwargs: ``device`` and ``dtype`` of the models.

    Attributes:
        last_model: The model of the last proposal.

    Example:
        >>> from treebo import Real, TreeSpace, Vertex, minimize
        >>> space = TreeSpace(Vertex([Real("x", -2.0, 2.0)]))
        >>> result = minimize(
        ...     lambda p: (p["x"] - 0.5) ** 2, space, 12, seed=0, strategy="treed"
        ... )
        >>> abs(result.best_params["x"] - 0.5) < 0.2
        True
    """

    handles_pending = True  # pending configurations are avoided

    name = "treed"
    options_type = TreedOptions

    def __init__(self, options: TreedOptions | None = None, **kwargs: Any) -> None:
        super().__init__(options, **kwargs)
        self.last_model: TreedGP | None = None

    def validate_space(self, space: TreeSpace) -> None:
        require_real_parameters(space, self.name)

    def build_model(self, observations: Observations) -> TreedGP:
        """The unfitted treed GP of the observations (a subclass may build
        another, e.g. a ``TreedGP`` subclass whose ``grow_partition()`` keeps
        Assael et al.'s (2014) unpruned tree)."""
        opts = self.options
        bounds = observations.space.bounds.to(observations.X)
        return TreedGP(
            observations.X,
            observations.y,
            min_leaf_size=opts.min_leaf_size,
            warp=opts.warp,
            bounds=bounds,
            max_depth=opts.max_depth,
            noise_floor=opts.noise_floor,
        )

    def fit(self, observations: Observations) -> TreedGP:
        """Build and fit the treed GP of the observations."""
        model = self.build_model(observations)
        try:
            with warnings.catch_warnings(record=True):
                fit_treed_gp(model, maxiter=self.options.fit_iterations)
        except (RuntimeError, ValueError) as err:
            raise ModelFittingError(f"could not fit the treed GP: {err}") from err
        if not all(bool(p.isfinite().all()) for p in model.parameters()):
            raise ModelFittingError("the treed GP's fit ended at non-finite values")
        self.last_model = model.eval()
        return model

    def acquisition(self, observations: Observations) -> AcquisitionFunction:
        """LogEI on the treed GP fitted to ``observations``; with pending
        configurations, Monte Carlo qLogEI over them."""
        obs = observations
        model = self.fit(obs)
        return log_ei(model, obs.y.max(), obs.X_pending.to(obs.X), obs.seed)

    def propose(self, observations: Observations) -> Proposal:
        t0 = time.perf_counter()
        obs = observations
        acqf = self.acquisition(obs)
        t1 = time.perf_counter()
        candidate, _ = optimize_acqf_sobol(
            acqf,
            obs.space.bounds.to(obs.X),
            num_points=self.options.num_points,
            num_polish=self.options.num_polish,
            seed=obs.seed,
        )
        timings = {"fit": t1 - t0, "optimize": time.perf_counter() - t1}
        return Proposal(candidate.reshape(-1), "bo", timings)
