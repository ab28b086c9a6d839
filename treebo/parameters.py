"""The parameters of a tree-structured space: :class:`Real`, :class:`Choice`,
and the :class:`Vertex` that owns them."""

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
            raise ValueError(
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
            raise ValueError(
                f"Real {self.name!r}: need finite lower < upper, got [{lo}, {up}]."
            )
        if self.log_scale and lo <= 0:
            raise ValueError(
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
            raise ValueError(f"Choice: name must be a non-empty string, got {name!r}.")
        if isinstance(options, (str, bytes)):
            raise TypeError(
                f"Choice {name!r}: options must be a dict or a list of labels, got "
                f"the string {options!r} (write [{options!r}] for one label)."
            )
        if not isinstance(options, Mapping):
            if not isinstance(options, Iterable):
                raise TypeError(
                    f"Choice {name!r}: options must be a dict or a list of labels, "
                    f"got {type(options).__name__}."
                )
            labels = list(options)
            for label in labels:
                _check_label(name, label)
            merged = _merged_labels(labels)
            if merged:
                raise ValueError(
                    f"Choice {name!r}: labels {merged} are equal as dict keys "
                    "(e.g. 0, 0.0 and False); give distinct labels."
                )
            options = {label: Vertex() for label in labels}
        if len(options) == 0:
            raise ValueError(f"Choice {name!r}: needs at least one option.")
        for label, child in options.items():
            _check_label(name, label)
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

    def match(self, value: Any) -> Hashable:
        """The label equal to ``value`` (so ``1.0`` and ``numpy.int64(1)``
        give the label ``1``).

        Raises:
            ConfigurationError: If no label equals ``value``.
        """
        try:
            if value in self.options:
                return next(label for label in self.options if label == value)
        except TypeError:  # unhashable
            pass
        raise ConfigurationError(
            f"invalid value {value!r} for choice {self.name!r}; expected one of "
            f"{self.labels}."
        )


@dataclass(frozen=True)
class Vertex:
    """A vertex of the tree: continuous parameters and choices leading below.

    Args:
        params: Continuous parameters owned by this vertex (shared by every leaf
            below it).
        choices: Choices made at this vertex.
    """

    params: Sequence[Real] = ()
    choices: Sequence[Choice] = ()
    name: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        for field_name, kind in (("params", "Real"), ("choices", "Choice")):
            value = getattr(self, field_name)
            if isinstance(value, (Real, Choice, str)) or not isinstance(
                value, Iterable
            ):
                raise TypeError(
                    f"Vertex {field_name} must be a list of {kind}, got {value!r}."
                )
            object.__setattr__(self, field_name, tuple(value))
        for p in self.params:
            if not isinstance(p, Real):
                raise TypeError(f"Vertex params must be Real, got {type(p).__name__}.")
        for c in self.choices:
            if not isinstance(c, Choice):
                raise TypeError(
                    f"Vertex choices must be Choice, got {type(c).__name__}."
                )


def _check_label(name: str, label: Any) -> None:
    """Refuse labels that cannot be told apart or looked up."""
    if not isinstance(label, Hashable):
        raise TypeError(
            f"Choice {name!r}: label {label!r} is not hashable "
            f"({type(label).__name__}); use a tuple instead of a list."
        )
    if isinstance(label, float) and math.isnan(label):
        raise ValueError(f"Choice {name!r}: NaN is not a label.")


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
