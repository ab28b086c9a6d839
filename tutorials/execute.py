"""Execute the tutorials in full mode and store their outputs in the notebooks.

Each ``NN_name.py`` (the jupytext source the tests read) is run top to bottom
with the full budgets (``TREEBO_TUTORIAL_SMOKE`` unset) and written to
``NN_name.ipynb`` with every cell's output: the text, tables and figures the docs
site shows. CI runs the same cells in smoke mode and checks that the two files
hold the same cells (``tests/test_tutorials.py``).

Usage (from the repository root; about 8 minutes on two cores)::

    python tutorials/execute.py              # every tutorial
    python tutorials/execute.py 01 08        # those whose names start so
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def execute(script: Path, timeout: int = 3600) -> float:
    """Run ``script``'s cells in a fresh kernel and save the notebook beside it.

    Returns:
        The seconds the notebook took.

    Raises:
        nbclient.exceptions.CellExecutionError: If a cell fails (the notebook
            is then left as it was).
    """
    import jupytext
    import nbclient

    notebook = jupytext.read(script)
    env = os.environ.pop("TREEBO_TUTORIAL_SMOKE", None)
    start = time.perf_counter()
    try:
        nbclient.NotebookClient(
            notebook,
            timeout=timeout,
            kernel_name="python3",
            record_timing=False,
            resources={"metadata": {"path": str(script.parent)}},
        ).execute()
    finally:
        if env is not None:
            os.environ["TREEBO_TUTORIAL_SMOKE"] = env
    jupytext.write(notebook, script.with_suffix(".ipynb"))
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("prefixes", nargs="*", help="e.g. 01 08 (default: all)")
    args = parser.parse_args(argv)
    scripts = [
        s
        for s in sorted(HERE.glob("[0-9][0-9]_*.py"))
        if not args.prefixes or any(s.stem.startswith(p) for p in args.prefixes)
    ]
    if not scripts:
        print(f"no tutorial matches {args.prefixes}", file=sys.stderr)
        return 2
    for script in scripts:
        seconds = execute(script)
        print(f"{script.stem}: {seconds:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
