"""Far-out scores observed at the fence: the default before issue 55's screen.

The loop raises scores below Tukey's far-out fence to the fence
(:func:`treebo.loop.outcomes.raise_far_out`). The default Add-Tree strategy then
leaves them out of its model where the evidence calls them outliers
(:func:`treebo.add_tree.outliers.screen_far_out`); ``treebo_fence`` keeps every one
of them as an observation, as the default did before, for paired comparisons.

Two other rules were measured and not adopted (docs/design.md; their code is in git
history): every far-out score left out (``treebo_leave_out``), and left out with its
configuration pending (``treebo_far_out_pending``, branch ``leave-out``). The screen's
own runs before it became the default are ``treebo_far_out_by_evidence`` in the
records (commit 3d2ece1).

Example:
    >>> fence_observed().screen is None
    True
"""

from __future__ import annotations

from treebo.add_tree import AddTreeStrategy

from .treebo import PRESETS, register_preset


def fence_observed() -> AddTreeStrategy:
    """The default Add-Tree loop with every far-out score kept in the model."""
    return AddTreeStrategy(screen=None)


if "treebo_fence" not in PRESETS:
    register_preset("treebo_fence", fence_observed)
