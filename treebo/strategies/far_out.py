r"""Far-out scores: Tukey's outer fence on the bad side of the scores.

The loop raises scores far below the others to the fence before any model sees them
([`raise_far_out()`][treebo.loop.outcomes.raise_far_out]): the model learns that the
configuration is bad without the spread of the good scores collapsing. The Add-Tree
strategies find the raised rows again and let the evidence decide whether they are
outliers ([`screen_far_out()`][treebo.add_tree.outliers.screen_far_out]).

Example:
    >>> import torch
    >>> y = torch.tensor([[0.3], [0.1], [-0.2], [0.4], [0.0], [-9.0]])
    >>> far_out_rows(y, torch.zeros(6, dtype=torch.bool)).tolist()
    [False, False, False, False, False, True]
"""

from __future__ import annotations

import torch
from torch import Tensor

#: Scores more than this many interquartile ranges below the first quartile
#: (Tukey's "far out" fence) are far out.
FAR_OUT = 3.0


def lower_fence(scores: Tensor) -> tuple[Tensor, Tensor] | None:
    r"""Tukey's outer fence on the bad side of ``n`` finite scores to maximize,
    $L = q_1 - 3 (q_3 - q_1)$, and the spread $q_3 - q_1$; ``None`` with fewer than 4
    scores or $q_1 = q_3$ (half the scores tied).

    Example:
        >>> lower_fence(torch.tensor([1.0, 2.0, 3.0, 4.0, -1e300]))
        (tensor(-5.), tensor(2.))
    """
    if scores.numel() < 4:
        return None
    q1, q3 = torch.quantile(scores, scores.new_tensor([0.25, 0.75])).unbind()
    spread = q3 - q1
    if not bool(spread.isfinite() & (spread > 0)):
        return None
    return q1 - FAR_OUT * spread, spread


def far_out_rows(y: Tensor, failed: Tensor) -> Tensor:
    r"""``n`` booleans: the successful scores at or below Tukey's outer fence
    ([`lower_fence()`][treebo.strategies.far_out.lower_fence]) of the successful
    scores.

    The loop has raised far-out scores to the fence already; raising keeps the
    quartiles, so the fence is found again (to round-off). With fewer than 4 successes
    or $q_1 = q_3$ nothing is far out.

    Args:
        y: ``n x 1`` scores to maximize.
        failed: ``n`` booleans, true for failed trials.
    """
    z, ok = y.squeeze(-1), ~failed
    fence = lower_fence(z[ok])
    if fence is None:
        return torch.zeros_like(ok)
    return ok & (z <= fence[0] + 1e-9 * fence[1])
