"""The command line: a run, a resume after a kill, a summary and a plot."""

from __future__ import annotations

import subprocess
import sys

import pytest

from treebo.cli import main
from treebo.loop.checkpoint import read_checkpoint
from treebo.space.spec import load_space

SPACE = """\
params:
  - {name: x, type: real, low: -1, high: 1}
choices:
  branch:
    a: {params: [{name: y, type: real, low: 0, high: 1}]}
    b: {}
"""

OBJECTIVE = """\
import os, signal

def f(params):
    calls = int(os.environ.get("KILL_AFTER", "0"))
    path = "calls.txt"
    n = int(open(path).read()) + 1 if os.path.exists(path) else 1
    open(path, "w").write(str(n))
    if calls and n > calls:
        os.kill(os.getpid(), signal.SIGKILL)  # the machine went away
    return params["x"] ** 2 + params.get("y", 0.5)
"""


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    (tmp_path / "space.yaml").write_text(SPACE)
    (tmp_path / "cli_objective.py").write_text(OBJECTIVE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def command(*args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "treebo", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def test_a_killed_run_resumes_from_its_checkpoint_and_is_summarized(workdir, capsys):
    import os

    args = ["run", "cli_objective:f", "--space", "space.yaml", "--budget", "6"]
    args += ["--seed", "0", "--checkpoint", "run.jsonl", "--no-progress"]
    env = {**os.environ, "KILL_AFTER": "4", "PYTHONPATH": str(workdir)}
    killed = command(*args, env=env)
    assert killed.returncode != 0
    space = load_space("space.yaml")
    assert len(read_checkpoint("run.jsonl", space).history) == 4
    env["KILL_AFTER"] = "0"
    done = command(*args, env=env)
    assert done.returncode == 0, done.stderr
    result = read_checkpoint("run.jsonl", space)
    # 4 told, 1 lost with the killed process, 2 more: every told one kept.
    assert len(result.history) == 6 and (workdir / "calls.txt").read_text() == "7"
    # One recommendation everywhere: the run's, the checkpoint's and show's.
    assert result.describe() in done.stdout
    assert main(["summary", "run.jsonl", "--space", "space.yaml"]) == 0
    shown = capsys.readouterr().out
    assert main(["show", "run.jsonl", "--space", "space.yaml"]) == 0
    assert capsys.readouterr().out == shown and result.describe() in shown
    assert main(["show", "run.jsonl"]) == 0  # the checkpoint holds its space
    assert capsys.readouterr().out == shown
    assert main(["plot", "run.jsonl", "--space", "space.yaml", "--out", "p.png"]) == 0
    for name in ("p.png", "p_slice.png", "p_importances.png"):
        assert (workdir / name).stat().st_size > 1000


def test_bad_paths_are_named_with_exit_status_2(workdir, capsys):
    assert main(["summary", "run.jsonl", "--space", "nowhere.yaml"]) == 2
    assert "nowhere.yaml" in capsys.readouterr().err
    args = ["run", "cli_objective:missing", "--space", "space.yaml", "--budget", "2"]
    assert main(args) == 2
    assert "cli_objective:missing" in capsys.readouterr().err


def test_the_console_script_finds_a_module_in_the_current_folder(workdir):
    import os
    import shutil

    script = shutil.which("treebo", path=os.path.dirname(sys.executable))
    if script is None:
        pytest.skip("the treebo console script is not installed")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    args = ["run", "cli_objective:f", "--space", "space.yaml", "--budget", "3"]
    done = subprocess.run(
        [script, *args, "--seed", "0", "--no-progress", "--noise", "deterministic"],
        capture_output=True,
        text=True,
        env=env,
        cwd=workdir,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "recommended {" in done.stdout and "(the best observation)" in done.stdout


def test_version_and_help_answer_without_importing_torch():
    code = (
        "import sys\n"
        "from treebo.cli import main\n"
        "try:\n"
        "    main(['--version'])\n"
        "except SystemExit as stop:\n"
        "    assert stop.code == 0\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("treebo ")
    helped = command("run", "--help")
    for option in ("--budget", "--seed", "--strategy", "--noise", "--checkpoint"):
        assert option in helped.stdout
    assert "add_tree_ucb" in helped.stdout


def test_the_strategy_names_in_the_help_are_the_registered_strategies():
    from treebo.cli import strategy_names
    from treebo.strategies.base import load_strategies

    registry = load_strategies()
    built_in = {n for n, c in registry.items() if c.__module__.startswith("treebo.")}
    assert built_in <= set(strategy_names())


def test_user_mistakes_are_one_line_with_exit_status_2(workdir, capsys):
    bad = "params:\n  - {name: a, type: real, low: 0, high: 1, log: ture}\n"
    (workdir / "bad.yaml").write_text(bad)
    args = ["--budget", "2", "--no-progress"]
    assert main(["run", "cli_objective:f", "--space", "bad.yaml", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bad.yaml: parameter 'a': log" in err
    assert main(["summary", "nothing.jsonl", "--space", "space.yaml"]) == 2
    assert "checkpoint nothing.jsonl not found" in capsys.readouterr().err


def test_the_demo_help_names_its_command(capsys):
    with pytest.raises(SystemExit):
        main(["demo", "--help"])
    assert capsys.readouterr().out.startswith("usage: treebo demo")


@pytest.mark.filterwarnings("ignore:treebo. none of the 2 evaluations")
def test_a_run_whose_evaluations_all_fail_exits_1(workdir, capsys):
    (workdir / "failing.py").write_text("def f(params):\n    raise OSError('disk')\n")
    args = ["run", "failing:f", "--space", "space.yaml", "--budget", "2"]
    assert main([*args, "--no-progress"]) == 1
    assert "all 2 evaluations failed" in capsys.readouterr().err


def test_ctrl_c_keeps_the_checkpoint_and_says_how_to_resume(workdir, capsys):
    (workdir / "interrupted.py").write_text(
        "n = [0]\n"
        "def f(params):\n"
        "    n[0] += 1\n"
        "    if n[0] == 3:\n"
        "        raise KeyboardInterrupt\n"
        "    return params['x'] ** 2\n"
    )
    args = ["run", "interrupted:f", "--space", "space.yaml", "--budget", "5"]
    args += ["--checkpoint", "run.jsonl", "--no-progress", "--seed", "0"]
    assert main(args) == 130
    err = capsys.readouterr().err.strip()
    assert err == (
        "treebo: interrupted; 2 evaluations are kept in run.jsonl; "
        "the same command resumes."
    )
