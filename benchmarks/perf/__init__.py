"""Timing and memory benchmarks; each script appends its records to ``records/``."""

from __future__ import annotations

import json
from pathlib import Path


def append_record(path: Path, record: dict) -> None:
    """Print ``record`` as a JSON line and append it to ``path``."""
    print(json.dumps(record), flush=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        fh.write(json.dumps(record) + "\n")
