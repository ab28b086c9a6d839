"""Failure counts and resolved basins."""

from __future__ import annotations

import math

import torch

from treebo.add_tree.basins import Failures, basin_resolved, count_failures


def test_failure_counts_follow_the_kinds_of_proposals():
    # Scores to maximize; a failure (-inf) never improves.
    rows = [
        (-1.0, "initial", 0, 0, 0),
        (-2.0, "initial", 0, 0, 0),
        (-3.0, "bo", 1, 0, 0),
        (-0.5, "bo", 0, 0, 0),  # improvement
        (-math.inf, "bo", 1, 0, 0),
        (-0.7, "away", 2, 0, 0),
        (-0.9, "local", 0, 1, 1),  # a local step restarts the global count
        (-0.8, "bo", 1, 1, 1),
        (-0.6, "user", 1, 1, 1),  # neither global nor local nor an improvement
        (-0.6, "local", 0, 2, 2),
        (-0.4, "local", 0, 2, 0),  # a local improvement keeps the basin's count
        (-0.45, "local", 0, 3, 1),
        (-0.3, "bo", 0, 0, 0),  # a global improvement opens a new basin
    ]
    for n in range(1, len(rows) + 1):
        scores = torch.tensor([r[0] for r in rows[:n]])
        kinds = [r[1] for r in rows[:n]]
        assert count_failures(scores, kinds) == Failures(*rows[n - 1][2:])


def test_a_basin_is_resolved_after_patience_failed_local_steps_in_a_row():
    assert not basin_resolved(Failures(0, 5, 2), patience=3)
    assert basin_resolved(Failures(0, 5, 3), patience=3)
    assert not basin_resolved(Failures(0, 9, 9), patience=None)
