"""The parameters of a tree-structured space: :class:`Real`, :class:`Choice`,
and the :class:`Vertex` that owns them."""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field


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
        lo, up = float(self.lower), float(self.upper)
        if not (math.isfinite(lo) and math.isfinite(up)) or not lo < up:
            raise ValueError(
                f"Real {self.name!r}: need finite lower < upper, got [{lo}, {up}]."
            )
        if self.log_scale and lo <= 0:
            raise ValueError(
                f"Real {self.name!r}: log_scale needs lower > 0, got {lo}."
            )

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
            an empty vertex).
    """

    name: str
    options: Mapping[Hashable, Vertex]

    def __init__(
        self, name: str, options: Mapping[Hashable, Vertex] | Sequence[Hashable]
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"Choice: name must be a non-empty string, got {name!r}.")
        if not isinstance(options, Mapping):
            options = {label: Vertex() for label in options}
        if len(options) == 0:
            raise ValueError(f"Choice {name!r}: needs at least one option.")
        for label, child in options.items():
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
        object.__setattr__(self, "params", tuple(self.params))
        object.__setattr__(self, "choices", tuple(self.choices))
        for p in self.params:
            if not isinstance(p, Real):
                raise TypeError(f"Vertex params must be Real, got {type(p).__name__}.")
        for c in self.choices:
            if not isinstance(c, Choice):
                raise TypeError(
                    f"Vertex choices must be Choice, got {type(c).__name__}."
                )
