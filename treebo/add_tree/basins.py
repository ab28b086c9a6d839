"""How long the search has failed to improve the incumbent, by kind of proposal.

Strategies use these counts to schedule local steps (after some failed global
proposals) and to decide that the incumbent's basin is resolved (after some
failed local steps in a row), so that proposals may move elsewhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from torch import Tensor

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
    """The [`Failures`][treebo.add_tree.basins.Failures] of a history.

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
