"""The objective's fingerprint: real changes refuse a resume, harmless ones do not."""

from __future__ import annotations

import importlib
import sys
import textwrap

import pytest

from treebo import minimize
from treebo.loop.checkpoint import CheckpointMismatchError
from treebo.loop.fingerprint import objective_fingerprint
from treebo.test_functions import Jenatton

MODULE = """
SCALE = {scale}


def helper(params):
    return {helper}


def objective(params):
    {comment}
    return SCALE * helper(params)
"""


def user_module(tmp_path, monkeypatch, scale=1.0, helper="params['x1']", comment=""):
    """A module of the user's (a file on the path), written and (re)imported."""
    monkeypatch.syspath_prepend(str(tmp_path))
    text = MODULE.format(scale=scale, helper=helper, comment=comment)
    (tmp_path / "user_objective.py").write_text(text)
    sys.modules.pop("user_objective", None)
    importlib.invalidate_caches()
    return importlib.import_module("user_objective")


def compiled(source: str, filename: str):
    """The function ``f`` of ``source`` compiled as ``exec`` or a prompt would."""
    namespace = {"__name__": "__main__"}
    exec(compile(textwrap.dedent(source), filename, "exec"), namespace)
    return namespace["f"]


@pytest.mark.parametrize(
    "change",
    [
        {"helper": "2 * params['x1']"},  # an edit in a helper it calls
        {"scale": 2.0},  # a global constant it reads
    ],
)
def test_a_real_change_in_the_users_module_is_refused(tmp_path, monkeypatch, change):
    before = user_module(tmp_path, monkeypatch).objective
    after = user_module(tmp_path, monkeypatch, **change).objective
    assert objective_fingerprint(before) != objective_fingerprint(after)
    problem = Jenatton()
    path = tmp_path / "run.jsonl"
    minimize(before, problem.space, budget=2, seed=0, checkpoint=path)
    with pytest.raises(CheckpointMismatchError, match="the objective changed"):
        minimize(after, problem.space, budget=3, seed=0, checkpoint=path)


@pytest.mark.parametrize("filename", ["<string>", "<stdin>"])  # exec, a prompt
def test_an_objective_without_a_source_file_is_fingerprinted_by_its_code(filename):
    one = compiled("def f(params):\n    return params['x1']\n", filename)
    same = compiled("def f(params):\n    return params['x1']\n", filename)
    other = compiled("def f(params):\n    return -params['x1']\n", filename)
    assert objective_fingerprint(one) == objective_fingerprint(same)
    assert objective_fingerprint(one) != objective_fingerprint(other)


def test_a_comment_or_a_moved_definition_is_accepted(tmp_path, monkeypatch):
    before = user_module(tmp_path, monkeypatch).objective
    commented = user_module(tmp_path, monkeypatch, comment="# tuned on Tuesday")
    problem = Jenatton()
    path = tmp_path / "run.jsonl"
    minimize(before, problem.space, budget=2, seed=0, checkpoint=path)
    result = minimize(commented.objective, problem.space, budget=3, seed=0,
                      checkpoint=path)  # fmt: skip
    assert len(result.history) == 3
    moved = compiled("\n\n\ndef f(params):\n    return params['x1']\n", "<string>")
    here = compiled("def f(params):\n    '''Documented.'''\n    return params['x1']\n",
                    "<string>")  # fmt: skip
    assert objective_fingerprint(moved) == objective_fingerprint(here)


def test_the_same_function_in_a_spawned_process_is_accepted():
    one = compiled("def f(params):\n    return params['x1']\n", "run.py")
    spawned = compiled("def f(params):\n    return params['x1']\n", "run.py")
    spawned.__module__ = "__mp_main__"  # the main script, as a spawned child sees it
    assert objective_fingerprint(one) == objective_fingerprint(spawned)


def test_a_lambda_rerun_with_a_larger_budget_goes_on(tmp_path):
    problem = Jenatton()
    path = tmp_path / "run.jsonl"
    f = problem.objective
    minimize(lambda p: f(p), problem.space, budget=4, seed=0, checkpoint=path)
    result = minimize(lambda p: f(p), problem.space, budget=6, seed=0, checkpoint=path)
    assert len(result.history) == 6
    with pytest.raises(CheckpointMismatchError, match="the objective changed"):
        minimize(lambda p: 2 * f(p), problem.space, budget=7, seed=0,
                 checkpoint=path)  # fmt: skip
