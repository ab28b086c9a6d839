"""Far-out scores left out of the model (experiments for issue 55, not adopted).

The loop raises scores below Tukey's far-out fence to the fence
(:func:`treebo.loop.outcomes.raise_far_out`), so a diverged evaluation still
enters the model as the worst score by far. Where it diverged at a good
configuration, the model learns that the configuration's shared parameters are
bad: on P1(a) seed 4 the best of the first nine points diverges, and the loop
never returns to its shared parameter's good values (regret 0.15 at 50 against
3e-15 clean). A redescending robust fit (Tukey's biweight gives zero weight
beyond its cut-off) would leave such a score out instead; this strategy does
so: the rows at the fence are removed from what the Add-Tree strategy sees and
the rest re-standardized. Failed evaluations keep the worst score. A pool's
evaluated rows stay excluded from the candidates by the loop.

``treebo_leave_out`` only removes them; ``treebo_far_out_pending`` also makes
their configurations pending (believed at the posterior mean, so not proposed
again, as Ax treats arms without usable data). The latter was measured as a
loop-level change (git branch ``leave-out``); docs/design.md has the figures.

Example:
    >>> strategy = LeaveOutFarOut()
    >>> strategy.name
    'add_tree_leave_out_far_out'
"""

from __future__ import annotations

import copy
import dataclasses
import math

import torch
from botorch.models import SingleTaskGP
from gpytorch.mlls import ExactMarginalLogLikelihood
from torch import Tensor

from treebo.add_tree import AddTreeStrategy
from treebo.loop.outcomes import FAR_OUT
from treebo.strategies.base import Observations, Proposal

from .treebo import PRESETS, register_preset


def at_the_fence(y: Tensor, failed: Tensor) -> Tensor:
    """``n`` booleans: successful rows of ``y`` (``n x 1``) raised to the fence.

    Raising keeps the order and moves only rows below the first quartile, so the
    quartiles of the raised scores are those of the raw ones and the fence is
    found again (to round-off) on the standardized scale.
    """
    z = y.squeeze(-1)
    ok = ~failed
    if int(ok.sum()) < 4:
        return torch.zeros_like(ok)
    q1, q3 = torch.quantile(z[ok], z.new_tensor([0.25, 0.75])).unbind()
    spread = q3 - q1
    if not bool(spread > 0):
        return torch.zeros_like(ok)
    fence = q1 - FAR_OUT * spread
    return ok & (z <= fence + 1e-9 * spread)


def leave_out_far_out(
    observations: Observations, pending: bool = False
) -> Observations:
    """The observations without the rows at the fence, re-standardized (and, with
    ``pending``, those rows' configurations appended to the pending ones)."""
    drop = at_the_fence(observations.y, observations.failed)
    if not bool(drop.any()):
        return observations
    keep = ~drop
    y, failed = observations.y[keep], observations.failed[keep]
    good = y[~failed]
    z = (y - good.mean()) / good.std().clamp_min(1e-12)
    z = torch.where(failed.unsqueeze(-1), z[~failed].min(), z)
    return dataclasses.replace(
        observations,
        X=observations.X[keep],
        y=z,
        failed=failed,
        kinds=tuple(
            k for k, b in zip(observations.kinds, keep.tolist(), strict=True) if b
        ),
        yvar=None if observations.yvar is None else observations.yvar[keep],
        X_pending=torch.cat([observations.X_pending, observations.X[drop]])
        if pending
        else observations.X_pending,
    )


class LeaveOutFarOut(AddTreeStrategy):
    """The default Add-Tree loop, fitted without the scores at the fence."""

    name = "add_tree_leave_out_far_out"

    def propose(self, observations: Observations) -> Proposal:
        return super().propose(leave_out_far_out(observations))

    def propose_from(self, observations: Observations, candidates: Tensor) -> Proposal:
        return super().propose_from(leave_out_far_out(observations), candidates)


class FarOutPending(AddTreeStrategy):
    """The default Add-Tree loop; far-out rows are pending, not observed."""

    name = "add_tree_far_out_pending"

    def propose(self, observations: Observations) -> Proposal:
        return super().propose(leave_out_far_out(observations, pending=True))

    def propose_from(self, observations: Observations, candidates: Tensor) -> Proposal:
        return super().propose_from(
            leave_out_far_out(observations, pending=True), candidates
        )


if "treebo_leave_out" not in PRESETS:
    register_preset("treebo_leave_out", LeaveOutFarOut)
    register_preset("treebo_far_out_pending", FarOutPending)


def log_evidence(model: SingleTaskGP) -> Tensor:
    """The log marginal likelihood (with the hyper-parameters' log prior) of a
    fitted model's training targets, on the scale of the targets it was given
    (its ``Standardize`` undone by the change of variables)."""
    n = model.train_targets.shape[-1]
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    mll.train()
    with torch.no_grad():
        inputs = model.train_inputs[0]
        value = mll(model(inputs), model.train_targets, inputs) * n
    transform = getattr(model, "outcome_transform", None)
    if transform is not None:
        value = value - n * transform.stdvs.log().sum()
    model.eval()
    return value


def outliers_explain(
    all_rows: SingleTaskGP,
    inliers: SingleTaskGP,
    far_y: Tensor,
    far_X: Tensor,
    scale: tuple[float, float],
) -> bool:
    """Whether the far-out rows are better explained as outliers (Ament et al.,
    2024): each far-out score gets a noise variance of its own, at its maximum
    likelihood value given the inliers' model, and the support's exponential
    prior (mean a fifth of the rows) is paid; against one model of every row.

    Args:
        all_rows: The model fitted to every row (far-out ones at the fence).
        inliers: The model fitted to the other rows, on their own scale.
        far_y: ``k`` far-out scores on ``all_rows``'s scale.
        far_X: ``k x d`` their configurations.
        scale: ``(a, b)``: an inlier score ``y`` is ``(y - a) / b`` for ``inliers``.
    """
    a, b = scale
    n = all_rows.train_targets.shape[-1]
    k = far_y.shape[0]
    with torch.no_grad():
        post = inliers.posterior(far_X, observation_noise=True)
        mean = a + b * post.mean.squeeze(-1)
        var = (b**2) * post.variance.squeeze(-1)
    residual2 = (far_y - mean) ** 2
    spread = torch.maximum(var, residual2)
    outlying = -0.5 * ((2 * math.pi * spread).log() + residual2 / spread)
    n_in = inliers.train_targets.shape[-1]
    robust = log_evidence(inliers) - n_in * math.log(b) + outlying.sum()
    mean_support = 0.2 * n
    robust = robust - k / mean_support
    return bool(robust > log_evidence(all_rows))


class FarOutByEvidence(AddTreeStrategy):
    """The default Add-Tree loop; far-out rows are pending where the evidence
    says they are outliers (:func:`outliers_explain`), observed otherwise."""

    name = "add_tree_far_out_by_evidence"

    def robust(self, observations: Observations) -> Observations:
        far = at_the_fence(observations.y, observations.failed)
        if not bool(far.any()):
            return observations
        reduced = leave_out_far_out(observations)
        good = observations.y[~far & ~observations.failed]
        scale = (float(good.mean()), float(good.std().clamp_min(1e-12)))
        other = copy.deepcopy(self)
        try:
            all_rows = self.fit(observations)
            inliers = other.fit(reduced)
            outlying = outliers_explain(
                all_rows,
                inliers,
                observations.y[far].squeeze(-1),
                observations.X[far],
                scale,
            )
        except (RuntimeError, ValueError):
            return observations
        self.outlier_decisions.append(outlying)
        if not outlying:
            return observations
        self.fitter, self.alternative_fitters = other.fitter, other.alternative_fitters
        return leave_out_far_out(observations, pending=True)

    @property
    def outlier_decisions(self) -> list[bool]:
        if "_decisions" not in self.__dict__:
            self.__dict__["_decisions"] = []
        return self.__dict__["_decisions"]

    def propose(self, observations: Observations) -> Proposal:
        return super().propose(self.robust(observations))

    def propose_from(self, observations: Observations, candidates: Tensor) -> Proposal:
        return super().propose_from(self.robust(observations), candidates)


if "treebo_far_out_by_evidence" not in PRESETS:
    register_preset("treebo_far_out_by_evidence", FarOutByEvidence)
