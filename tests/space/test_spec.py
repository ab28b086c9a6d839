"""Spaces written as data: every key reaches the space, bad keys are named."""

from __future__ import annotations

import json

import pytest

from treebo.space import ConfigurationError, Integer, Real
from treebo.space.spec import load_space, space_from_dict, space_to_dict


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
        ({"parms": [], "params": []}, r"root: unknown keys \['parms'\]"),
    ],
)  # fmt: skip
def test_malformed_specs_name_the_culprit(spec, message):
    with pytest.raises(ConfigurationError, match=message):
        space_from_dict(spec)


def test_a_typo_names_the_key_not_the_whole_file():
    spec = {"parms": [{"name": f"p{i}", "type": "real", "low": 0, "high": 1}
                      for i in range(50)]}  # fmt: skip
    with pytest.raises(ConfigurationError) as info:
        space_from_dict(spec)
    assert "parms" in str(info.value) and "p49" not in str(info.value)


def test_a_space_round_trips_through_its_spec():
    from treebo.test_functions import Jenatton
    from treebo.test_functions.model_selection import model_selection_space

    for space in (Jenatton().space, model_selection_space()):
        spec = space_to_dict(space)
        assert json.loads(json.dumps(spec)) == spec
        again = space_from_dict(spec)
        assert again.parameter_names == space.parameter_names
        assert again.root == space.root
    assert isinstance(space_to_dict(Jenatton().space)["choices"]["x1"], list)  # 0, 1
    # A label JSON cannot hold (a tuple): no spec, rather than a wrong one.
    from treebo.space import Choice, TreeSpace, Vertex

    leaf = Vertex([Real("x", 0, 1)])
    odd = TreeSpace(Vertex(choices=[Choice("c", {(1, 2): leaf, "b": Vertex()})]))
    assert space_to_dict(odd) is None


def test_the_documented_yaml_example_loads(tmp_path):
    """The module docstring's example, as a user copies it (YAML 1.1 reads
    ``1e-4`` as a string)."""
    import treebo.space.spec as spec_module

    doc = spec_module.__doc__
    block = doc.split("A YAML example")[1].split("::\n\n")[1].split("\n\nExample:")[0]
    path = tmp_path / "svm.yaml"
    path.write_text("\n".join(line[4:] for line in block.splitlines()))
    space = load_space(str(path))
    assert space.parameter_names == ["C", "kernel", "gamma", "degree"]
    assert space.columns["gamma"].param == Real("gamma", 1e-4, 1, log_scale=True)


@pytest.mark.parametrize(
    "name, text, message",
    [
        ("s.yaml", "params:\n  - {name: C, type: real, low: 1, high: 2, log: ture}\n",
         r"s\.yaml: parameter 'C': log must be true or false, got 'ture'"),
        ("s.yaml", "params:\n  - {name: C, type: real, low: one, high: 2}\n",
         r"s\.yaml: parameter 'C': low must be a number, got 'one'"),
        ("s.yaml", "params: [\n", r"s\.yaml: invalid YAML at line \d+"),
        ("s.json", '{"params": [}', r"s\.json: invalid JSON at line 1, column 13"),
        ("s.json", "[]", r"s\.json: the root vertex must be a mapping"),
        ("missing.json", None, r"missing\.json: not found"),
    ],
)  # fmt: skip
def test_a_bad_space_file_is_one_error_naming_the_file_and_key(
    tmp_path, name, text, message
):
    path = tmp_path / name
    if text is not None:
        path.write_text(text)
    with pytest.raises(ConfigurationError, match=message):
        load_space(str(path))
