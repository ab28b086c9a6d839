r"""The loop's strategies for Jenatton et al.'s models: ``"jenatton_tree"``,
``"jenatton_tree_nonlinear"`` and ``"independent"``.

Each proposal fits the model to the observations
([`fit_leaf_gp()`][treebo.jenatton.fit.fit_leaf_gp]; the noise is inferred under
a log-normal prior of median about 0.02, as BoTorch's) and takes Jenatton et al.'s
two steps: maximize expected improvement (LogEI) within each leaf, then pick the
leaf whose maximum is highest. After an evaluation that ties the best score exactly, the
proposal maximizes the posterior standard deviation instead, as the Add-Tree
strategies do ([`treebo.strategies.ties`][treebo.strategies.ties]). Both run in one
batch over all leaves
([`optimize_acqf_tree()`][treebo.optim.tree_optimize.optimize_acqf_tree]: random
starts per leaf, then L-BFGS-B on each leaf's own columns). Pending configurations
enter through Monte Carlo ``qLogExpectedImprovement`` with ``X_pending`` (the model's
joint posterior over them). The models are fitted from their defaults at every
proposal, so the strategies keep no state and a resumed run continues exactly.

The shared term of ``"jenatton_tree"`` is chosen per fit by the evidence: the
paper's linear term ($\beta^\top z$, ``tree``) and the random Fourier features of
``tree-nonlinear`` are both fitted, and the one of the higher log posterior
$\log p(y \mid \theta) + \log p(\theta)$ is kept. A linear term fits a curved
effect of a shared parameter well on average (the residual of a quadratic after
its linear fit over $[0, 1]$ has variance $1/180$) yet puts its optimum on a bound:
on a tree whose shared parameter's optimum is inside its range, the linear model
alone proposes the bound forever (regret $(1 - 0.7)^2 = 0.09$ there, behind
random search). Where the effect is linear the evidence keeps the linear term
(by 15 to 20 nats at 40 points on P1).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.acquisition.analytic import PosteriorStandardDeviation
from botorch.exceptions import ModelFittingError

from treebo.jenatton.fit import FIT_MAXITER, fit_leaf_gp
from treebo.jenatton.leaf_gp import LeafGP
from treebo.jenatton.model import IndependentLeafGP, JenattonTreeGP
from treebo.optim.tree_optimize import optimize_acqf_tree
from treebo.space import ConfigurationError, TreeSpace
from treebo.strategies.base import Observations, Proposal, Strategy, register_strategy
from treebo.strategies.expected_improvement import log_ei
from treebo.strategies.ties import ties_the_best
from treebo.strategies.validation import check_count, check_positive


@dataclass(frozen=True)
class IndependentLeafOptions:
    """Settings of the ``"independent"`` strategy.

    Attributes:
        noise_floor: Lower bound on the noise variance (standardized scores).
        fit_maxiter: L-BFGS-B iterations of the hyper-parameter fit.
        num_restarts: L-BFGS-B starts per leaf.
        raw_samples: Random points scored per leaf to choose the starts.
    """

    noise_floor: float = 1e-6
    fit_maxiter: int = FIT_MAXITER
    num_restarts: int = 4
    raw_samples: int = 128

    def __post_init__(self) -> None:
        check_positive(self.noise_floor, "noise_floor")
        check_count(self.fit_maxiter, "fit_maxiter", 1)
        check_count(self.num_restarts, "num_restarts", 1)
        check_count(self.raw_samples, "raw_samples", 1)


@dataclass(frozen=True)
class JenattonTreeOptions(IndependentLeafOptions):
    """Settings of the ``"jenatton_tree"`` strategy (``tree``).

    Attributes:
        num_features: $R$ random features per $\\gamma$ and shared vertex
            (``tree-nonlinear`` only; paper: 25).
        feature_seed: Seed of the random features (``tree-nonlinear`` only).

    Example:
        >>> from treebo import TreeOptimizer
        >>> from treebo.test_functions import Jenatton
        >>> strategy = JenattonTreeStrategy(JenattonTreeOptions(num_features=10))
        >>> opt = TreeOptimizer(Jenatton().space, strategy=strategy)
        >>> opt.strategy.name
        'jenatton_tree'
    """

    num_features: int = 25
    feature_seed: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        check_count(self.num_features, "num_features", 1)
        check_count(self.feature_seed, "feature_seed", 0)


@dataclass(frozen=True)
class JenattonTreeNonlinearOptions(JenattonTreeOptions):
    """Settings of the ``"jenatton_tree_nonlinear"`` strategy
    (``tree-nonlinear``): those of ``"jenatton_tree"``."""


class _LeafStrategy(Strategy):
    """Fit a [`LeafGP`][treebo.jenatton.leaf_gp.LeafGP], then LogEI per leaf and
    the best leaf (module docstring)."""

    handles_pending = True  # pending configurations are avoided

    def __init__(self, options: Any | None = None, **kwargs: Any) -> None:
        super().__init__(options, **kwargs)
        self.last_model: LeafGP | None = None

    def validate_space(self, space: TreeSpace) -> None:
        others = [
            space.parameter_names[c]
            for c in space.integer_columns + space.categorical_columns
        ]
        if others:
            raise ConfigurationError(
                f"strategy={self.name!r} takes real parameters under choices; "
                f"{others[0]!r} is not a real parameter."
            )
        try:
            space.tree.path_table  # noqa: B018 - the leaves must be listable
        except ValueError as err:
            raise ConfigurationError(f"strategy={self.name!r}: {err}") from err

    def build_models(self, observations: Observations) -> list[LeafGP]:
        """The unfitted candidate models of the observations (the evidence
        chooses among more than one)."""
        raise NotImplementedError

    def fit(self, observations: Observations) -> LeafGP:
        """Build the candidate models of the observations, fit each and keep the
        one of the highest log posterior (marginal likelihood and hyper-priors).

        Raises:
            ModelFittingError: If no candidate could be fitted.
        """
        best, best_evidence, error = None, -math.inf, None
        for model in self.build_models(observations):
            try:
                fit_leaf_gp(model, maxiter=self.options.fit_maxiter)
                with torch.no_grad():
                    log_posterior = model.marginal_log_likelihood() + model.log_prior()
            except (RuntimeError, ValueError) as err:
                error = err
                continue
            evidence = float(log_posterior)
            if not math.isfinite(evidence):  # never preferred to a finite one
                evidence = -math.inf
            if best is None or evidence > best_evidence:
                best, best_evidence = model, evidence
        if best is None:
            raise ModelFittingError(
                f"could not fit strategy={self.name!r}: {error}"
            ) from error
        self.last_model = best
        return best

    def acquisition(self, observations: Observations) -> AcquisitionFunction:
        """LogEI on the fitted model; with pending configurations, Monte
        Carlo qLogEI over them; after a tie with the best score, the posterior
        standard deviation."""
        obs = observations
        model = self.fit(obs)
        if ties_the_best(obs.y, obs.failed):
            return PosteriorStandardDeviation(model)
        return log_ei(model, obs.y.max(), obs.X_pending.to(obs.X), obs.seed)

    def propose(self, observations: Observations) -> Proposal:
        t0 = time.perf_counter()
        acqf = self.acquisition(observations)
        t1 = time.perf_counter()
        best = optimize_acqf_tree(
            acqf,
            observations.space,
            num_restarts=self.options.num_restarts,
            raw_samples=self.options.raw_samples,
            seed=observations.seed,
        )
        timings = {"fit": t1 - t0, "optimize": time.perf_counter() - t1}
        explore = isinstance(acqf, PosteriorStandardDeviation)
        kind = "explore" if explore else "bo"
        return Proposal(best.candidate.reshape(-1), kind, timings)


@register_strategy
class IndependentLeafStrategy(_LeafStrategy):
    """Independent GPs per leaf
    ([`IndependentLeafGP`][treebo.jenatton.model.IndependentLeafGP]), LogEI per
    leaf, the best leaf.

    Example:
        >>> from treebo import minimize
        >>> from treebo.test_functions import Jenatton
        >>> problem = Jenatton()
        >>> result = minimize(problem.objective, problem.space, budget=8,
        ...                   seed=0, strategy="independent")
        >>> [t.kind for t in result.history].count("bo")
        3
    """

    name: ClassVar[str] = "independent"
    options_type: ClassVar[type] = IndependentLeafOptions

    def build_models(self, observations: Observations) -> list[LeafGP]:
        return [
            IndependentLeafGP(
                observations.X,
                observations.y,
                observations.space,
                noise_floor=self.options.noise_floor,
            )
        ]


@register_strategy
class JenattonTreeStrategy(_LeafStrategy):
    """Jenatton et al.'s ``tree``
    ([`JenattonTreeGP`][treebo.jenatton.model.JenattonTreeGP]) with the shared
    term the evidence prefers (linear or ``tree-nonlinear``'s random features:
    module docstring), LogEI per leaf, the best leaf.

    Example:
        >>> from treebo import minimize
        >>> from treebo.test_functions import Jenatton
        >>> problem = Jenatton()
        >>> result = minimize(problem.objective, problem.space, budget=8,
        ...                   seed=0, strategy="jenatton_tree")
        >>> len(result.history)
        8
    """

    name: ClassVar[str] = "jenatton_tree"
    options_type: ClassVar[type] = JenattonTreeOptions
    #: The shared terms the evidence chooses from (``nonlinear`` flags of
    #: [`JenattonTreeGP`][treebo.jenatton.model.JenattonTreeGP]).
    shared_terms: ClassVar[tuple[bool, ...]] = (False, True)

    def build_models(self, observations: Observations) -> list[LeafGP]:
        opts = self.options
        return [
            JenattonTreeGP(
                observations.X,
                observations.y,
                observations.space,
                nonlinear=nonlinear,
                num_features=opts.num_features,
                feature_seed=opts.feature_seed,
                noise_floor=opts.noise_floor,
            )
            for nonlinear in self.shared_terms
        ]


@register_strategy
class JenattonTreeNonlinearStrategy(JenattonTreeStrategy):
    """Jenatton et al.'s ``tree-nonlinear``: as ``"jenatton_tree"``, with random
    Fourier features of the shared parameters."""

    name: ClassVar[str] = "jenatton_tree_nonlinear"
    options_type: ClassVar[type] = JenattonTreeNonlinearOptions
    shared_terms: ClassVar[tuple[bool, ...]] = (True,)
