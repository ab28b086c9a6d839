"""The loop's strategies for the per-leaf models."""

from __future__ import annotations

import pytest

from treebo import Choice, Integer, Real, TreeOptimizer, TreeSpace, Vertex, minimize
from treebo.jenatton import (
    IndependentLeafGP,
    JenattonTreeGP,
    JenattonTreeNonlinearOptions,
    JenattonTreeNonlinearStrategy,
    JenattonTreeOptions,
    JenattonTreeStrategy,
)
from treebo.space import ConfigurationError
from treebo.test_functions import Jenatton

PROBLEM = Jenatton()


@pytest.mark.parametrize(
    "model, expected",
    [
        ("jenatton_tree", JenattonTreeGP),
        ("jenatton_tree_nonlinear", JenattonTreeGP),
        ("independent", IndependentLeafGP),
    ],
)
def test_each_model_proposes_valid_configurations(model, expected):
    opt = TreeOptimizer(PROBLEM.space, strategy=model, seed=0, n_initial=5)
    for _ in range(7):
        params = opt.ask()
        PROBLEM.space.validate(params)
        opt.tell(params, PROBLEM.objective(params))
    assert [t.kind for t in opt.history].count("bo") == 2
    fitted = opt.strategy.last_model
    assert type(fitted) is expected
    assert (fitted.features is not None) == (model != "independent")
    if model == "jenatton_tree_nonlinear":
        assert fitted.features.nonlinear and fitted.features.num_outputs == 2 * 75


def test_pending_configurations_get_distinct_proposals():
    opt = TreeOptimizer(PROBLEM.space, strategy="jenatton_tree", seed=0, n_initial=5)
    for _ in range(5):
        params = opt.ask()
        opt.tell(params, PROBLEM.objective(params))
    first, second = opt.ask(), opt.ask()  # the second with the first pending
    assert far_apart(opt.space, first, second)  # not a round-off apart
    assert [p for p in opt.pending] == [first, second]


def test_options_name_their_strategy():
    assert TreeOptimizer(
        PROBLEM.space, strategy=JenattonTreeStrategy(JenattonTreeOptions())
    ).strategy.name == ("jenatton_tree")
    nonlinear = TreeOptimizer(
        PROBLEM.space,
        strategy=JenattonTreeNonlinearStrategy(
            JenattonTreeNonlinearOptions(num_features=5)
        ),
    ).strategy
    assert nonlinear.name == "jenatton_tree_nonlinear"
    with pytest.raises(ValueError, match="num_features"):
        JenattonTreeOptions(num_features=0)


def test_spaces_with_other_than_real_parameters_are_refused_by_name():
    space = TreeSpace(
        Vertex(choices=[Choice("m", {"a": Vertex([Integer("k", 1, 5)]),
                                     "b": Vertex([Real("x", 0.0, 1.0)])})])
    )  # fmt: skip
    with pytest.raises(ConfigurationError, match="'k'"):
        minimize(lambda p: 0.0, space, budget=2, strategy="jenatton_tree")


def far_apart(space, a, b, tol=1e-3):
    """Whether two configurations differ by more than ``tol`` of some range."""
    X = space.to_tensor([a, b])
    width = space.bounds[1] - space.bounds[0]
    return bool(((X[0] - X[1]).abs() / width).max() > tol)


@pytest.mark.parametrize("curved, expected", [(False, False), (True, True)])
def test_the_evidence_chooses_the_shared_term(curved, expected):
    # P1(a)'s tree with the shared r8, r9 entering linearly (the paper's `tree`
    # is right) or with an optimum inside their range (a linear term would put
    # it on a bound: only random features represent it).
    space = Jenatton("paper").space
    optimum = {"x4": 0.55, "x5": -0.7, "x6": 0.35, "x7": -0.45}
    centre = {"r8": 0.7, "r9": 0.3}

    def value(params):
        leaf = next(k for k in optimum if k in params)
        shared = "r8" if "r8" in params else "r9"
        r = params[shared]
        return (params[leaf] - optimum[leaf]) ** 2 + (
            (r - centre[shared]) ** 2 if curved else r
        )

    opt = TreeOptimizer(space, strategy="jenatton_tree", seed=0)
    configs = space.to_dicts(space.sample(40, seed=3))
    for params in configs:
        opt.tell(params, value(params))
    model = opt.strategy.fit(opt.observations())
    assert model.features.nonlinear is expected
    # The nonlinear strategy keeps its random features whatever the evidence.
    nonlinear = TreeOptimizer(space, strategy="jenatton_tree_nonlinear", seed=0)
    for params in configs:
        nonlinear.tell(params, value(params))
    assert nonlinear.strategy.fit(nonlinear.observations()).features.nonlinear
