"""Spaces written as data: every key reaches the space, bad keys are named."""

from __future__ import annotations

import json

import pytest

from treebo.space import ConfigurationError, Integer, Real
from treebo.space.spec import load_space, space_from_dict


def test_a_spec_builds_the_tree_it_describes(tmp_path):
    spec = {
        "params": [{"name": "lr", "type": "real", "low": 1e-4, "high": 1, "log": True}],
        "choices": {
            "model": {
                "svm": {"params": [{"name": "k", "type": "categorical",
                                    "values": ["rbf", "poly"], "ordered": True}]},
                "tree": {"params": [{"name": "depth", "type": "integer",
                                     "low": 1, "high": 9}]},
                "none": None,
            }
        },
    }  # fmt: skip
    space = space_from_dict(spec)
    assert space.parameter_names == ["lr", "model", "k", "depth"]
    assert space.num_paths == 3
    assert space.columns["k"].param.values == ("rbf", "poly")
    assert space.columns["lr"].param == Real("lr", 1e-4, 1, log_scale=True)
    assert space.columns["depth"].param == Integer("depth", 1, 9)
    path = tmp_path / "s.json"
    path.write_text(json.dumps(spec))
    assert load_space(str(path)).parameter_names == space.parameter_names
    assert load_space("treebo.test_functions:Jenatton").num_paths == 4


@pytest.mark.parametrize(
    "spec, message",
    [
        ({"params": [{"name": "a", "type": "int", "low": 0, "high": 1}]}, "'a'.*type"),
        ({"params": [{"name": "a", "type": "real", "low": 0}]}, "'a'.*missing 'high'"),
        ({"params": [{"name": "a", "type": "real", "low": 0, "high": 1, "lg": 1}]},
         "'a'.*unknown keys"),
        ({"choices": {"m": []}}, "choice 'm'"),
        ({"parms": []}, "root"),
    ],
)  # fmt: skip
def test_malformed_specs_name_the_culprit(spec, message):
    with pytest.raises(ConfigurationError, match=message):
        space_from_dict(spec)
