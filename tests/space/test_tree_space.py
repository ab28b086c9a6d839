"""TreeSpace: building, BoTorch round trip, dict <-> tensor, sampling, errors."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from treebo import (
    Categorical,
    Choice,
    ConfigurationError,
    Integer,
    Real,
    TreeSpace,
    Vertex,
)
from treebo.test_functions import generalized_jenatton_space, jenatton_space


def mixed_space() -> TreeSpace:
    """A space with string labels, log scale, an empty branch and two choices."""
    return TreeSpace(
        Vertex(
            [Real("lr", 1e-4, 1e-1, log_scale=True)],
            [
                Choice(
                    "model",
                    {
                        "svm": Vertex(
                            [Real("C", 1e-2, 1e2, log_scale=True)],
                            [
                                Choice(
                                    "kernel",
                                    {
                                        "rbf": Vertex([Real("gamma", 0, 1)]),
                                        "linear": Vertex(),
                                    },
                                )
                            ],
                        ),
                        "tree": Vertex([Real("depth", 1, 10)]),
                    },
                ),
                Choice("scaler", ["none", "standard"]),
            ],
        )
    )


def test_bfs_layout_and_hierarchical_dependencies_of_jenatton():
    space = jenatton_space()
    assert space.parameter_names == [
        "x1",
        "r8",
        "x2",
        "r9",
        "x3",
        "x4",
        "x5",
        "x6",
        "x7",
    ]
    assert space.to_hierarchical_dependencies() == {
        0: {0: [1, 2], 1: [3, 4]},
        2: {0: [5], 1: [6]},
        4: {0: [7], 1: [8]},
    }
    assert space.num_paths == 4
    assert space.paths() == [
        {"x1": 0, "x2": 0},
        {"x1": 0, "x2": 1},
        {"x1": 1, "x3": 0},
        {"x1": 1, "x3": 1},
    ]
    assert space.path_parameters()[0] == ["x1", "r8", "x2", "x4"]


def test_encoding_of_one_configuration():
    space = mixed_space()
    x = space.to_tensor(
        {
            "lr": 1e-2,
            "model": "svm",
            "C": 10.0,
            "kernel": "linear",
            "scaler": "standard",
        }
    )
    col = {n: space.columns[n].column for n in space.parameter_names}
    assert x[col["lr"]] == pytest.approx(-2.0)
    assert x[col["C"]] == pytest.approx(1.0)
    assert x[col["model"]] == 0 and x[col["kernel"]] == 1 and x[col["scaler"]] == 1
    # Inactive columns hold the canonical value (lower bound).
    assert x[col["depth"]] == 1.0 and x[col["gamma"]] == 0.0


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), which=st.sampled_from(["mixed", "jen", "gen"]))
def test_dict_tensor_dict_round_trip(seed, which):
    space = {
        "mixed": mixed_space(),
        "jen": jenatton_space("ax"),
        "gen": generalized_jenatton_space(4, balanced=False),
    }[which]
    X = space.sample(8, seed=seed)
    configs = space.to_dicts(X)
    torch.testing.assert_close(space.to_tensor(configs), X)
    again = space.to_dicts(space.to_tensor(configs))
    for a, b in zip(configs, again, strict=False):
        assert a.keys() == b.keys()
        for k in a:
            assert a[k] == b[k] or math.isclose(a[k], b[k], rel_tol=1e-12)


def test_sampling_is_uniform_per_choice_and_per_path():
    space = generalized_jenatton_space(4, balanced=False)  # 4 leaves, depths 2..4
    tree = space.tree
    n = 8000
    for by, expected in (("path", [0.25] * 4), ("choice", None)):
        X = space.sample(n, seed=0, by=by)
        active = tree.vertex_activity(X).double()
        freq = (
            (active @ tree.path_vertex_mask.double().T == tree.path_vertex_mask.sum(-1))
            .double()
            .mean(0)
        )
        if expected is None:  # per choice: 1/2, 1/4, 1/8, 1/8
            expected = sorted([0.5, 0.25, 0.125, 0.125], reverse=True)
            freq = freq.sort(descending=True).values
        expected = torch.tensor(expected, dtype=torch.float64)
        torch.testing.assert_close(freq, expected, atol=0.02, rtol=0)
    # Every sample is a valid configuration.
    for config in space.to_dicts(space.sample(50, seed=1)):
        space.validate(config)


def test_canonicalize_snaps_and_resets_inactive():
    space = jenatton_space()
    x = torch.tensor([[0.3, 0.5, 0.9, 0.7, 0.2, 0.1, 0.4, 0.5, 0.6]])
    y = space.canonicalize(x)
    torch.testing.assert_close(
        y, torch.tensor([[0.0, 0.5, 1.0, 0.0, 0.0, -1.0, 0.4, -1.0, -1.0]])
    )


@pytest.mark.parametrize(
    "config, match",
    [
        (
            {"x1": 0, "x2": 0, "r8": 0.5, "x4": 0.0, "bogus": 1},
            "unknown parameter 'bogus'",
        ),
        ({"x1": 0, "x2": 0, "x4": 0.0}, "missing value for active parameter 'r8'"),
        ({"x1": 0, "r8": 0.5, "x4": 0.0}, "missing value for active choice 'x2'"),
        ({"x1": 0, "x2": 0, "r8": 1.5, "x4": 0.0}, "'r8' = 1.5 is outside"),
        ({"x1": 0, "x2": 0, "r8": 0.5, "x4": 0.0, "x5": 0.1}, "'x5' is inactive"),
        ({"x1": 2, "x2": 0, "r8": 0.5, "x4": 0.0}, "invalid value 2 for choice 'x1'"),
        (
            {"x1": 0, "x2": 0, "r8": "a", "x4": 0.0},
            "'r8' must be a real number",
        ),
        ({"x1": 0, "x2": 0, "r8": float("nan"), "x4": 0.0}, "'r8' is not finite"),
        ([("x1", 0)], "must be a dict"),
    ],
)
def test_bad_configurations_raise_named_errors(config, match):
    with pytest.raises(ConfigurationError, match=match):
        jenatton_space().validate(config)


def test_bad_space_definitions_raise():
    with pytest.raises(ValueError, match="lower < upper"):
        Real("a", 1.0, 0.0)
    with pytest.raises(ValueError, match="log_scale needs lower > 0"):
        Real("a", 0.0, 1.0, log_scale=True)
    with pytest.raises(ValueError, match="at least one option"):
        Choice("c", {})
    with pytest.raises(ConfigurationError, match="'a' is under two different"):
        TreeSpace(
            Vertex([Real("a", 0, 1)], [Choice("c", {0: Vertex([Real("a", 0, 1)])})])
        )
    with pytest.raises(ConfigurationError, match="'a' names two different"):
        TreeSpace(
            Vertex(
                choices=[
                    Choice(
                        "c",
                        {0: Vertex([Real("a", 0, 1)]), 1: Vertex([Real("a", 0, 2)])},
                    )
                ]
            )
        )
    with pytest.raises(ValueError, match="bounds must be 2 x d"):
        TreeSpace.from_hierarchical_dependencies({}, torch.zeros(3))
    with pytest.raises(ValueError, match="names has 1 entries"):
        TreeSpace.from_hierarchical_dependencies({}, torch.zeros(2, 2), names=["a"])
    with pytest.raises(ValueError, match="by must be"):
        jenatton_space().sample(3, by="leaf")
    for n in (-1, "3", 2.0):
        with pytest.raises(ValueError, match="n must be an integer >= 0"):
            jenatton_space().sample(n)


@pytest.mark.parametrize(
    "build, error, match",
    [
        (lambda: Real("x", "0", 1), TypeError, "'x': lower must be a number"),
        (lambda: Real("x", 0, True), TypeError, "'x': upper must be a number"),
        (lambda: Real("x", 0, 1, log_scale="yes"), TypeError, "'x': log_scale"),
        (lambda: Choice("c", "ab"), TypeError, "'c'.*the string 'ab'"),
        (lambda: Choice("c", [0, False]), ValueError, r"'c': labels \[0, False\]"),
        (lambda: Choice("c", [1, 1.0, 2]), ValueError, r"'c': labels \[1, 1.0\]"),
        (lambda: Choice("c", [[1], [2]]), TypeError, "'c': label \\[1\\] is not hash"),
        (lambda: Choice("c", [float("nan")]), ValueError, "'c': NaN"),
        (lambda: Choice("c", 3), TypeError, "'c': options must be"),
        (lambda: TreeSpace(Vertex()), ConfigurationError, "no parameters"),
        (lambda: Vertex(Real("x", 0, 1)), TypeError, "params must be a list of Real"),
        (lambda: Vertex(choices="ab"), TypeError, "choices must be a list of Choice"),
        (
            lambda: TreeSpace.from_hierarchical_dependencies(
                {0: {0: [1], 1: [2]}}, torch.ones(2, 3), log_scale=[0]
            ),
            ValueError,
            "column 0 \\('x0'\\) is a choice",
        ),
        (
            lambda: TreeSpace.from_hierarchical_dependencies(
                {}, torch.ones(2, 2), log_scale=[5]
            ),
            ValueError,
            "log_scale: 5 is not a column",
        ),
    ],
)
def test_bad_parameters_are_refused_naming_them(build, error, match):
    with pytest.raises(error, match=match):
        build()


def test_real_bounds_are_stored_as_floats_and_values_in_the_spaces_terms():
    import numpy as np

    assert Real("x", 0, 1) == Real("x", 0.0, 1.0)
    assert type(Real("x", np.int64(0), 1).lower) is float
    space = jenatton_space()
    told = {
        "x1": np.int64(0),
        "x2": 1.0,
        "r8": np.float32(0.5),
        "x5": torch.tensor(0.1),
    }
    canonical = space.validate(told)
    assert canonical == {"x1": 0, "x2": 1, "r8": 0.5, "x5": float(torch.tensor(0.1))}
    assert [type(canonical[k]) for k in ("x1", "x2", "r8")] == [int, int, float]


def test_to_dicts_refuses_nan_in_active_columns_only():
    space = jenatton_space()
    X = space.sample(4, seed=0)
    active = space.column_activity(X)
    X[~active] = float("nan")  # inactive columns do not matter
    assert space.to_dicts(X) == space.to_dicts(space.canonicalize(X.nan_to_num()))
    X[2, space.columns["x1"].column] = float("nan")  # the root choice
    with pytest.raises(ValueError, match="row 2 has NaN for the active parameter 'x1'"):
        space.to_dicts(X)


def tuning_space() -> TreeSpace:
    """Integers (one on a log scale), plain and ordered categoricals, a flag
    choice that owns nothing, and a parameter shared by two options."""
    gamma = Real("gamma", 1e-4, 1.0, log_scale=True)
    return TreeSpace(
        Vertex(
            [
                Integer("n_estimators", 10, 500, log_scale=True),
                Categorical("scaler", ["none", "standard", "minmax"]),
                Categorical("size", ["s", "m", "l"], ordered=True),
            ],
            [
                Choice(
                    "kernel",
                    {
                        "rbf": Vertex([gamma]),
                        "poly": Vertex([gamma, Integer("degree", 2, 5)]),
                        "linear": Vertex(),
                    },
                ),
                Choice("bootstrap", [True, False]),
            ],
        )
    )


def test_roles_and_layout_of_a_tuning_space():
    space = tuning_space()
    role = {n: space.columns[n].role for n in space.parameter_names}
    assert role == {
        "n_estimators": "integer",
        "scaler": "categorical",
        "size": "integer",
        "kernel": "choice",
        "bootstrap": "categorical",
        "gamma": "real",
        "degree": "integer",
    }
    col = {n: space.columns[n].column for n in space.parameter_names}
    assert space.to_hierarchical_dependencies() == {
        col["kernel"]: {0: [col["gamma"]], 1: [col["gamma"], col["degree"]], 2: []}
    }
    assert space.num_paths == 3
    assert space.categorical_values == {
        col["scaler"]: [0.0, 1.0, 2.0],
        col["bootstrap"]: [0.0, 1.0],
    }


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_tuning_space_dict_tensor_dict_round_trip(seed):
    space = tuning_space()
    X = space.sample(8, seed=seed)
    configs = space.to_dicts(X)
    torch.testing.assert_close(space.to_tensor(configs), X)
    for config in configs:
        assert isinstance(config["n_estimators"], int)
        assert 10 <= config["n_estimators"] <= 500
        assert config["scaler"] in ("none", "standard", "minmax")
        assert config["bootstrap"] in (True, False)
        assert ("gamma" in config) == (config["kernel"] != "linear")
        assert ("degree" in config) == (config["kernel"] == "poly")
        assert space.validate(config) == config


@pytest.mark.parametrize(
    "config, match",
    [
        ({"n_estimators": 20.5}, "'n_estimators' must be an integer"),
        ({"scaler": "robust"}, "categorical 'scaler'"),
        ({"kernel": "linear", "gamma": 0.1}, "'gamma' is inactive"),
        ({"size": "xl"}, "categorical 'size'"),
    ],
)
def test_bad_values_of_new_kinds_name_the_parameter(config, match):
    base = {
        "n_estimators": 20,
        "scaler": "none",
        "size": "m",
        "kernel": "rbf",
        "gamma": 0.1,
        "bootstrap": False,
    }
    if config.get("kernel") == "linear":
        base.pop("gamma")
    with pytest.raises(ConfigurationError, match=match):
        tuning_space().validate({**base, **config})


def test_canonicalize_rounds_integers_in_their_own_scale():
    space = tuning_space()
    x = space.sample(1, seed=0)[0]
    col = space.columns["n_estimators"].column
    x[col] = math.log10(63.4)
    assert space.to_dict(x)["n_estimators"] == 63
    torch.testing.assert_close(
        space.canonicalize(x.unsqueeze(0))[0, col],
        torch.tensor(math.log10(63.0), dtype=torch.float64),
    )
