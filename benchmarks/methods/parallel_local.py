"""Local steps with evaluations in flight: how the pending ones enter the step.

With ``k`` workers, up to ``k - 1`` configurations are pending when a local step
is computed. The package's step (``"default"``) fits its local model to the
finished evaluations and believes the pending ones at that model's own
prediction. The variants, for the ablation of
``python -m benchmarks.perf.parallel_workers --model NAME``:

``local_blind``             the local model ignores the pending points (a
                            step onto one is still dropped).
``local_global_believer``   the pending points join the local data at the
                            global model's prediction (the loop's step before
                            it knew of pending points).
``local_follows_pending``   a pending local step in the incumbent's box makes
                            the next proposal a local step too.

Example:
    >>> sorted(PARALLEL_VARIANTS)
    ['default', 'local_blind', 'local_follows_pending', 'local_global_believer']
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from treebo.add_tree import AddTreeStrategy, LocalStepOptions
from treebo.add_tree.local_steps import LOCAL_REPEAT_TOL, LocalSteps
from treebo.add_tree.model import AddTreeGP
from treebo.strategies.base import Observations, Proposal, is_observed


class BlindLocalSteps(LocalSteps):
    """Local steps whose model ignores the pending points."""

    def candidate(
        self,
        observations: Observations,
        X: Tensor,
        y: Tensor,
        model: AddTreeGP | None,
        X_pending: Tensor | None = None,
    ) -> Tensor | None:
        step = super().candidate(observations, X, y, model)
        if step is None or X_pending is None or not X_pending.shape[0]:
            return step
        if is_observed(observations.space, step[0], X_pending.to(X), LOCAL_REPEAT_TOL):
            return None
        return step


class GlobalBelieverLocalSteps(LocalSteps):
    """Local steps that see the pending points at the global model's mean."""

    def candidate(
        self,
        observations: Observations,
        X: Tensor,
        y: Tensor,
        model: AddTreeGP | None,
        X_pending: Tensor | None = None,
    ) -> Tensor | None:
        if X_pending is not None and X_pending.shape[0] and model is not None:
            with torch.no_grad():
                believed = model.posterior(X_pending.to(X)).mean.reshape(-1, 1)
            X = torch.cat([X, X_pending.to(X)])
            y = torch.cat([y, believed.to(y)])
        return super().candidate(observations, X, y, model)


def _with_local_steps(steps: type[LocalSteps]) -> Callable[[], AddTreeStrategy]:
    def variant() -> AddTreeStrategy:
        return AddTreeStrategy(local_steps=steps(LocalStepOptions()))

    return variant


class LocalFollowsPending(AddTreeStrategy):
    """A pending local step in the incumbent's box makes the next proposal a local
    step too (where the model resolves locally); else the package's proposal."""

    def propose(self, observations: Observations) -> Proposal:
        obs, local = observations, self.local
        if local is not None and obs.X_pending.shape[0]:
            incumbent = obs.incumbent
            pending = obs.X_pending.to(obs.X)
            if any(local.is_near(obs.space, x, incumbent) for x in pending):
                model = self.fit(obs)
                if self.resolves_locally(model, obs.noise):
                    step = local.candidate(obs, obs.X, obs.y, model, pending)
                    if step is not None:
                        return Proposal(step[0], "local")
        return super().propose(observations)


#: Strategy factories by variant name (``"default"``: the package's loop).
PARALLEL_VARIANTS: dict[str, Callable[[], AddTreeStrategy] | None] = {
    "default": None,
    "local_blind": _with_local_steps(BlindLocalSteps),
    "local_global_believer": _with_local_steps(GlobalBelieverLocalSteps),
    "local_follows_pending": LocalFollowsPending,
}
