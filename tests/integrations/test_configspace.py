"""ConfigSpace import and export: active sets, values, refusals."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("ConfigSpace")

from ConfigSpace import (  # noqa: E402
    AndConjunction,
    Categorical,
    Configuration,
    ConfigurationSpace,
    Constant,
    EqualsCondition,
    Float,
    ForbiddenEqualsClause,
    GreaterThanCondition,
    InCondition,
    Integer,
    Normal,
    NotEqualsCondition,
    OrdinalHyperparameter,
)

from treebo import ConfigurationError  # noqa: E402
from treebo.integrations.configspace import (  # noqa: E402
    configspace_from_tree_space,
    tree_space_from_configspace,
)


def svm_forest_space() -> ConfigurationSpace:
    """A model choice; the SVM's gamma shared by three kernels (InCondition),
    coef0 under an AndConjunction, integers, ordinals and a constant."""
    cs = ConfigurationSpace(seed=0)
    model = Categorical("model", ["svm", "forest"])
    kernel = Categorical("kernel", ["rbf", "poly", "sigmoid", "linear"])
    C = Float("C", (1e-3, 1e3), log=True)
    gamma = Float("gamma", (1e-4, 1.0), log=True)
    degree = Integer("degree", (2, 5))
    coef0 = Float("coef0", (0.0, 1.0))
    trees = Integer("n_estimators", (10, 500), log=True)
    criterion = Categorical("criterion", ["gini", "entropy", "log_loss"])
    depth = OrdinalHyperparameter("depth", ["low", "mid", "high"])
    scaler = Categorical("scaler", ["none", "standard"])
    seed = Constant("random_state", 0)
    cs.add(
        [model, kernel, C, gamma, degree, coef0, trees, criterion, depth, scaler, seed]
    )
    cs.add(
        [
            EqualsCondition(kernel, model, "svm"),
            EqualsCondition(C, model, "svm"),
            InCondition(gamma, kernel, ["rbf", "poly", "sigmoid"]),
            EqualsCondition(degree, kernel, "poly"),
            AndConjunction(
                InCondition(coef0, kernel, ["poly", "sigmoid", "linear"]),
                NotEqualsCondition(coef0, kernel, "linear"),
            ),
            EqualsCondition(trees, model, "forest"),
            EqualsCondition(criterion, model, "forest"),
            EqualsCondition(depth, model, "forest"),
        ]
    )
    return cs


def plain(config) -> dict:
    return {k: (v.item() if hasattr(v, "item") else v) for k, v in config.items()}


def assert_same(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for k in a:
        if isinstance(a[k], float):
            assert math.isclose(a[k], b[k], rel_tol=1e-9), k
        else:
            assert a[k] == b[k] and type(a[k]) is type(b[k]), k


def test_import_keeps_kinds_and_sharing():
    space = tree_space_from_configspace(svm_forest_space())
    role = {n: c.role for n, c in space.columns.items()}
    assert role["model"] == role["kernel"] == "choice"
    assert role["criterion"] == role["scaler"] == role["random_state"] == "categorical"
    assert role["depth"] == role["degree"] == role["n_estimators"] == "integer"
    assert space.columns["gamma"].parent == ("kernel", ("rbf", "poly", "sigmoid"))
    assert space.columns["coef0"].parent == ("kernel", ("poly", "sigmoid"))


def test_configurations_pass_both_ways():
    cs = svm_forest_space()
    space = tree_space_from_configspace(cs)
    for config in cs.sample_configuration(60):
        config = plain(config)
        assert_same(space.validate(config), config)
    back = configspace_from_tree_space(space)
    for config in space.to_dicts(space.sample(60, seed=1)):
        assert_same(plain(Configuration(back, values=config)), config)
        assert_same(plain(Configuration(cs, values=config)), config)


def test_export_then_import_keeps_the_space():
    space = tree_space_from_configspace(svm_forest_space())
    again = tree_space_from_configspace(configspace_from_tree_space(space))
    assert again.parameter_names == space.parameter_names
    assert again.to_hierarchical_dependencies() == space.to_hierarchical_dependencies()
    assert again.categorical_values == space.categorical_values
    assert {n: c.role for n, c in again.columns.items()} == {
        n: c.role for n, c in space.columns.items()
    }


def test_weights_are_refused_by_name_and_the_default_is_a_configuration():
    cs = svm_forest_space()
    space = tree_space_from_configspace(cs)
    default = plain(cs.get_default_configuration())
    assert_same(space.validate(default), default)
    weighted = ConfigurationSpace()
    weighted.add(Categorical("loss", ["l1", "l2"], weights=[0.9, 0.1]))
    with pytest.raises(ConfigurationError, match="'loss': weights"):
        tree_space_from_configspace(weighted)


def test_what_is_not_a_tree_is_refused_by_name():
    cs = svm_forest_space()
    cs.add(ForbiddenEqualsClause(cs["kernel"], "linear"))
    with pytest.raises(ConfigurationError, match="forbidden clauses.*kernel"):
        tree_space_from_configspace(cs)

    cs = ConfigurationSpace()
    a, b = Categorical("a", ["x", "y"]), Categorical("b", ["u", "v"])
    c = Float("c", (0.0, 1.0))
    cs.add(
        [
            a,
            b,
            c,
            AndConjunction(EqualsCondition(c, a, "x"), EqualsCondition(c, b, "u")),
        ]
    )
    with pytest.raises(ConfigurationError, match="'c' depends on \\['a', 'b'\\]"):
        tree_space_from_configspace(cs)

    cs = ConfigurationSpace()
    n, c = Integer("n", (1, 9)), Float("c", (0.0, 1.0))
    cs.add([n, c, GreaterThanCondition(c, n, 3)])
    with pytest.raises(ConfigurationError, match="'c'.*categorical parents only"):
        tree_space_from_configspace(cs)

    cs = ConfigurationSpace()
    cs.add(Float("w", (0.0, 1.0), distribution=Normal(0.5, 0.1)))
    with pytest.raises(ConfigurationError, match="'w': NormalFloatHyperparameter"):
        tree_space_from_configspace(cs)
