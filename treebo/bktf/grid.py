r"""The Cartesian grid BKTF lives on: $S = S_1 \times \dots \times S_D$.

Each mode $d$ is a finite, sorted set of encoded values $S_d$: evenly spaced
values of a real parameter (on its model scale, ``log10`` where the parameter is
log-scaled), the integers of an integer parameter (evenly spaced ones where there
are more than the resolution), or the codes of a categorical one. A point of the
grid is a multi-index $(i_1, \dots, i_D)$, or its flat (row-major) index
$\sum_d i_d \prod_{h > d} |S_h|$; the grid is never materialized.

Example:
    >>> import torch
    >>> from treebo.space import Categorical, Integer, Real, TreeSpace, Vertex
    >>> space = TreeSpace(Vertex([Real("x", 0.0, 1.0), Integer("n", 1, 3),
    ...                           Categorical("c", ["a", "b"])]))
    >>> grid = Grid.from_space(space, resolution=5)
    >>> grid.sizes, grid.numel
    ((5, 3, 2), 30)
    >>> grid.indices(torch.tensor([[0.25, 2.0, 1.0]]))
    tensor([[1, 1, 1]])
    >>> grid.snap(torch.tensor([[0.3, 2.2, 0.9]]))
    tensor([[0.2500, 2.0000, 1.0000]])
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor

from treebo.space import ConfigurationError, Integer, TreeSpace


class Grid:
    """A Cartesian grid of encoded values, one sorted set per mode.

    Args:
        values: One 1-D tensor of distinct values per mode (sorted here).
        categorical: One bool per mode: ``True`` where the mode's values are
            unordered labels (no distance between them).

    Raises:
        ValueError: If a mode has no value, repeats one, or is not finite.
    """

    def __init__(
        self, values: Sequence[Tensor], categorical: Sequence[bool] | None = None
    ) -> None:
        if len(values) == 0:
            raise ValueError("values must hold at least one mode.")
        self.values: list[Tensor] = []
        for d, v in enumerate(values):
            v = torch.as_tensor(v).flatten()
            if v.numel() == 0 or not bool(v.isfinite().all()):
                raise ValueError(f"values[{d}] must be a non-empty finite tensor.")
            v = v.sort().values
            if bool((v[1:] == v[:-1]).any()):
                raise ValueError(f"values[{d}] repeats a value.")
            self.values.append(v)
        if categorical is None:
            categorical = [False] * len(self.values)
        if len(categorical) != len(self.values):
            raise ValueError(
                f"categorical has {len(categorical)} entries for "
                f"{len(self.values)} modes."
            )
        self.categorical = tuple(bool(c) for c in categorical)

    @classmethod
    def from_space(cls, space: TreeSpace, resolution: int = 50) -> Grid:
        """The grid of a space without choices.

        Args:
            space: A space of `Real`, `Integer` and `Categorical` parameters.
            resolution: Values per real parameter (evenly spaced on its model
                scale, bounds included) and the most per integer parameter.

        Raises:
            ConfigurationError: Naming a choice that selects a sub-tree.
            ValueError: If ``resolution < 2``.
        """
        if isinstance(resolution, bool) or not isinstance(resolution, int):
            raise ValueError(f"resolution must be an integer >= 2, got {resolution!r}.")
        if resolution < 2:
            raise ValueError(f"resolution must be an integer >= 2, got {resolution}.")
        if space.choice_columns:
            name = space.parameter_names[space.choice_columns[0]]
            raise ConfigurationError(
                f"a grid needs a space without conditional parameters; {name!r} "
                "is a choice that selects a sub-tree."
            )
        categorical_codes = space.categorical_values
        values, categorical = [], []
        for column, name in enumerate(space.parameter_names):
            lo, hi = (float(b) for b in space.bounds[:, column])
            if column in categorical_codes:
                v = torch.tensor(categorical_codes[column], dtype=torch.float64)
            elif column in space.integer_columns:
                v = _integer_values(space.columns[name].param, lo, hi, resolution)
            else:
                v = torch.linspace(lo, hi, resolution, dtype=torch.float64)
            values.append(v)
            categorical.append(column in categorical_codes)
        return cls(values, categorical)

    # ------------------------------------------------------------ sizes
    @property
    def dim(self) -> int:
        """The number of modes $D$."""
        return len(self.values)

    @property
    def sizes(self) -> tuple[int, ...]:
        r"""$(|S_1|, \dots, |S_D|)$."""
        return tuple(v.numel() for v in self.values)

    @property
    def numel(self) -> int:
        r"""The number of grid points, $\prod_d |S_d|$."""
        return math.prod(self.sizes)

    def unit_values(self, d: int) -> Tensor:
        """Mode ``d``'s values mapped to ``[0, 1]`` (its kernel's inputs)."""
        v = self.values[d]
        span = (v[-1] - v[0]).clamp_min(torch.finfo(v.dtype).tiny)
        return (v - v[0]) / span

    # ------------------------------------------------- points <-> indices
    def indices(self, X: Tensor, atol: float | None = None) -> Tensor:
        """Multi-indices of points on the grid.

        Args:
            X: ``... x D`` encoded points.
            atol: Largest distance to a grid value, as a fraction of each
                mode's range (default ``1e-6``).

        Returns:
            ``... x D`` long tensor of per-mode indices.

        Raises:
            ValueError: If ``X`` has the wrong width or a point is off the grid,
                naming the mode and the nearest grid value.
        """
        index, gap = self._nearest(X)
        tol = 1e-6 if atol is None else atol
        off = gap > tol
        if bool(off.any()):
            where = off.nonzero()[0].tolist()
            d = where[-1]
            value = float(X[tuple(where)])
            nearest = float(self.values[d][index[tuple(where)]])
            raise ValueError(
                f"X is off the grid: mode {d} holds {value}, nearest grid value "
                f"{nearest}. BKTF is defined on its grid only; move points onto "
                "it with Grid.snap()."
            )
        return index

    def snap(self, X: Tensor) -> Tensor:
        """``X`` (``... x D``) with each coordinate moved to the nearest grid
        value."""
        index, _ = self._nearest(X)
        return self.points(index).to(X)

    def points(self, index: Tensor) -> Tensor:
        """The encoded points (``... x D``, float64) of multi-indices
        ``index`` (``... x D``)."""
        return torch.stack(
            [self.values[d].to(index.device)[index[..., d]] for d in range(self.dim)],
            dim=-1,
        )

    def flat(self, index: Tensor) -> Tensor:
        """Flat row-major indices (``...``) of multi-indices (``... x D``)."""
        strides = torch.tensor(self._strides(), device=index.device)
        return (index * strides).sum(-1)

    def unflatten(self, flat: Tensor) -> Tensor:
        """Multi-indices (``... x D``) of flat indices (``...``)."""
        strides = torch.tensor(self._strides(), device=flat.device)
        sizes = torch.tensor(self.sizes, device=flat.device)
        return flat.unsqueeze(-1).div(strides, rounding_mode="floor") % sizes

    def _strides(self) -> list[int]:
        sizes = self.sizes
        return [math.prod(sizes[d + 1 :]) for d in range(self.dim)]

    def _nearest(self, X: Tensor) -> tuple[Tensor, Tensor]:
        if X.shape[-1] != self.dim:
            raise ValueError(
                f"X must have {self.dim} columns (one per mode), got shape "
                f"{tuple(X.shape)}."
            )
        index, gap = [], []
        for d, v in enumerate(self.values):
            v = v.to(X)
            dist = (X[..., d : d + 1] - v).abs()
            gap_d, index_d = dist.min(-1)
            span = float(v[-1] - v[0]) if v.numel() > 1 else 1.0
            index.append(index_d)
            gap.append(gap_d / max(span, 1e-300))
        return torch.stack(index, -1), torch.stack(gap, -1)

    def __repr__(self) -> str:
        return f"Grid(sizes={self.sizes}, categorical={self.categorical})"


def _integer_values(param: object, lo: float, hi: float, resolution: int) -> Tensor:
    """The encoded values of an integer column: every integer where there are at
    most ``resolution``, else ``resolution`` evenly spaced ones (on the log scale
    for a log-scaled `Integer`)."""
    log = isinstance(param, Integer) and param.log_scale
    if log:
        low, high = round(10**lo), round(10**hi)
    else:
        low, high = round(lo), round(hi)
    if high - low + 1 <= resolution:
        ints = torch.arange(low, high + 1, dtype=torch.float64)
    else:
        grid = torch.linspace(lo, hi, resolution, dtype=torch.float64)
        ints = (10**grid if log else grid).round().unique()
    return ints.log10() if log else ints
