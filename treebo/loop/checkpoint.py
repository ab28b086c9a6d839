"""Versioned JSON checkpoints of a run, written atomically after every evaluation.

A checkpoint holds the run's identity (space, model, options, seed, direction,
initial design size), every trial, and the strategy's state (e.g. the
hyper-parameters its next fit starts from), so a run resumed from it proposes
exactly what the uninterrupted run would have. A checkpoint of a different
run is refused with an error that names what differs.
"""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from treebo.loop.history import Trial
from treebo.space import TreeSpace

CHECKPOINT_VERSION = 2


class CheckpointMismatchError(ValueError):
    """A checkpoint was written by a run with other settings."""


@dataclass
class Checkpoint:
    """The contents of a checkpoint file.

    Attributes:
        identity: What makes two runs the same run (see :func:`run_identity`).
        history: Every trial.
        strategy_state: The strategy's :meth:`~treebo.strategies.Strategy.state_dict`.
    """

    identity: dict[str, Any]
    history: list[Trial]
    strategy_state: dict[str, Any]


def space_signature(space: TreeSpace) -> dict[str, Any]:
    """Parameter names, bounds, choice labels and tree of ``space``, as JSON data."""
    deps = space.to_hierarchical_dependencies()
    return {
        "parameters": list(space.parameter_names),
        "bounds": space.bounds.tolist(),
        "choices": {
            name: [repr(x) for x in codes]
            for name, codes in sorted(space.choice_codes.items())
        },
        "hierarchical_dependencies": {
            str(p): {repr(v): list(cs) for v, cs in b.items()} for p, b in deps.items()
        },
    }


def run_identity(
    space: TreeSpace,
    model: str,
    options: dict[str, Any],
    seed: int | None,
    maximize: bool,
    n_initial: int,
) -> dict[str, Any]:
    """The settings a resumed run must share with the run that wrote it
    (normalized through JSON, so tuples and lists compare equal)."""
    identity = {
        "space": space_signature(space),
        "model": model,
        "options": options,
        "seed": seed,
        "maximize": maximize,
        "n_initial": n_initial,
    }
    return json.loads(json.dumps(identity))


def write_checkpoint(path: Path, checkpoint: Checkpoint) -> None:
    """Write ``checkpoint`` to ``path`` atomically (temporary file, then rename)."""
    payload = {
        "format": "treebo-checkpoint",
        "version": CHECKPOINT_VERSION,
        **checkpoint.identity,
        "strategy_state": checkpoint.strategy_state,
        "history": [asdict(t) for t in checkpoint.history],
    }
    tmp = path.with_name(path.name + ".tmp")
    tmp.parent.mkdir(parents=True, exist_ok=True)
    with open(tmp, "w") as fh:
        json.dump(payload, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def read_checkpoint(path: Path, identity: dict[str, Any]) -> Checkpoint:
    """Read ``path`` and check that it belongs to the run ``identity``.

    Version-1 checkpoints (history only) are read with a warning: they hold
    no strategy state, so the resumed run's next fit starts from the defaults.

    Raises:
        ValueError: If the file is not a treebo checkpoint.
        CheckpointMismatchError: If it was written by a run with other
            settings (the message names them).
    """
    try:
        payload = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise ValueError(f"checkpoint {path} is not valid JSON: {err}") from None
    if not isinstance(payload, dict) or "history" not in payload:
        raise ValueError(f"{path} is not a treebo checkpoint.")
    version = payload.get("version")
    if version == 1:
        _check_version_1(path, payload, identity)
        warnings.warn(
            f"checkpoint {path} has format version 1 (no model state, no "
            "settings): its history is resumed, but the next proposals may "
            "differ from those of the original run.",
            RuntimeWarning,
            stacklevel=3,
        )
        return Checkpoint(identity, [Trial(**r) for r in payload["history"]], {})
    if version != CHECKPOINT_VERSION:
        raise ValueError(
            f"checkpoint {path} has format version {version!r}; this treebo "
            f"reads versions 1 and {CHECKPOINT_VERSION}."
        )
    differs = [key for key in identity if payload.get(key) != identity[key]]
    if differs:
        details = "; ".join(
            f"{key}: checkpoint {_short(payload.get(key))}, "
            f"this run {_short(identity[key])}"
            for key in differs
        )
        raise CheckpointMismatchError(
            f"checkpoint {path} was written by a run with other settings "
            f"({details}). Resume with the same settings, or use another path."
        )
    return Checkpoint(
        identity,
        [Trial(**record) for record in payload["history"]],
        payload.get("strategy_state", {}),
    )


def _check_version_1(path: Path, payload: dict[str, Any], identity: dict) -> None:
    if payload.get("parameters") != identity["space"]["parameters"]:
        raise CheckpointMismatchError(
            f"checkpoint {path} was written for parameters "
            f"{payload.get('parameters')}, not {identity['space']['parameters']}."
        )
    if bool(payload.get("maximize")) != identity["maximize"]:
        raise CheckpointMismatchError(
            f"checkpoint {path} was written with maximize={payload.get('maximize')}."
        )


def _short(value: Any, limit: int = 120) -> str:
    text = json.dumps(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
