"""The parameters of a tree-structured space and the
[`Vertex`][treebo.space.parameters.Vertex] that owns
them: [`Real`][treebo.space.parameters.Real],
[`Integer`][treebo.space.parameters.Integer] and
[`Categorical`][treebo.space.parameters.Categorical] parameters are modelled inside
their vertex; a [`Choice`][treebo.space.parameters.Choice] selects the
vertices below."""

from __future__ import annotations

import math
import numbers
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


class ConfigurationError(ValueError):
    """A configuration does not fit the space; the message names the parameter."""


@dataclass(frozen=True)
class Real:
    """A continuous parameter on ``[lower, upper]``.

    Args:
        name: Unique name.
        lower: Lower bound.
        upper: Upper bound (``> lower``).
        log_scale: Model and sample the parameter on a ``log10`` scale
            (requires ``lower > 0``).
    """

    name: str
    lower: float
    upper: float
    log_scale: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ConfigurationError(
                f"Real: name must be a non-empty string, got {self.name!r}."
            )
        for bound in ("lower", "upper"):
            try:
                object.__setattr__(self, bound, as_real_number(getattr(self, bound)))
            except TypeError as err:
                raise TypeError(
                    f"Real {self.name!r}: {bound} must be a number, got {err}."
                ) from None
        lo, up = self.lower, self.upper
        if not isinstance(self.log_scale, bool):
            raise TypeError(
                f"Real {self.name!r}: log_scale must be a bool, got {self.log_scale!r}."
            )
        if not (math.isfinite(lo) and math.isfinite(up)) or not lo < up:
            raise ConfigurationError(
                f"Real {self.name!r}: need finite lower < upper, got [{lo}, {up}]."
            )
        if self.log_scale and lo <= 0:
            raise ConfigurationError(
                f"Real {self.name!r}: log_scale needs lower > 0, got {lo}."
            )

    def check(self, value: Any) -> float:
        """``value`` as a float within the bounds.

        Values beyond a bound by round-off (``1e-9`` of the range's scale,
        e.g. from a log/exp round trip) are clamped to it.

        Raises:
            ConfigurationError: Naming the parameter, if ``value`` is not a
                finite real number within the bounds.
        """
        try:
            value = as_real_number(value)
        except TypeError as err:
            raise ConfigurationError(
                f"parameter {self.name!r} must be a real number, got {err}."
            ) from None
        if not math.isfinite(value):
            raise ConfigurationError(f"parameter {self.name!r} is not finite: {value}.")
        tol = 1e-9 * max(1.0, abs(self.lower), abs(self.upper))
        if not self.lower - tol <= value <= self.upper + tol:
            raise ConfigurationError(
                f"parameter {self.name!r} = {value} is outside "
                f"[{self.lower}, {self.upper}]."
            )
        return min(max(value, self.lower), self.upper)

    @property
    def model_bounds(self) -> tuple[float, float]:
        """Bounds in the tensor representation (``log10`` if ``log_scale``)."""
        if self.log_scale:
            return math.log10(self.lower), math.log10(self.upper)
        return float(self.lower), float(self.upper)


@dataclass(frozen=True)
class Integer:
    """An integer parameter on ``{low, ..., high}``, returned as ``int``.

    Modelled as a continuous input of its vertex's kernel and optimized as an
    integer (relaxed, rounded, then improved by steps to neighbouring integers).

    Args:
        name: Unique name.
        low: Smallest value.
        high: Largest value (``> low``).
        log_scale: Model and sample the parameter on a ``log10`` scale
            (requires ``low >= 1``).

    Example:
        >>> Integer("n_estimators", 10, 500, log_scale=True).check(64.0)
        64
    """

    name: str
    low: int
    high: int
    log_scale: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ConfigurationError(
                f"Integer: name must be a non-empty string, got {self.name!r}."
            )
        for bound in ("low", "high"):
            try:
                object.__setattr__(self, bound, _as_integer(getattr(self, bound)))
            except (TypeError, ValueError) as err:
                raise type(err)(
                    f"Integer {self.name!r}: {bound} must be an integer, got {err}."
                ) from None
        if not isinstance(self.log_scale, bool):
            raise TypeError(
                f"Integer {self.name!r}: log_scale must be a bool, got "
                f"{self.log_scale!r}."
            )
        if not self.low < self.high:
            raise ConfigurationError(
                f"Integer {self.name!r}: need low < high, got [{self.low}, "
                f"{self.high}]."
            )
        if self.log_scale and self.low < 1:
            raise ConfigurationError(
                f"Integer {self.name!r}: log_scale needs low >= 1, got {self.low}."
            )

    def check(self, value: Any) -> int:
        """``value`` as an ``int`` within the bounds.

        Raises:
            ConfigurationError: Naming the parameter, if ``value`` is not an
                integer (``3`` and ``3.0`` are; ``3.5`` and ``True`` are not)
                within the bounds.
        """
        try:
            number = _as_integer(value)
        except (TypeError, ValueError) as err:
            raise ConfigurationError(
                f"parameter {self.name!r} must be an integer, got {err}."
            ) from None
        if not self.low <= number <= self.high:
            raise ConfigurationError(
                f"parameter {self.name!r} = {int(number)} is outside "
                f"[{self.low}, {self.high}]."
            )
        return int(number)

    @property
    def model_bounds(self) -> tuple[float, float]:
        """Bounds in the tensor representation (``log10`` if ``log_scale``)."""
        if self.log_scale:
            return math.log10(self.low), math.log10(self.high)
        return float(self.low), float(self.high)


@dataclass(frozen=True)
class Categorical:
    """A categorical parameter that selects no sub-tree.

    Unordered categoricals are modelled with a delta (one-hot) kernel that
    multiplies the rest of their vertex's kernel, so they interact with its
    other parameters; ordered ones as the integer rank of their value.

    Args:
        name: Unique name.
        values: The labels, as for a [`Choice`][treebo.space.parameters.Choice]'s list
            of labels.
        ordered: The values' order is meaningful (e.g. ``["low", "mid",
            "high"]``).

    Example:
        >>> Categorical("criterion", ["gini", "entropy"]).match("gini")
        'gini'
    """

    name: str
    values: tuple[Hashable, ...]
    ordered: bool = False

    def __init__(
        self, name: str, values: Sequence[Hashable], ordered: bool = False
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ConfigurationError(
                f"Categorical: name must be a non-empty string, got {name!r}."
            )
        labels = _checked_labels(f"Categorical {name!r}", values)
        if not isinstance(ordered, bool):
            raise TypeError(
                f"Categorical {name!r}: ordered must be a bool, got {ordered!r}."
            )
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "values", tuple(labels))
        object.__setattr__(self, "ordered", ordered)

    @property
    def labels(self) -> list[Hashable]:
        return list(self.values)

    def match(self, value: Any) -> Hashable:
        """The label equal to ``value`` (see
        [`Choice.match()`][treebo.space.parameters.Choice.match]).

        Raises:
            ConfigurationError: If no label equals ``value``.
        """
        return _match_label("categorical", self.name, self.values, value)


@dataclass(frozen=True)
class Choice:
    """A categorical parameter whose options lead to child vertices.

    Args:
        name: Unique name.
        options: ``{label: Vertex}``, or a sequence of labels (each leading to
            an empty vertex). Labels are hashable, not NaN, and distinct as
            dict keys: ``0``, ``0.0`` and ``False`` are one label in Python,
            so a list holding two of them is refused.

    Example:
        >>> Choice("optimizer", ["adam", "sgd"]).labels
        ['adam', 'sgd']
    """

    name: str
    options: Mapping[Hashable, Vertex]

    def __init__(
        self, name: str, options: Mapping[Hashable, Vertex] | Sequence[Hashable]
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ConfigurationError(
                f"Choice: name must be a non-empty string, got {name!r}."
            )
        if not isinstance(options, Mapping):
            labels = _checked_labels(
                f"Choice {name!r}",
                options,
                "options must be a dict or a list of labels",
            )
            options = {label: Vertex() for label in labels}
        if len(options) == 0:
            raise ConfigurationError(f"Choice {name!r}: needs at least one option.")
        for label, child in options.items():
            _check_label(f"Choice {name!r}", label)
            if not isinstance(child, Vertex):
                raise TypeError(
                    f"Choice {name!r}: option {label!r} must lead to a Vertex, got "
                    f"{type(child).__name__}."
                )
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "options", dict(options))

    @property
    def labels(self) -> list[Hashable]:
        return list(self.options)

    @property
    def selects_subtree(self) -> bool:
        """Whether some option owns a parameter (else the choice is modelled
        as a plain [`Categorical`][treebo.space.parameters.Categorical])."""
        return any(child.params or child.choices for child in self.options.values())

    def match(self, value: Any) -> Hashable:
        """The label equal to ``value`` (so ``1.0`` and ``numpy.int64(1)``
        give the label ``1``).

        Raises:
            ConfigurationError: If no label equals ``value``.
        """
        return _match_label("choice", self.name, self.options, value)


@dataclass(frozen=True)
class Vertex:
    """A vertex of the tree: parameters and choices leading below.

    Args:
        params: [`Real`][treebo.space.parameters.Real],
            [`Integer`][treebo.space.parameters.Integer] and
            [`Categorical`][treebo.space.parameters.Categorical] parameters owned by
            this vertex (shared by every leaf below it). The same parameter object
            listed in several options of one [`Choice`][treebo.space.parameters.Choice]
            is one parameter, active under each of them (ConfigSpace's ``InCondition``).
        choices: Choices made at this vertex.

    Example:
        >>> gamma = Real("gamma", 1e-4, 1.0, log_scale=True)
        >>> svm = Vertex(choices=[Choice("kernel", {
        ...     "rbf": Vertex([gamma]),
        ...     "poly": Vertex([gamma, Integer("degree", 2, 5)]),
        ...     "linear": Vertex(),
        ... })])
    """

    params: Sequence[Real | Integer | Categorical] = ()
    choices: Sequence[Choice] = ()
    name: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        kinds = (("params", "Real, Integer or Categorical"), ("choices", "Choice"))
        for field_name, kind in kinds:
            value = getattr(self, field_name)
            if isinstance(value, (*PARAMETER_TYPES, Choice, str)) or not isinstance(
                value, Iterable
            ):
                raise TypeError(
                    f"Vertex {field_name} must be a list of {kind}, got {value!r}."
                )
            object.__setattr__(self, field_name, tuple(value))
        for p in self.params:
            if not isinstance(p, PARAMETER_TYPES):
                raise TypeError(
                    "Vertex params must be Real, Integer or Categorical, got "
                    f"{type(p).__name__}."
                )
        for c in self.choices:
            if not isinstance(c, Choice):
                raise TypeError(
                    f"Vertex choices must be Choice, got {type(c).__name__}."
                )


#: The kinds of parameter a vertex owns (a
#: [`Choice`][treebo.space.parameters.Choice] is listed apart).
PARAMETER_TYPES = (Real, Integer, Categorical)

Parameter = Real | Integer | Categorical


def _check_label(owner: str, label: Any) -> None:
    """Refuse labels that cannot be told apart or looked up."""
    if not isinstance(label, Hashable):
        raise TypeError(
            f"{owner}: label {label!r} is not hashable "
            f"({type(label).__name__}); use a tuple instead of a list."
        )
    if isinstance(label, float) and math.isnan(label):
        raise ConfigurationError(f"{owner}: NaN is not a label.")


def _checked_labels(
    owner: str, labels: Any, expected: str = "values must be a list of labels"
) -> list[Hashable]:
    """``labels`` as a list of distinct, hashable labels (``owner`` names the
    parameter in errors, ``expected`` what it takes)."""
    if isinstance(labels, (str, bytes)):
        raise TypeError(
            f"{owner}: {expected}, got the string {labels!r} (write "
            f"[{labels!r}] for one label)."
        )
    if not isinstance(labels, Iterable) or isinstance(labels, Mapping):
        raise TypeError(f"{owner}: {expected}, got {type(labels).__name__}.")
    labels = list(labels)
    if not labels:
        raise ConfigurationError(f"{owner}: needs at least one label.")
    for label in labels:
        _check_label(owner, label)
    merged = _merged_labels(labels)
    if merged:
        raise ConfigurationError(
            f"{owner}: labels {merged} are equal as dict keys (e.g. 0, 0.0 and "
            "False); give distinct labels."
        )
    return labels


def _match_label(kind: str, name: str, labels: Iterable[Hashable], value: Any):
    """The label of ``labels`` equal to ``value``, or a ``ConfigurationError``."""
    try:
        hash(value)
        for label in labels:
            if label == value and hash(label) == hash(value):
                return label
    except TypeError:  # unhashable
        pass
    raise ConfigurationError(
        f"invalid value {value!r} for {kind} {name!r}; expected one of {list(labels)}."
    )


def _merged_labels(labels: list[Any]) -> list[Any]:
    """Labels that collide with an earlier one as dict keys (``0 == False``)."""
    seen: dict[Any, Any] = {}
    merged = []
    for label in labels:
        if label in seen:
            merged.extend([seen[label], label])
        else:
            seen[label] = label
    return merged


def _as_integer(value: Any) -> int:
    """``value`` as an ``int``, if it is one integral real number (``3``,
    ``3.0``, ``numpy.int64(3)``; not ``3.5`` or ``True``).

    Raises:
        TypeError: If it is not a real number; ``ValueError`` if it is not
            integral. The message is ``value`` (and its type).
    """
    number = as_real_number(value)
    if not (math.isfinite(number) and number.is_integer()):
        raise ConfigurationError(repr(value))
    return int(number)


def as_real_number(value: Any) -> float:
    """``value`` as a float, if it is one real number.

    Real numbers are Python and NumPy ints and floats, and one-element tensors
    or arrays of a real dtype; strings, booleans and complex numbers are not.

    Raises:
        TypeError: Otherwise; the message is ``value`` and its type, for the
            caller to name what was expected where.

    Example:
        >>> as_real_number(3)
        3.0
    """
    if hasattr(value, "item") and hasattr(value, "dtype"):  # tensors, arrays
        size = value.numel() if hasattr(value, "numel") else value.size
        if size != 1:
            raise TypeError(f"{value!r} ({type(value).__name__} of {size} elements)")
        value = value.item()
    if isinstance(value, (str, bytes, bool)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{value!r} (type {type(value).__name__})")
    return float(value)
