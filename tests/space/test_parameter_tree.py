import pytest

from treebo.space import Categorical, Choice, ConfigurationError, Integer, Real, Vertex
from treebo.space.parameter_tree import build_root, collect_parameters, column_role


def test_roles_say_how_each_parameter_is_modelled():
    assert column_role(Real("a", 0, 1)) == "real"
    assert column_role(Integer("n", 1, 5)) == "integer"
    assert column_role(Categorical("o", ["s", "m", "l"], ordered=True)) == "integer"
    assert column_role(Categorical("c", ["a", "b"])) == "categorical"
    assert column_role(Choice("k", {"a": Vertex(), "b": Vertex()})) == "categorical"
    assert column_role(Choice("k", {"a": Vertex([Real("x", 0, 1)])})) == "choice"


def test_parameters_in_breadth_first_order_with_their_conditions():
    gamma = Real("gamma", 1e-3, 1.0)
    root = Vertex(
        [Real("lr", 0, 1)],
        [
            Choice(
                "kernel",
                {
                    "rbf": Vertex([gamma]),
                    "poly": Vertex([gamma, Integer("degree", 2, 5)]),
                    "linear": Vertex(),
                },
            )
        ],
    )
    order, parents, vertices = collect_parameters(root)
    assert [p.name for p in order] == ["lr", "kernel", "gamma", "degree"]
    assert parents == {
        "lr": None,
        "kernel": None,
        "gamma": ("kernel", ("rbf", "poly")),  # shared by two options
        "degree": ("kernel", ("poly",)),
    }
    assert len(vertices) == 4


def test_a_name_used_for_two_parameters_or_two_parents_is_refused():
    twice = Vertex([Real("a", 0, 1), Real("a", 0, 2)])
    with pytest.raises(ConfigurationError, match="'a'"):
        collect_parameters(twice)
    shared = Real("s", 0, 1)
    two_parents = Vertex(
        [shared], [Choice("c", {"x": Vertex([shared]), "y": Vertex()})]
    )
    with pytest.raises(ConfigurationError, match="'s' is under two different"):
        collect_parameters(two_parents)


def test_build_root_makes_each_key_once():
    made = []

    def make(key, vertex):
        made.append(key)
        if key == "c":
            return Choice("c", {0: vertex(["x", "y"]), 1: vertex(["y"])})
        return Real(key, 0.0, 1.0)

    root = build_root(["c"], make)
    order, parents, _ = collect_parameters(root)
    assert sorted(made) == ["c", "x", "y"]
    assert parents["y"] == ("c", (0, 1))
