"""Checkpoints: an append-only journal of a run, one line per event.

The first line of the file is a header with the run's identity (space, model,
options, seed, direction, initial design size, noise, and the fingerprint of what
the run evaluates: the objective and candidate pool of a
[`minimize()`][treebo.loop.run.minimize] run) and the space itself
([`space_to_dict()`][treebo.space.spec.space_to_dict], where its labels fit JSON), so
that a checkpoint reads without its space; every later line is one event, appended and
flushed to disk as it happens:

- ``{"trial": {...}}``: a told evaluation (written before anything else is
  done with it, so a finished evaluation survives a kill);
- ``{"strategy_state": {...}}``: the strategy's state after a proposal (e.g.
  the hyper-parameters its next fit starts from), written when it changed;
- ``{"recommendation": {...}}``: the model's recommendation (trial index, predicted
  score and its standard deviation, and how many trials it saw), written by
  [`TreeOptimizer.result()`][treebo.loop.optimizer.TreeOptimizer.result], so that
  [`read_checkpoint()`][treebo.loop.checkpoint.read_checkpoint] returns the same one.

Appending costs $O(1)$ per event, whatever the length of the history. Reading a journal
keeps every complete line: a last line cut short by a kill is dropped with a warning.
Opening a run compacts its journal (header, trials, last state) into a fresh file.
Choice values are written as the index of their label, so any hashable label survives
the round trip.

A resumed run proposes exactly what the uninterrupted run would have; a
journal of a different run is refused with an error that names what differs.
A journal of another format version (an earlier treebo's) is refused with an
error that names both versions.

Example:
    >>> import pathlib, tempfile
    >>> from treebo.test_functions import Jenatton
    >>> space = Jenatton().space
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "run.jsonl"
    >>> journal = Journal(path, run_identity(space, "add_tree", {}, 0, False, 5))
    >>> journal.open(space) is None  # a new run
    True
    >>> params = {"x1": 0, "r8": 0.5, "x2": 1, "x5": 0.1}
    >>> journal.append_trial(space, Trial(0, params, 1.5))
    >>> len(path.read_text().splitlines())  # the header and the trial
    2
    >>> journal.open(space).history[0].params == params
    True
"""

from __future__ import annotations

import json
import os
import re
import warnings
import weakref
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from treebo.loop.history import OptimizationResult, Trial, result_of
from treebo.loop.recommendation import Recommendation
from treebo.space import TreeSpace
from treebo.space.parameters import Categorical, Choice, Parameter
from treebo.space.spec import space_from_dict, space_to_dict

#: The journal format; 4: the options of the strategies as of treebo 0.1
#: (family folders; ``model`` takes a strategy's options).
CHECKPOINT_VERSION = 4
_FORMAT = "treebo-checkpoint"
#: Identity keys as messages name them (the journal's "model" is ``strategy=``).
LABELS = {"model": "strategy"}


class CheckpointMismatchError(ValueError):
    """A checkpoint was written by a run with other settings."""


class CheckpointVersionError(ValueError):
    """A checkpoint was written in another format version."""


class CheckpointInUseError(RuntimeError):
    """Another process holds the checkpoint, or a newer optimizer of this
    process took it over."""


@dataclass
class Checkpoint:
    """What a checkpoint holds.

    Attributes:
        identity: What makes two runs the same run (see
            [`run_identity()`][treebo.loop.checkpoint.run_identity]).
        history: Every trial.
        strategy_state: The strategy's
            [`state_dict()`][treebo.strategies.base.Strategy.state_dict] as the proposal
            of the last told trial left it (a state written by a later proposal, never
            told, is dropped: the resumed run makes that proposal again).
        recommendation: The last recommendation written for exactly these trials
            (a [`Recommendation`][treebo.loop.recommendation.Recommendation]'s fields),
            or ``None``.
    """

    identity: dict[str, Any]
    history: list[Trial]
    strategy_state: dict[str, Any]
    recommendation: dict[str, Any] | None = None


def space_signature(space: TreeSpace) -> dict[str, Any]:
    """Parameter names, bounds, choice labels and tree of ``space``, as JSON data."""
    deps = space.to_hierarchical_dependencies()
    kinds = {
        name: (type(c.param).__name__, c.role)
        for name, c in space.columns.items()
        if c.role in ("integer", "categorical")
    }
    extra = {"kinds": kinds} if kinds else {}  # absent for real/choice spaces
    return {
        **extra,
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
    noise: str | float = "infer",
    fingerprint: dict[str, Any] | None = None,
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
        "noise": noise,
    }
    if fingerprint is not None:
        identity["fingerprint"] = fingerprint
    return json.loads(json.dumps(identity))


def trial_record(space: TreeSpace, trial: Trial) -> dict[str, Any]:
    """``trial`` as JSON data, choice values as the index of their label."""
    record = {f.name: getattr(trial, f.name) for f in fields(trial)}
    record["params"] = {
        name: _label_index(space.columns[name].param, value)
        for name, value in trial.params.items()
    }
    return record


def trial_from_record(space: TreeSpace, record: dict[str, Any]) -> Trial:
    """The [`Trial`][treebo.loop.history.Trial] of a
    [`trial_record()`][treebo.loop.checkpoint.trial_record]."""
    params = {
        name: _label_at(space.columns[name].param, value)
        for name, value in record["params"].items()
    }
    return Trial(**{**record, "params": params})


def _label_index(param: Parameter | Choice, value: Any) -> Any:
    if isinstance(param, (Choice, Categorical)):
        return param.labels.index(param.match(value))
    return value


def _label_at(param: Parameter | Choice, value: Any) -> Any:
    return param.labels[value] if isinstance(param, (Choice, Categorical)) else value


#: ``{lock file: journal}``: the journal of this process holding each lock.
_HOLDERS: dict[str, weakref.ref[Journal]] = {}


class Journal:
    """The append-only checkpoint file of one run.

    Args:
        path: The file.
        identity: The run's [`run_identity()`][treebo.loop.checkpoint.run_identity].
    """

    def __init__(self, path: str | os.PathLike, identity: dict[str, Any]) -> None:
        self.path = Path(path)
        self.identity = identity
        self._fd: int | None = None
        self._closer: weakref.finalize | None = None
        self._lock: weakref.finalize | None = None
        self._superseded = False

    def open(self, space: TreeSpace) -> Checkpoint | None:
        """Read the file if it exists, check its identity, and compact it;
        else start it with the header. Call before appending.

        Returns:
            The saved run, or ``None`` if there was no file (or an empty one).

        Raises:
            ValueError: If the file is not a treebo checkpoint.
            CheckpointMismatchError: If it was written by a run with other
                settings (the message names them).
            CheckpointInUseError: If another process has the file open: two
                writers would lose trials. (A journal of this process on the
                same file is superseded instead.)
        """
        self._acquire_lock()
        try:
            return self._open(space)
        except BaseException:  # a refused file leaves nothing locked
            self.release()
            raise

    def _open(self, space: TreeSpace) -> Checkpoint | None:
        if not self.path.exists() or self.path.stat().st_size == 0:
            # Write the header now, so that the first trial is a plain append.
            self.path.parent.mkdir(parents=True, exist_ok=True)
            _write_atomically(self.path, self._header(space) + "\n")
            self._open_for_append()
            return None
        saved = self._read(space)
        lines = [self._header(space)]
        lines += [json.dumps({"trial": trial_record(space, t)}) for t in saved.history]
        if saved.strategy_state:
            lines.append(json.dumps({"strategy_state": saved.strategy_state}))
        if saved.recommendation is not None:
            lines.append(json.dumps({"recommendation": saved.recommendation}))
        _write_atomically(self.path, "\n".join(lines) + "\n")
        self._open_for_append()
        return saved

    def _open_for_append(self) -> None:
        """Keep a descriptor open, so that an append is one ``write`` call."""
        self.close()
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        self._closer = weakref.finalize(self, os.close, self._fd)

    def close(self) -> None:
        """Close the file (appending opens it again)."""
        if self._closer is not None:
            self._closer()
        self._fd = self._closer = None

    def release(self) -> None:
        """Close the file and give up the run's lock (see
        [`open()`][treebo.loop.checkpoint.Journal.open])."""
        self.close()
        if self._lock is not None:
            self._lock()
        self._lock = None

    def _acquire_lock(self) -> None:
        """Hold an exclusive lock on ``<path>.lock`` until
        [`release()`][treebo.loop.checkpoint.Journal.release] (or until this process
        ends, also by a kill). A journal of this process on the same file is superseded
        (a re-run notebook cell, a resumed optimizer): it releases the lock and refuses
        to append. Where
        ``fcntl`` is missing (Windows) there is no lock."""
        if self._lock is not None:
            return
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lock_path = self.path.with_name(self.path.name + ".lock")
        key = os.path.realpath(lock_path)
        holder = _HOLDERS.get(key)
        previous = None if holder is None else holder()
        if previous is not None and previous is not self:
            previous.release()
            previous._superseded = True
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise CheckpointInUseError(
                f"checkpoint {str(self.path)!r} is in use by another process "
                f"(it holds {str(lock_path)!r}): two runs on one journal would "
                "lose each other's trials. Wait for it to end or use another "
                "file."
            ) from None
        self._lock = weakref.finalize(self, os.close, fd)
        _HOLDERS[key] = weakref.ref(self)

    def append_trial(self, space: TreeSpace, trial: Trial) -> None:
        """Append one told evaluation."""
        self._append({"trial": trial_record(space, trial)})

    def append_state(self, state: dict[str, Any]) -> None:
        """Append the strategy's state."""
        self._append({"strategy_state": state})

    def append_recommendation(self, n_trials: int, recommended: Any) -> None:
        """Append the model's recommendation (a
        [`Recommendation`][treebo.loop.recommendation.Recommendation]) after
        ``n_trials`` trials."""
        self._append({"recommendation": {"trials": n_trials, **recommended._asdict()}})

    def _header(self, space: TreeSpace) -> str:
        header = {"format": _FORMAT, "version": CHECKPOINT_VERSION, **self.identity}
        spec = space_to_dict(space)  # not part of the identity: read_checkpoint's
        if spec is not None:
            header["space_spec"] = spec
        return json.dumps(header)

    def _append(self, event: dict[str, Any]) -> None:
        if self._superseded:
            raise CheckpointInUseError(
                f"checkpoint {str(self.path)!r} was opened by a newer optimizer "
                "in this process; this one no longer writes to it (use the "
                "newer one, or give this one another file)."
            )
        # Once write() returns the line is the kernel's: a killed process
        # keeps it; fsync() then guards it against a machine crash.
        data = (json.dumps(event) + "\n").encode()
        if self._fd is None:
            self._open_for_append()
        written = 0
        while written < len(data):
            written += os.write(self._fd, data[written:])
        os.fsync(self._fd)

    # ------------------------------------------------------------- reading
    def _read(self, space: TreeSpace) -> Checkpoint:
        lines = self.path.read_text().splitlines()
        try:
            first = json.loads(lines[0]) if lines else None
        except json.JSONDecodeError as err:
            raise ValueError(
                f"checkpoint {self.path} is not valid JSON: {err}"
            ) from None
        if not isinstance(first, dict) or not (
            "history" in first or first.get("format") == _FORMAT
        ):
            raise ValueError(f"{self.path} is not a treebo checkpoint.")
        version = first.get("version")
        if version != CHECKPOINT_VERSION:
            raise CheckpointVersionError(
                f"checkpoint {self.path} has format version {version!r}; this "
                f"treebo reads version {CHECKPOINT_VERSION} only (the strategies' "
                "options changed). Start the run with another checkpoint path; "
                "its trials can still be read with json from the file's lines."
            )
        self._check_identity(first, space)
        history: list[Trial] = []
        # The state to resume from is the one the last told trial's proposal
        # left: a state written after it belongs to a proposal that was never
        # told, which the resumed run makes again from the earlier state.
        state: dict[str, Any] = {}
        latest: dict[str, Any] = {}
        recommendation: dict[str, Any] | None = None
        for number, line in enumerate(lines[1:], start=2):
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                if number == len(lines):  # cut short by a kill while writing
                    warnings.warn(
                        f"checkpoint {self.path}: its last line is incomplete "
                        "(the run was stopped while writing it); it is dropped.",
                        RuntimeWarning,
                        stacklevel=4,
                    )
                    break
                raise ValueError(
                    f"checkpoint {self.path}: line {number} is not valid JSON."
                ) from None
            if "trial" in event:
                history.append(trial_from_record(space, event["trial"]))
                state = latest
            elif "strategy_state" in event:
                latest = event["strategy_state"]
            elif "recommendation" in event:
                recommendation = event["recommendation"]
        if recommendation is not None and recommendation.get("trials") != len(history):
            recommendation = None  # made before the last trials were told
        return Checkpoint(self.identity, history, state, recommendation)

    def _check_identity(self, saved: dict[str, Any], space: TreeSpace) -> None:
        if "fingerprint" in saved and "fingerprint" not in self.identity:
            # An ask/tell optimizer opening a minimize() run's journal keeps its
            # fingerprint (the compacted header must not lose it).
            self.identity = {**self.identity, "fingerprint": saved["fingerprint"]}
        _accept_source_hash(saved, self.identity)
        differs = [key for key in self.identity if saved.get(key) != self.identity[key]]
        if differs:
            details = "; ".join(
                _in_words(
                    _first_difference(
                        saved.get(key), self.identity[key], LABELS.get(key, key)
                    ),
                    space,
                )
                for key in differs
            )
            raise CheckpointMismatchError(
                f"checkpoint {self.path} was written by a run with other settings "
                f"({details}). Resume with the same settings, or start afresh with "
                "another checkpoint path (or delete this one)."
            )


def _accept_source_hash(saved: dict[str, Any], identity: dict[str, Any]) -> None:
    """A journal of an earlier treebo fingerprinted the objective by a hash of its
    source text, which this one no longer computes: such a journal is checked by the
    objective's name (``saved`` is updated to read as this treebo's)."""
    old = saved.get("fingerprint", {}).get("objective", {})
    new = identity.get("fingerprint", {}).get("objective", {})
    if "source_sha256" in old and "code_sha256" in new and old["name"] == new["name"]:
        saved["fingerprint"]["objective"] = dict(new)


def _write_atomically(path: Path, text: str) -> None:
    """Replace ``path`` by ``text`` (a temporary file, then a rename)."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _first_difference(old: Any, new: Any, where: str) -> tuple[str, Any, Any]:
    """The first place where two JSON values differ: its path (e.g.
    ``space.bounds[1][3]``) and the two values there."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in [*old, *(k for k in new if k not in old)]:
            if old.get(key) != new.get(key):
                return _first_difference(old.get(key), new.get(key), f"{where}.{key}")
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            if a != b:
                return _first_difference(a, b, f"{where}[{i}]")
    return where, old, new


def _in_words(difference: tuple[str, Any, Any], space: TreeSpace) -> str:
    """A difference of ``_first_difference()`` as a message names it: a bound of
    the space by its parameter and in its units (``C: high 100 in the checkpoint,
    1000 in this run``), anything else by its place in the run's identity."""
    where, old, new = difference
    if where.startswith("fingerprint.objective"):
        what = "its code, a function of yours that it calls, or a value it reads"
        what = "its name" if where.endswith(".name") else what
        return (
            f"the objective changed ({what}: {_short(old)} in the checkpoint, "
            f"{_short(new)} in this run)"
        )
    if where.startswith("fingerprint.candidates"):
        return "the candidate pool changed (other rows, not another order)"
    bound = re.fullmatch(r"space\.bounds\[([01])\]\[(\d+)\]", where)
    if bound is not None and isinstance(old, (int, float)):
        name = space.parameter_names[int(bound[2])]
        param = space.columns[name].param
        side = ("low", "high")[int(bound[1])]
        log = getattr(param, "log_scale", False)
        old, new = (10.0**old, 10.0**new) if log else (old, new)
        return f"{name}: {side} {old:g} in the checkpoint, {new:g} in this run"
    return f"{where}: checkpoint {_short(old)}, this run {_short(new)}"


def _short(value: Any, limit: int = 120) -> str:
    text = json.dumps(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def checkpoint_header(path: str | os.PathLike) -> dict[str, Any]:
    """The first line of a checkpoint: its format, version and run identity (space,
    strategy as ``"model"``, options, seed, ``maximize``, initial design size).

    Raises:
        FileNotFoundError: If there is no file at ``path``.
        ValueError: If ``path`` is not a treebo checkpoint.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint {path} not found.")
    try:
        with open(path) as fh:
            header = json.loads(fh.readline())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        header = None
    if not isinstance(header, dict) or header.get("format") != _FORMAT:
        raise ValueError(f"{path} is not a treebo checkpoint.")
    return header


def checkpoint_space(path: str | os.PathLike) -> TreeSpace:
    """The space a checkpoint holds in its header.

    Raises:
        FileNotFoundError: If there is no file at ``path``.
        ValueError: If ``path`` is not a treebo checkpoint, or it does not hold its
            space (labels that JSON cannot hold: give the space).
    """
    spec = checkpoint_header(path).get("space_spec")
    if spec is None:
        raise ValueError(
            f"checkpoint {path} does not hold its space (its labels are not JSON "
            "strings or numbers); give the run's space."
        )
    return space_from_dict(spec)


def read_checkpoint(
    path: str | os.PathLike, space: TreeSpace | None = None
) -> OptimizationResult:
    """The trials of a checkpoint as an
    [`OptimizationResult`][treebo.loop.history.OptimizationResult], read without opening
    the run (no lock, no compaction; any model settings).

    Its recommendation is the one the run made
    ([`TreeOptimizer.result()`][treebo.loop.optimizer.TreeOptimizer.result], as
    [`minimize()`][treebo.loop.run.minimize] returned it), where the run recommended
    after its last trial; otherwise (a run stopped early, or an ask/tell run that never
    asked for its result) the best observation, with ``recommended_by ==
    "observation"``.

    Args:
        path: The checkpoint file.
        space: The run's space; default: the one the checkpoint holds
            ([`checkpoint_space()`][treebo.loop.checkpoint.checkpoint_space]).

    Raises:
        FileNotFoundError: If there is no file at ``path``.
        ValueError: If ``path`` is not a treebo checkpoint, or ``space`` is not given
            and the checkpoint does not hold its space.
        CheckpointMismatchError: If the checkpoint is of another space.
    """
    header = checkpoint_header(path)
    if space is None:
        space = checkpoint_space(path)
    identity = {k: v for k, v in header.items() if k not in ("format", "version")}
    identity["space"] = json.loads(json.dumps(space_signature(space)))
    saved = Journal(path, identity)._read(space)
    recommended = None
    if saved.recommendation is not None:
        fields_ = {k: saved.recommendation[k] for k in Recommendation._fields}
        recommended = Recommendation(**fields_)
    return result_of(saved.history, bool(header.get("maximize")), recommended)
