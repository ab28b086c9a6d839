"""History: the trials and their tensor encoding, kept in step."""

from __future__ import annotations

import math

import pytest
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


def test_trials_dataframe_has_a_row_per_trial_and_a_column_per_parameter():
    pd = pytest.importorskip("pandas")
    from treebo import minimize
    from treebo.test_functions import Jenatton

    problem = Jenatton()
    result = minimize(problem.objective, problem.space, budget=6, seed=0)
    frame = result.trials_dataframe()
    assert isinstance(frame, pd.DataFrame) and len(frame) == 6
    assert list(frame["number"]) == list(range(6))
    assert list(frame["value"]) == [t.value for t in result.history]
    assert {f"params_{n}" for n in problem.space.parameter_names} <= set(frame.columns)
    for row, trial in zip(frame.itertuples(), result.history, strict=True):
        assert trial.params["x1"] == row.params_x1
        assert pd.isna(row.params_x2) == ("x2" not in trial.params)
