"""Search spaces written as data: a JSON or YAML file, or a Python object path.

The file holds the root vertex. A vertex is a mapping with optional
``params`` (a list) and ``choices`` (a mapping from a choice's name to its
options, each option's label mapped to the vertex it leads to; ``{}`` or
``null`` for an option that owns nothing). A parameter is a mapping with a
``name`` and a ``type``:

=================  ===========================================================
``real``           ``low``, ``high``, optional ``log`` (``true``: log scale)
``integer``        ``low``, ``high``, optional ``log``
``categorical``    ``values`` (a list), optional ``ordered``
=================  ===========================================================

A YAML example (an SVM whose kernel decides its parameters)::

    params:
      - {name: C, type: real, low: 0.01, high: 100, log: true}
    choices:
      kernel:
        rbf: {params: [{name: gamma, type: real, low: 1e-4, high: 1, log: true}]}
        poly: {params: [{name: degree, type: integer, low: 2, high: 5}]}
        linear: {}

Example:
    >>> space = space_from_dict({"params": [
    ...     {"name": "lr", "type": "real", "low": 1e-4, "high": 1.0, "log": True}],
    ...     "choices": {"model": {"a": {}, "b": {"params": [
    ...         {"name": "n", "type": "integer", "low": 1, "high": 9}]}}}})
    >>> space.parameter_names
    ['lr', 'model', 'n']
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from treebo.space.parameters import (
    Categorical,
    Choice,
    ConfigurationError,
    Integer,
    Real,
    Vertex,
)
from treebo.space.tree_space import TreeSpace

_KINDS = {"real": Real, "integer": Integer, "categorical": Categorical}


def _parameter(spec: Any, where: str) -> Real | Integer | Categorical:
    if not isinstance(spec, Mapping) or "name" not in spec:
        raise ConfigurationError(f"{where}: a parameter needs a mapping with a name.")
    name, kind = spec["name"], spec.get("type")
    if kind not in _KINDS:
        raise ConfigurationError(
            f"parameter {name!r}: type must be one of {sorted(_KINDS)}, got {kind!r}."
        )
    extra = set(spec) - {"name", "type", "low", "high", "log", "values", "ordered"}
    if extra:
        raise ConfigurationError(f"parameter {name!r}: unknown keys {sorted(extra)}.")
    try:
        if kind == "categorical":
            ordered = _flag(spec.get("ordered", False), name, "ordered")
            return Categorical(name, spec["values"], ordered=ordered)
        return _KINDS[kind](
            name,
            _number(spec["low"], name, "low"),
            _number(spec["high"], name, "high"),
            log_scale=_flag(spec.get("log", False), name, "log"),
        )
    except KeyError as err:
        raise ConfigurationError(
            f"parameter {name!r}: missing {err.args[0]!r}."
        ) from None


def _number(value: Any, name: str, key: str) -> int | float:
    """A bound: a number, or a string that reads as one (YAML 1.1 reads ``1e-4``
    as a string)."""
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            try:
                return float(value)
            except ValueError:
                pass
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    raise ConfigurationError(
        f"parameter {name!r}: {key} must be a number, got {value!r}."
    )


def _flag(value: Any, name: str, key: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigurationError(
            f"parameter {name!r}: {key} must be true or false, got {value!r}."
        )
    return value


def _vertex(spec: Any, where: str) -> Vertex:
    if spec is None:
        return Vertex()
    if not isinstance(spec, Mapping) or set(spec) - {"params", "choices"}:
        raise ConfigurationError(
            f"{where}: a vertex is a mapping with 'params' and 'choices', got {spec!r}."
        )
    params = [_parameter(p, where) for p in spec.get("params") or []]
    choices = []
    for name, options in (spec.get("choices") or {}).items():
        if not isinstance(options, Mapping) or not options:
            raise ConfigurationError(
                f"choice {name!r}: options must map each label to a vertex."
            )
        choices.append(
            Choice(
                name,
                {label: _vertex(v, f"{name}={label}") for label, v in options.items()},
            )
        )
    return Vertex(params, choices)


def space_from_dict(spec: Mapping[str, Any]) -> TreeSpace:
    """The [`TreeSpace`][treebo.space.tree_space.TreeSpace] whose root vertex ``spec``
    describes (module docstring).

    Raises:
        ConfigurationError: Naming the parameter or choice that is malformed.
    """
    return TreeSpace(_vertex(spec, "root"))


def load_space(source: str) -> TreeSpace:
    """A space from a ``.json``/``.yaml``/``.yml`` file or a ``module:attribute``
    path (a [`TreeSpace`][treebo.space.tree_space.TreeSpace], an object with a
    ``space``, or a function returning either).

    Raises:
        ConfigurationError: If ``source`` is neither, or does not give a space.
    """
    path = Path(source)
    if path.suffix in (".json", ".yaml", ".yml"):
        try:
            return space_from_dict(_read_spec(path))
        except ConfigurationError as err:
            raise ConfigurationError(f"space file {source}: {err}") from None
    obj = load_object(source)
    if callable(obj) and not isinstance(obj, TreeSpace):
        obj = obj()
    obj = getattr(obj, "space", obj)
    if not isinstance(obj, TreeSpace):
        raise ConfigurationError(
            f"{source!r} gives a {type(obj).__name__}, not a TreeSpace."
        )
    return obj


def _read_spec(path: Path) -> Any:
    """The parsed contents of a JSON or YAML space file."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ConfigurationError("not found.") from None
    except OSError as err:
        raise ConfigurationError(f"cannot be read ({err.strerror}).") from None
    if path.suffix == ".json":
        try:
            spec = json.loads(text)
        except json.JSONDecodeError as err:
            raise ConfigurationError(
                f"invalid JSON at line {err.lineno}, column {err.colno}: {err.msg}."
            ) from None
    else:
        try:
            import yaml
        except ImportError:  # pragma: no cover - exercised without pyyaml
            raise ConfigurationError("a YAML space file needs pyyaml.") from None
        try:
            spec = yaml.safe_load(text)
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None)
            where = (
                f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
            )
            problem = getattr(err, "problem", None) or "a syntax error"
            raise ConfigurationError(f"invalid YAML{where}: {problem}.") from None
    if not isinstance(spec, Mapping):
        raise ConfigurationError(
            f"the root vertex must be a mapping, got {type(spec).__name__}."
        )
    return spec


def load_object(source: str) -> Any:
    """The object at ``module:attribute`` (``attribute`` may be dotted)."""
    module_name, _, attribute = source.partition(":")
    if not module_name or not attribute:
        raise ConfigurationError(
            f"{source!r}: expected module:attribute (or a .json/.yaml file)."
        )
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as err:
        raise ConfigurationError(f"cannot load {source!r}: {err}") from None
    return obj
