"""History: the trials and their tensor encoding, kept in step."""

from __future__ import annotations

import math

import torch

from treebo.loop import History, Trial
from treebo.test_functions import jenatton_space


def test_appends_keep_the_encoding_of_every_trial():
    space = jenatton_space()
    configs = space.to_dicts(space.sample(20, seed=0))
    history = History(space)
    values = [float(i % 7) if i % 5 else None for i in range(20)]
    history.extend([Trial(i, configs[i], values[i]) for i in range(3)])
    for i in range(3, 20):  # past the initial capacity of 8: the buffer grows
        history.append(Trial(i, configs[i], values[i]))
    assert len(history) == 20 and history[4].params == configs[4]
    assert torch.equal(history.X, space.to_tensor(configs))
    expected = torch.tensor([math.nan if v is None else v for v in values])
    assert torch.equal(history.values.isnan(), expected.isnan())
    ok = ~expected.isnan()
    assert torch.equal(history.values[ok], expected.double()[ok])


def test_best_is_the_first_of_equal_values_and_skips_failures():
    space = jenatton_space()
    configs = space.to_dicts(space.sample(4, seed=1))
    history = History(space)
    assert history.best(maximize=False) is None
    for i, v in enumerate([2.0, None, 1.0, 1.0]):
        history.append(Trial(i, configs[i], v))
    assert history.best(maximize=False).index == 2
    assert history.best(maximize=True).index == 0
    assert history == history.as_list() and history.kinds == ("bo",) * 4
