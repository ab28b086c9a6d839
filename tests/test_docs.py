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


@pytest.mark.snippets  # some run BO loops: CI runs them in its docs step (.ci/run)
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


#: The pages whose ``python`` blocks are run, each page's in order in one namespace
#: (as a notebook): every snippet a reader copies runs as written.
PAGES = [
    page
    for page in [
        "README.md",
        *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md")),
        *sorted(
            str(p.relative_to(ROOT)) for p in (ROOT / "docs" / "models").glob("*.md")
        ),
    ]
    if "```python" in (ROOT / page).read_text()
]
#: A block right after this comment is not run (a GPU, a cluster); the comment says
#: why, on the page.
NOT_RUN = "<!-- not run:"
UNBOUND = object()  # a sentinel: no value before the block
BLOCK = re.compile(r"^([ \t]*)```python\n(.*?)^\1```", re.S | re.M)


def python_blocks(text: str) -> list[str]:
    """The page's ``python`` blocks that are run, dedented."""
    blocks = []
    for match in BLOCK.finditer(text):
        before = text[: match.start()].rstrip().splitlines()
        if before and before[-1].strip().startswith(NOT_RUN):
            continue
        indent = len(match.group(1))
        blocks.append("\n".join(line[indent:] for line in match.group(2).splitlines()))
    return blocks


def smoke(code: str) -> str:
    """The snippet with budgets cut to a few evaluations (and MCMC to a few
    sweeps)."""
    code = re.sub(r"budget=(\d+)", lambda m: f"budget={min(int(m.group(1)), 6)}", code)
    return re.sub(r"num_sweeps=(\d+), burn_in=(\d+)", "num_sweeps=40, burn_in=20", code)


@pytest.mark.snippets  # CI runs them beside the tutorials (.ci/run)
@pytest.mark.parametrize("page", PAGES)
def test_every_snippet_of_a_page_runs_as_written(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # snippets that write files write them here
    text = (ROOT / page).read_text()
    blocks = python_blocks(text)
    # Every block is run but those a comment on the page says are not.
    assert len(blocks) == text.count("```python") - text.count(NOT_RUN), page
    namespace: dict = {"__name__": "__main__"}
    for i, code in enumerate(blocks):
        before = dict(namespace)
        exec(compile(smoke(code), f"{page} (python block {i + 1})", "exec"), namespace)
        # Each block binds a name a reader goes on with (a new or a rebound one).
        bound = [k for k, v in namespace.items() if before.get(k, UNBOUND) is not v]
        assert bound, f"{page}: python block {i + 1} binds nothing"


def test_the_snippet_collection_finds_and_skips_blocks():
    text = "a\n```python\nx = 1\n```\n<!-- not run: a GPU -->\n```python\ny\n```\n"
    text += "- item\n\n  ```python\n  z = 2\n  ```\n"
    assert python_blocks(text) == ["x = 1", "z = 2"]
    assert smoke("minimize(f, s, budget=50)") == "minimize(f, s, budget=6)"
