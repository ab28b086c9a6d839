"""Local refinement of the incumbent as a part of a strategy.

[`LocalSteps`][treebo.add_tree.local_steps.LocalSteps] decides when a local step
replaces the global proposal and computes it with
[`local_refinement_candidate()`][treebo.add_tree.local_refinement.local_refinement_candidate],
whose module explains the local model. Steps cycle through
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

from collections.abc import Sequence
from typing import ClassVar, NamedTuple

import torch
from torch import Tensor

from treebo.add_tree.local_refinement import (
    linf_distance,
    local_refinement_candidate,
    validate_local_acquisition,
)
from treebo.add_tree.model import AddTreeGP
from treebo.add_tree.options import LocalStepOptions
from treebo.space import TreeSpace
from treebo.strategies.base import Observations, is_observed

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


class LocalSteps:
    r"""When and where to refine the incumbent locally.

    The step's settings are class attributes; a subclass changes them (and
    a strategy whose ``make_local_steps`` returns it uses them).

    Args:
        options: The [`LocalStepOptions`][treebo.add_tree.options.LocalStepOptions].

    Attributes:
        radius: ``bounds``-normalized $\ell_\infty$ radius that triggers a local step,
            and the largest half-width of its box.
        noise_floor: Lower bound on the local model's noise variance
            (standardized over the neighbourhood).
        acquisitions: Acquisitions of successive local steps, cycled: ``"ucb"``
            ($\mu + \sqrt{\beta}\sigma$, a step to the local model's optimum) and
            ``"log_ei"`` (which explores the box).
        beta: The local UCB weight $\beta$.

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

    radius: ClassVar[float] = 0.05
    noise_floor: ClassVar[float] = 1e-8
    acquisitions: ClassVar[tuple[str, ...]] = ("ucb", "log_ei")
    beta: ClassVar[float] = 0.1

    def __init__(self, options: LocalStepOptions) -> None:
        for name in self.acquisitions:
            validate_local_acquisition(name, self.beta, ("acquisitions", "beta"))
        self.options = options

    def is_due(self, failures: Failures) -> bool:
        """Whether ``options.patience`` failed global proposals ask for a step."""
        patience = self.options.patience
        return patience > 0 and failures.global_ >= patience

    def is_near(self, space: TreeSpace, candidate: Tensor, incumbent: Tensor) -> bool:
        """Whether ``candidate`` lies on the incumbent's path within ``radius``."""
        return linf_distance(space, candidate, incumbent) <= self.radius

    def next_acquisition(self, kinds: tuple[str, ...]) -> str:
        """The acquisition of the next step (cycled over the local steps so far)."""
        done = sum(kind == "local" for kind in kinds)
        return self.acquisitions[done % len(self.acquisitions)]

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
                ([`local_refinement_candidate()`][treebo.add_tree.local_refinement.local_refinement_candidate]).
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
        candidate = local_refinement_candidate(
            observations.space,
            X,
            y,
            radius=self.radius,
            noise_floor=self.noise_floor,
            acquisition=self.next_acquisition(observations.kinds),
            beta=self.beta,
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
