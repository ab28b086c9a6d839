"""Local refinement of the incumbent as a part of a strategy.

[`LocalSteps`][treebo.add_tree.local_steps.LocalSteps] decides when a local step
replaces the global proposal and computes it from the parts of
[`local_refinement`][treebo.add_tree.local_refinement] (neighbourhood, box, local
model, acquisition), whose module explains the local model. Steps cycle through
[`LocalSteps.acquisitions`][treebo.add_tree.local_steps.LocalSteps.acquisitions]; with
``options.mean == "auto"`` the local model fits the residuals of the global model's
posterior mean while the neighbourhood's values spread more than the global model's
noise standard deviation.

Failure counts ([`count_failures()`][treebo.add_tree.local_steps.count_failures])
schedule local steps (after some failed global proposals) and tell when the incumbent's
basin is resolved ([`basin_resolved()`][treebo.add_tree.local_steps.basin_resolved]:
after some failed local steps in a row), so that proposals may move elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import torch
from torch import Tensor

from treebo.add_tree.local_refinement import (
    LocalBox,
    fit_local_model,
    linf_distance,
    local_acquisition,
    neighbourhood,
    optimize_in_box,
    validate_local_acquisition,
)
from treebo.add_tree.model import AddTreeGP
from treebo.add_tree.options import LocalStepOptions
from treebo.space import TreeSpace
from treebo.strategies.base import Observations, is_observed
from treebo.strategies.validation import check_count, check_positive

#: Kinds of model-based global proposals.
GLOBAL_KINDS = ("bo", "away")


class Failures(NamedTuple):
    """Proposals that did not improve the incumbent.

    Attributes:
        global_: Global (``"bo"``, ``"away"``) proposals since the incumbent
            last improved or the last local step.
        local: Failed local steps since a non-local proposal last improved the
            incumbent (a new basin); local improvements do not reset it.
        local_streak: Failed local steps in a row (reset by any improvement).
    """

    global_: int
    local: int
    local_streak: int


def count_failures(scores: Tensor, kinds: Sequence[str]) -> Failures:
    """The [`Failures`][treebo.add_tree.local_steps.Failures] of a history.

    Args:
        scores: ``n`` scores to maximize, ``-inf`` for failed trials.
        kinds: The ``n`` trials' kinds (``"local"`` for local steps).

    Example:
        >>> import torch
        >>> count_failures(torch.tensor([1.0, 0.5, 0.7]), ["initial", "bo", "local"])
        Failures(global_=0, local=1, local_streak=1)
    """
    best = -float("inf")
    global_failures = local_failures = streak = 0
    for kind, score in zip(kinds, scores.tolist(), strict=True):
        improved = score > best
        best = max(best, score)
        if kind == "local":
            global_failures = 0
            local_failures += 0 if improved else 1
            streak = 0 if improved else streak + 1
        elif improved:
            global_failures = local_failures = streak = 0
        elif kind in GLOBAL_KINDS:
            global_failures += 1
    return Failures(global_failures, local_failures, streak)


def basin_resolved(failures: Failures, patience: int | None) -> bool:
    """Whether ``patience`` local steps in a row have failed (never if ``None``)."""
    return patience is not None and failures.local_streak >= patience


#: Local steps that land this close to an evaluated point are dropped.
LOCAL_REPEAT_TOL = 1e-12


@dataclass(frozen=True)
class LocalStepSettings:
    r"""The local step's own settings (where the two Add-Tree strategies agree).

    Attributes:
        radius: ``bounds``-normalized $\ell_\infty$ radius that triggers a local step,
            and the largest half-width of its box.
        noise_floor: Lower bound on the local model's noise variance
            (standardized over the neighbourhood).
        acquisitions: Acquisitions of successive local steps, cycled: ``"ucb"``
            ($\mu + \sqrt{\beta}\sigma$, a step to the local model's optimum) and
            ``"log_ei"`` (which explores the box).
        beta: The local UCB weight $\beta$.
        num_neighbors: The observations that span the box (``None``:
            ``max(6, 3 |A| + 2)`` for ``|A|`` real columns on the path).
        num_restarts: L-BFGS-B starts of the local acquisition.
        raw_samples: Random points scored to choose the starts.

    Example:
        >>> LocalStepSettings(radius=0.1).acquisitions
        ('ucb', 'log_ei')
    """

    radius: float = 0.05
    noise_floor: float = 1e-8
    acquisitions: tuple[str, ...] = ("ucb", "log_ei")
    beta: float = 0.1
    num_neighbors: int | None = None
    num_restarts: int = 4
    raw_samples: int = 128

    def __post_init__(self) -> None:
        if not self.radius > 0:
            raise ValueError(f"radius must be > 0, got {self.radius!r}.")
        check_positive(self.noise_floor, "noise_floor")
        if not self.acquisitions:
            raise ValueError("acquisitions must name at least one acquisition.")
        for name in self.acquisitions:
            validate_local_acquisition(name, self.beta, ("acquisitions", "beta"))
        if self.num_neighbors is not None:
            check_count(self.num_neighbors, "num_neighbors", 2)
        check_count(self.num_restarts, "num_restarts", 1)
        check_count(self.raw_samples, "raw_samples", 1)


class LocalSteps:
    r"""When and where to refine the incumbent locally.

    Args:
        options: The [`LocalStepOptions`][treebo.add_tree.options.LocalStepOptions]
            (when steps are due, and the local model's prior mean).
        settings: The step's
            [`LocalStepSettings`][treebo.add_tree.local_steps.LocalStepSettings]
            (radius, noise floor, acquisitions, starts).

    Example:
        >>> from treebo import TreeOptimizer
        >>> from treebo.test_functions import Jenatton
        >>> problem = Jenatton()
        >>> opt = TreeOptimizer(problem.space, seed=0, n_initial=6)
        >>> for _ in range(10):  # six initial points, then model-based ones
        ...     params = opt.ask()
        ...     _ = opt.tell(params, problem.objective(params))
        >>> obs = opt.observations()
        >>> steps = LocalSteps(LocalStepOptions())
        >>> step = steps.candidate(obs, obs.X, obs.y, opt.last_model)
        >>> steps.is_near(obs.space, step[0], obs.incumbent)  # within the radius
        True
    """

    def __init__(
        self,
        options: LocalStepOptions,
        settings: LocalStepSettings | None = None,
    ) -> None:
        self.options = options
        self.settings = LocalStepSettings() if settings is None else settings

    def is_due(self, failures: Failures) -> bool:
        """Whether ``options.patience`` failed global proposals ask for a step."""
        patience = self.options.patience
        return patience > 0 and failures.global_ >= patience

    def is_near(self, space: TreeSpace, candidate: Tensor, incumbent: Tensor) -> bool:
        """Whether ``candidate`` lies on the incumbent's path within the radius."""
        return linf_distance(space, candidate, incumbent) <= self.settings.radius

    def next_acquisition(self, kinds: tuple[str, ...]) -> str:
        """The acquisition of the next step (cycled over the local steps so far)."""
        done = sum(kind == "local" for kind in kinds)
        acquisitions = self.settings.acquisitions
        return acquisitions[done % len(acquisitions)]

    def candidate(
        self,
        observations: Observations,
        X: Tensor,
        y: Tensor,
        model: AddTreeGP | None,
        X_pending: Tensor | None = None,
    ) -> Tensor | None:
        """A local step (``1 x d``) or ``None`` when none is possible.

        Args:
            observations: The run so far (for the space, kinds and seed).
            X: ``n x d`` finished evaluations.
            y: ``n x 1`` scores to maximize.
            model: A global model of the run (its posterior mean is the local
                model's prior mean); needed when ``options.mean == "auto"``.
            X_pending: ``p x d`` configurations being evaluated: the local
                model believes them at its own prediction
                ([`fit_local_model()`][treebo.add_tree.local_refinement.fit_local_model]).
        """
        options = self.options
        prior_mean, resolution = None, 0.0
        if options.mean == "auto":
            if model is None:
                raise ValueError("local steps with mean='auto' need the global model.")

            def prior_mean(Z: Tensor) -> Tensor:
                return model.posterior_mean_variance(Z)[0]

            resolution = model.likelihood.noise.detach().max().sqrt()
            scale = model.outcome_scale()
            if scale is not None:
                resolution = resolution * scale[0].max()
            resolution = float(resolution)
        candidate = self.step(
            observations.space,
            X,
            y,
            self.next_acquisition(observations.kinds),
            seed=observations.seed,
            prior_mean=prior_mean,
            prior_resolution=resolution,
            X_pending=X_pending,
        )
        # A step that lands exactly on an evaluated (or pending) point, say a
        # corner of its box, teaches a deterministic objective nothing.
        seen = X if X_pending is None else torch.cat([X, X_pending.to(X)])
        if candidate is not None and is_observed(
            observations.space, candidate[0], seen, LOCAL_REPEAT_TOL
        ):
            return None
        return candidate

    def step(
        self,
        space: TreeSpace,
        X: Tensor,
        y: Tensor,
        acquisition: str = "ucb",
        seed: int | None = None,
        prior_mean: Callable[[Tensor], Tensor] | None = None,
        prior_resolution: float = 0.0,
        X_pending: Tensor | None = None,
    ) -> Tensor | None:
        r"""A candidate near the best observation from a model of its neighbourhood,
        with this object's `settings`: the
        [`neighbourhood()`][treebo.add_tree.local_refinement.neighbourhood], its
        [`LocalBox`][treebo.add_tree.local_refinement.LocalBox], the
        [`fit_local_model()`][treebo.add_tree.local_refinement.fit_local_model] and
        the maximizer of its
        [`local_acquisition()`][treebo.add_tree.local_refinement.local_acquisition].

        Args:
            space: The search space.
            X: ``n x d`` encoded observations.
            y: ``n x 1`` targets (larger is better).
            acquisition: ``"ucb"`` or ``"log_ei"``.
            seed: Seed of the acquisition's start selection.
            prior_mean: The global model's posterior mean, or ``None``
                ([`fit_local_model()`][treebo.add_tree.local_refinement.fit_local_model]).
            prior_resolution: The spread below which ``prior_mean`` is not used.
            X_pending: ``p x d`` configurations being evaluated.

        Returns:
            A ``1 x d`` candidate on the incumbent's path within ``radius`` of it, or
            ``None`` when the path has no active real column, fewer than ``|A| + 2``
            distinct observations, no spread around the incumbent, or the local
            model cannot be fitted.
        """
        settings = self.settings
        validate_local_acquisition(acquisition, settings.beta)
        near = neighbourhood(space, X, y, settings.num_neighbors)
        box = None if near is None else LocalBox.around(space, X, near, settings.radius)
        if box is None:
            return None
        model = fit_local_model(
            box, X, y, settings.noise_floor, prior_mean, prior_resolution, X_pending
        )
        if model is None:
            return None
        acqf = local_acquisition(model, acquisition, settings.beta, y[box.rows].max())
        return optimize_in_box(
            box, acqf, settings.num_restarts, settings.raw_samples, seed=seed
        )
