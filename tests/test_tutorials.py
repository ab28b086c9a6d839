"""The tutorials: each notebook runs end to end in its smoke mode (short
budgets) in under two minutes, its two files (``.py`` and ``.ipynb``) hold the
same cells, and the notebook stores the outputs of a full run (the docs site
shows them; ``python tutorials/execute.py`` writes them).

These run in CI's tutorial step (``python -m pytest -m tutorials``), not in
the default suite.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TUTORIALS = sorted((ROOT / "tutorials").glob("[0-9][0-9]_*.py"))
#: Seconds a tutorial may take in smoke mode.
SMOKE_LIMIT = 120.0

pytestmark = pytest.mark.tutorials


def test_the_tutorials_are_there():
    assert len(TUTORIALS) == 8


@pytest.mark.parametrize("script", TUTORIALS, ids=lambda p: p.stem)
def test_the_notebook_holds_the_scripts_cells(script):
    jupytext = pytest.importorskip("jupytext")
    nbformat = pytest.importorskip("nbformat")
    from_script = jupytext.read(script)
    notebook = nbformat.read(script.with_suffix(".ipynb"), as_version=4)
    assert [(c.cell_type, c.source) for c in notebook.cells] == [
        (c.cell_type, c.source) for c in from_script.cells
    ]
    assert notebook.metadata["kernelspec"]["name"] == "python3"


@pytest.mark.parametrize("script", TUTORIALS, ids=lambda p: p.stem)
def test_the_notebook_stores_a_full_runs_outputs(script):
    nbformat = pytest.importorskip("nbformat")
    notebook = nbformat.read(script.with_suffix(".ipynb"), as_version=4)
    code = [c for c in notebook.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code), (
        f"{script.name}: run python tutorials/execute.py {script.stem[:2]}"
    )
    outputs = [output for c in code for output in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs)


@pytest.mark.parametrize("script", TUTORIALS, ids=lambda p: p.stem)
def test_the_tutorial_runs_in_smoke_mode(script, tmp_path, monkeypatch):
    jupytext = pytest.importorskip("jupytext")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("TREEBO_TUTORIAL_SMOKE", "1")
    notebook = jupytext.read(script)
    client = nbclient.NotebookClient(
        notebook,
        timeout=int(2 * SMOKE_LIMIT),
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    start = time.perf_counter()
    client.execute()
    seconds = time.perf_counter() - start
    assert seconds < SMOKE_LIMIT, f"{script.name} took {seconds:.0f} s"
    images = [
        output
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if "image/png" in output.get("data", {})
    ]
    assert images, f"{script.name} shows no plot"
    assert os.environ["TREEBO_TUTORIAL_SMOKE"] == "1"
