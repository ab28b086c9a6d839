"""Search spaces written as data: a JSON or YAML file, or a Python object path.

The file holds the root vertex. A vertex is a mapping with optional
``params`` (a list) and ``choices`` (a mapping from a choice's name to its
options, each option's label mapped to the vertex it leads to; ``{}`` or
``null`` for an option that owns nothing; labels that are not strings, as JSON
writes them: a list of ``[label, vertex]`` pairs). A parameter is a mapping with a
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
    if not isinstance(spec, Mapping):
        raise ConfigurationError(
            f"{where}: a vertex is a mapping with 'params' and 'choices', got a "
            f"{type(spec).__name__}."
        )
    unknown = sorted(map(str, set(spec) - {"params", "choices"}))
    if unknown:
        raise ConfigurationError(
            f"{where}: unknown keys {unknown} (a vertex takes 'params' and 'choices')."
        )
    params = [_parameter(p, where) for p in spec.get("params") or []]
    choices = []
    for name, options in (spec.get("choices") or {}).items():
        if _is_pairs(options):
            options = dict(options)
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


def space_to_dict(space: TreeSpace) -> dict[str, Any] | None:
    """The spec of ``space`` that
    [`space_from_dict()`][treebo.space.spec.space_from_dict] reads back, as JSON data;
    ``None`` where a label is not a JSON scalar (a string, number, bool or null) and
    could not survive the round trip.

    Example:
        >>> spec = {"params": [{"name": "x", "type": "real", "low": 0, "high": 1}]}
        >>> space_to_dict(space_from_dict(spec))
        {'params': [{'name': 'x', 'type': 'real', 'low': 0.0, 'high': 1.0}]}
    """
    try:
        spec = _vertex_spec(space.root)
        same = json.loads(json.dumps(spec)) == spec
    except (TypeError, ValueError):  # a label or bound JSON cannot hold
        return None
    return spec if same else None


def _vertex_spec(vertex: Vertex) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if vertex.params:
        spec["params"] = [_parameter_spec(p) for p in vertex.params]
    if vertex.choices:
        spec["choices"] = {c.name: _options_spec(c) for c in vertex.choices}
    return spec


def _options_spec(choice: Choice) -> dict[str, Any] | list[list[Any]]:
    """A choice's options: a mapping where every label is a string, else a list of
    ``[label, vertex]`` pairs (JSON's keys are strings)."""
    if all(isinstance(x, str) for x in choice.options):
        return {x: _vertex_spec(v) for x, v in choice.options.items()}
    return [[_label(x), _vertex_spec(v)] for x, v in choice.options.items()]


def _parameter_spec(param: Real | Integer | Categorical) -> dict[str, Any]:
    if isinstance(param, Categorical):
        spec = {"name": param.name, "type": "categorical"}
        spec["values"] = [_label(x) for x in param.values]
        return {**spec, "ordered": True} if param.ordered else spec
    low, high = (
        (param.lower, param.upper)
        if isinstance(param, Real)
        else (
            param.low,
            param.high,
        )
    )
    kind = "real" if isinstance(param, Real) else "integer"
    spec = {"name": param.name, "type": kind, "low": low, "high": high}
    return {**spec, "log": True} if param.log_scale else spec


def _label(label: Any) -> Any:
    """A label as JSON holds it (a scalar), or ``TypeError``."""
    if label is None or isinstance(label, (str, bool, int, float)):
        return label
    raise TypeError(label)


def _is_pairs(options: Any) -> bool:
    """Whether ``options`` is a non-empty list of ``[label, vertex]`` pairs."""
    return (
        isinstance(options, list)
        and bool(options)
        and all(isinstance(p, list) and len(p) == 2 for p in options)
    )


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
