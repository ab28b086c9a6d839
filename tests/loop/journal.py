"""Reading a checkpoint journal in tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def read_journal(path: Path) -> tuple[dict, list[dict[str, Any]], list[dict]]:
    """The header, the trial records and the strategy states of a journal."""
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    trials = [e["trial"] for e in lines[1:] if "trial" in e]
    states = [e["strategy_state"] for e in lines[1:] if "strategy_state" in e]
    return lines[0], trials, states
