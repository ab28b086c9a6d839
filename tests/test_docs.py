"""Every example in the docs runs: docstrings (doctest) and the README."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import re
from pathlib import Path

import pytest
import torch

import treebo

ROOT = Path(__file__).resolve().parents[1]
MODULES = sorted(
    m.name
    for m in pkgutil.walk_packages(treebo.__path__, "treebo.")
    if not m.name.endswith("__main__")
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # examples that write files write them here
    torch.manual_seed(0)  # examples that draw data draw the same data
    module = importlib.import_module(name)
    tests = [t for t in doctest.DocTestFinder().find(module, name) if t.examples]
    runner = doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    )
    report: list[str] = []
    for test in tests:
        runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)


def test_every_public_class_and_module_with_an_example_is_collected():
    # Guards the collection above: the examples it must find are found.
    found = {
        t.name
        for name in MODULES
        for t in doctest.DocTestFinder().find(importlib.import_module(name), name)
        if t.examples
    }
    assert {"treebo.loop.optimizer.TreeOptimizer", "treebo.loop.run.minimize"} <= found


def test_the_readme_quick_start_runs(tmp_path, monkeypatch):
    readme = (ROOT / "README.md").read_text()
    quick_start = readme.split("## Quick start", 1)[1]
    code = re.search(r"```python\n(.*?)```", quick_start, re.S).group(1)
    assert "budget=50" in code
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(code.replace("budget=50", "budget=8"), "README.md", "exec"), namespace)
    result = namespace["result"]
    assert len(result.history) == 8 and result.best_value is not None
    assert (tmp_path / "run.jsonl").exists()


SPHINX_MARKUP = re.compile(
    r":(class|func|meth|attr|data|mod|exc|math):`|^\s*\.\. \w+::", re.M
)


@pytest.mark.parametrize("name", MODULES)
def test_docstrings_use_the_renderers_markup(name):
    # The API pages render Google-style docstrings as Markdown: a Sphinx role
    # would show as raw text there (cross-references are [`name`][path],
    # math is $...$ and $$...$$).
    source = Path(importlib.import_module(name).__file__).read_text()
    found = [m.group(0).strip() for m in SPHINX_MARKUP.finditer(source)]
    assert not found, f"{name} uses Sphinx markup: {found[:5]}"
