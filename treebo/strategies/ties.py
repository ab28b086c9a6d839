r"""Insurance against plateaus: after a tie with the best score, explore.

Real tuning surfaces are tied: an accuracy on $m$ validation examples takes $m + 1$
values, and whole regions of a space (a tree ensemble's surrogate, a flag that switches
a learner off) share one score. On such a plateau expected improvement exploits: a
configuration next to the tied incumbent has a posterior mean at the incumbent's score,
so its expected improvement, about $0.4\,\sigma$, beats that of any region the model
believes worse, and every proposal returns the same score again (on an HPO-B pool, 50
ties in a row while random search finds the optimum).

A tie is the evaluation that says so: it returned exactly the best value already seen,
an improvement of zero where the model expected one. The rule here has no threshold to
tune: **the proposal after an evaluation that tied the best score maximizes the
posterior standard deviation** $\sigma(x)$ (BoTorch's ``PosteriorStandardDeviation``)
instead of the improvement: it goes where the model knows least, and the proposal after
it returns to expected improvement. Objectives whose values never tie exactly (smooth,
continuous or noisy ones) never trigger it, so nothing changes there.

Example:
    >>> import torch
    >>> y = torch.tensor([[0.1], [0.9], [0.3], [0.9]], dtype=torch.float64)
    >>> ties_the_best(y, torch.zeros(4, dtype=torch.bool))
    True
"""

from __future__ import annotations

from torch import Tensor


def ties_the_best(y: Tensor, failed: Tensor) -> bool:
    """Whether the last trial's score equals, exactly, the best score of the earlier
    successful trials.

    Args:
        y: ``n x 1`` scores to maximize, in the order told.
        failed: ``n`` booleans, true for failed trials.
    """
    if y.shape[0] < 2 or bool(failed[-1]):
        return False
    scores = y.squeeze(-1)
    earlier = scores[:-1][~failed[:-1]]
    return bool(earlier.numel()) and bool(scores[-1] == earlier.max())
