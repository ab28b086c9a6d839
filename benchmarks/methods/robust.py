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

import dataclasses

import torch
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
