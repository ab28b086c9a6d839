r"""Tree-structured (conditional) search spaces.

A space is a tree of [`Vertex`][treebo.space.parameters.Vertex] objects. Each vertex
owns parameters (`Real`, [`Integer`][treebo.space.parameters.Integer],
[`Categorical`][treebo.space.parameters.Categorical]) and
[`Choice`][treebo.space.parameters.Choice] parameters whose options lead to child
vertices; a parameter on an inner vertex is shared by every leaf below it, and a
parameter listed in several options of
one choice is active under each of them. Example (Jenatton et al., 2017)::

    space = TreeSpace(Vertex(choices=[Choice("x1", {
        0: Vertex([Real("r8", 0, 1)], [Choice("x2", {
            0: Vertex([Real("x4", -1, 1)]), 1: Vertex([Real("x5", -1, 1)])})]),
        1: Vertex([Real("r9", 0, 1)], [Choice("x3", {
            0: Vertex([Real("x6", -1, 1)]), 1: Vertex([Real("x7", -1, 1)])})]),
    })]))

**Tensor layout.** A configuration (a dict of the *active* parameters) maps to a
row of ``d`` columns, one per parameter, in the breadth-first linearization of
Ma & Blaschko (2020, appendix A): vertices in BFS order, each contributing its
parameters then its choices. A choice or categorical column holds its label's
code (the rank of the label, the paper's tag); an integer column holds the
integer; a log-scale parameter holds ``log10`` of its value. Inactive columns
hold a canonical value (the lower bound; code 0). A
[`Choice`][treebo.space.parameters.Choice] whose
options own nothing selects no branch and is modelled as a categorical.
[`TreeSpace.to_hierarchical_dependencies()`][treebo.space.tree_space.TreeSpace.to_hierarchical_dependencies]
describes the branching in
BoTorch's ``{parent_col: {value: [child_cols]}}`` format (a shared parameter's
column is listed under each value that activates it), so BoTorch's models and
treebo's consume the same tensors.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any

import torch
from torch import Tensor

from treebo.space.hierarchical import read_hierarchical_dependencies
from treebo.space.parameter_tree import Column, collect_parameters, column_role
from treebo.space.parameters import (
    Categorical,
    Choice,
    ConfigurationError,
    Integer,
    Vertex,
)
from treebo.space.sampling import from_unit_cube, sample_space
from treebo.space.structure import TreeStructure, dependency_key

__all__ = ["TreeSpace"]


class TreeSpace:
    """A tree-structured search space and its tensor encoding.

    Args:
        root: The root [`Vertex`][treebo.space.parameters.Vertex].

    Attributes:
        dim: Number of columns ``d``.
        bounds: ``2 x d`` float64 tensor of bounds in the tensor representation.
        tree: The [`TreeStructure`][treebo.space.structure.TreeStructure] of the
            columns.
        vertices: The [`Vertex`][treebo.space.parameters.Vertex] objects, in
            breadth-first order.
        columns: ``{name: Column}``: each parameter's column, role and parent
            ([`Column`][treebo.space.parameter_tree.Column]).
        choice_codes: ``{name: {label: code}}`` of choices and categoricals.
        label_column_index: Columns that hold label codes (long tensor).
        label_code_table: Their codes, one row each, ``inf``-padded.
        integer_column_index: Columns of [`Integer`][treebo.space.parameters.Integer]
            parameters.
        integer_log_scale: Which of those are on a log scale.

    Example:
        >>> from treebo.space import Real
        >>> space = TreeSpace(Vertex(
        ...     [Integer("layers", 1, 4), Categorical("act", ["relu", "tanh"])],
        ...     [Choice("opt", {"sgd": Vertex([Real("momentum", 0, 1)]),
        ...                     "adam": Vertex()})]))
        >>> space.to_dict(space.to_tensor(
        ...     {"layers": 3, "act": "tanh", "opt": "sgd", "momentum": 0.5}))
        {'layers': 3, 'act': 'tanh', 'opt': 'sgd', 'momentum': 0.5}
    """

    def __init__(self, root: Vertex, *, _layout: dict[str, Any] | None = None) -> None:
        if not isinstance(root, Vertex):
            raise TypeError(
                f"TreeSpace needs a root Vertex, got {type(root).__name__}."
            )
        self.root = root
        params, parents, vertices = collect_parameters(root)
        self.vertices: tuple[Vertex, ...] = tuple(vertices)
        layout = _layout or {}
        given_cols: Mapping[str, int] | None = layout.get("columns")
        codes: Mapping[str, Mapping[Hashable, float]] = layout.get("codes", {})
        self.columns: dict[str, Column] = {}
        for i, p in enumerate(params):
            col = given_cols[p.name] if given_cols is not None else i
            self.columns[p.name] = Column(
                p.name, col, p, column_role(p), parents[p.name]
            )
        self.dim = len(self.columns)
        if self.dim == 0:
            raise ConfigurationError(
                "TreeSpace: the space has no parameters; give the root Vertex a "
                "parameter or a Choice."
            )
        if sorted(c.column for c in self.columns.values()) != list(range(self.dim)):
            raise ConfigurationError(
                "TreeSpace: columns must be a permutation of 0..d-1."
            )
        self.parameter_names = [
            name
            for name, _ in sorted(self.columns.items(), key=lambda kv: kv[1].column)
        ]
        # Label codes of choices and categoricals (ordered ones: their rank).
        self.choice_codes: dict[str, dict[Hashable, float]] = {}
        for c in self.columns.values():
            if isinstance(c.param, (Choice, Categorical)):
                given = codes.get(c.name)
                self.choice_codes[c.name] = {
                    label: float(given[label]) if given else float(rank)
                    for rank, label in enumerate(c.param.labels)
                }
        bounds = torch.zeros(2, self.dim, dtype=torch.float64)
        for c in self.columns.values():
            if c.name in self.choice_codes:
                vals = list(self.choice_codes[c.name].values())
                lo, up = min(vals), max(vals)
            else:
                lo, up = c.param.model_bounds
            bounds[0, c.column], bounds[1, c.column] = lo, up
        self.bounds = bounds
        canonical = bounds[0].clone()
        for name, label_codes in self.choice_codes.items():
            canonical[self.columns[name].column] = next(iter(label_codes.values()))
        self.canonical_values = canonical
        self.tree = TreeStructure(self.dim, self.to_hierarchical_dependencies())
        label_cols = [self.columns[n].column for n in self.choice_codes]
        self.label_column_index = torch.tensor(label_cols, dtype=torch.long)
        k_max = max([len(v) for v in self.choice_codes.values()], default=1)
        table = torch.full((len(label_cols), k_max), math.inf, dtype=torch.float64)
        for i, label_codes in enumerate(self.choice_codes.values()):
            table[i, : len(label_codes)] = torch.tensor(list(label_codes.values()))
        self.label_code_table = table
        integers = [c for c in self.columns.values() if isinstance(c.param, Integer)]
        self.integer_column_index = torch.tensor(
            [c.column for c in integers], dtype=torch.long
        )
        self.integer_log_scale = torch.tensor([c.param.log_scale for c in integers])
        self._column_vertex = self._map_columns_to_tree_vertices()

    # ------------------------------------------------------------ building
    @classmethod
    def from_hierarchical_dependencies(
        cls,
        hierarchical_dependencies: Mapping[int, Mapping[float, Sequence[int]]],
        bounds: Tensor,
        names: Sequence[str] | None = None,
        log_scale: Iterable[int] = (),
    ) -> TreeSpace:
        """Build a space from BoTorch's ``{parent_col: {value: [child_cols]}}``.

        The tensor layout is the caller's: column ``i`` stays column ``i`` and a
        choice column takes the values named in the dictionary (those values
        are also the choice's labels in dicts). A column listed under several
        values of one parent is one parameter shared by those options; a
        choice whose values all list no columns becomes a categorical.

        Args:
            hierarchical_dependencies: The tree over columns.
            bounds: ``2 x d`` tensor; rows for choice columns are ignored.
            names: Optional parameter names (default ``x0``, ``x1``, ...).
            log_scale: Columns to model on a log scale (bounds then in raw
                units).

        Example:
            >>> space = TreeSpace.from_hierarchical_dependencies(
            ...     {0: {0: [1, 2], 1: [2]}}, torch.tensor([[0.0] * 3, [1.0] * 3]))
            >>> space.to_dict(torch.tensor([1.0, 0.0, 0.25]))
            {'x0': 1, 'x2': 0.25}
        """
        root, layout = read_hierarchical_dependencies(
            hierarchical_dependencies, bounds, names=names, log_scale=log_scale
        )
        return cls(root, _layout=layout)

    def to_hierarchical_dependencies(self) -> dict[int, dict[float, list[int]]]:
        """This space's branching in BoTorch's ``{parent_col: {value: [child_cols]}}``.

        Only choices that select a sub-tree are keys; a parameter shared by
        several options is listed under each of their values.
        """
        deps: dict[int, dict[float, list[int]]] = {}
        for c in self.columns.values():
            if c.role == "choice":
                deps[c.column] = {
                    dependency_key(self.choice_codes[c.name][label]): []
                    for label in c.param.labels
                }
        for c in self.columns.values():
            if c.parent is not None:
                choice = self.columns[c.parent[0]]
                for label in c.parent[1]:
                    code = dependency_key(self.choice_codes[choice.name][label])
                    deps[choice.column][code].append(c.column)
        return {p: {v: sorted(cs) for v, cs in b.items()} for p, b in deps.items()}

    def _map_columns_to_tree_vertices(self) -> Tensor:
        out = torch.zeros(self.dim, dtype=torch.long)
        for v in self.tree.vertices:
            for c in (*v.continuous_columns, *v.choice_columns):
                out[c] = v.index
        return out

    # -------------------------------------------------------------- queries
    def _columns_of(self, *roles: str) -> list[int]:
        return sorted(c.column for c in self.columns.values() if c.role in roles)

    @property
    def continuous_columns(self) -> list[int]:
        """Columns optimized by gradient: real and (relaxed) integer columns."""
        return self._columns_of("real", "integer")

    @property
    def real_columns(self) -> list[int]:
        """Columns of `Real` parameters."""
        return self._columns_of("real")

    @property
    def integer_columns(self) -> list[int]:
        """Integer columns ([`Integer`][treebo.space.parameters.Integer] and ordered
        [`Categorical`][treebo.space.parameters.Categorical])."""
        return self._columns_of("integer")

    @property
    def categorical_columns(self) -> list[int]:
        """Unordered categoricals, and choices whose options own nothing."""
        return self._columns_of("categorical")

    @property
    def choice_columns(self) -> list[int]:
        """Choices that select a sub-tree."""
        return self._columns_of("choice")

    @property
    def categorical_values(self) -> dict[int, list[float]]:
        """``{column: codes}`` of the categorical columns, for the models."""
        return {
            c.column: list(self.choice_codes[c.name].values())
            for c in self.columns.values()
            if c.role == "categorical"
        }

    @property
    def num_paths(self) -> int:
        """The number of configurations of the choices that select sub-trees."""
        return self.tree.num_paths

    def paths(self) -> list[dict[str, Hashable]]:
        """Every path (leaf configuration) as ``{choice_name: label}``."""
        values = self.tree.path_choice_values
        names = [n for n in self.parameter_names if self.columns[n].role == "choice"]
        return [
            {
                name: self._label_of(name, float(row[self.columns[name].column]))
                for name in names
                if not math.isnan(row[self.columns[name].column])
            }
            for row in values
        ]

    def path_parameters(self) -> list[list[str]]:
        """Names of the active parameters on each path."""
        active = self.tree.path_active_columns
        return [
            [self.parameter_names[c] for c in torch.nonzero(row).flatten().tolist()]
            for row in active
        ]

    def column_activity(self, X: Tensor) -> Tensor:
        """``batch x n x d`` boolean: which columns are active at each row of ``X``."""
        vertex_active = self.tree.vertex_activity(X)
        return vertex_active[..., self._column_vertex.to(X.device)]

    def canonicalize(self, X: Tensor) -> Tensor:
        """Snap labels to codes and integers to integers, clamp to bounds, and
        reset inactive columns.

        Args:
            X: ``batch x n x d`` tensor.

        Returns:
            A tensor of the same shape whose rows are valid encodings.
        """
        bounds = self.bounds.to(X)
        X = torch.maximum(torch.minimum(X, bounds[1]), bounds[0]).clone()
        if self.label_column_index.numel():
            cols = self.label_column_index.to(X.device)
            codes = self.label_code_table.to(X)  # C x K (inf-padded)
            dist = (X[..., cols].unsqueeze(-1) - codes).abs()
            X[..., cols] = torch.take_along_dim(
                codes.expand(*dist.shape), dist.argmin(-1, keepdim=True), dim=-1
            ).squeeze(-1)
        if self.integer_column_index.numel():
            cols = self.integer_column_index.to(X.device)
            log = self.integer_log_scale.to(X.device)
            z = X[..., cols]
            X[..., cols] = torch.where(
                log, torch.pow(10.0, z).round().log10(), z.round()
            ).clamp(bounds[0, cols], bounds[1, cols])
        active = self.column_activity(X)
        return torch.where(active, X, self.canonical_values.to(X))

    # ---------------------------------------------------- dicts <-> tensors
    def validate(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """Check ``config`` and return it in the space's own terms.

        Returns:
            The configuration with Python floats for real values, ``int`` for
            integers and the space's own label objects for choices and
            categoricals (so ``numpy.int64(1)`` becomes the label ``1``).

        Raises:
            ConfigurationError: Naming the parameter, if ``config`` is not a
                configuration of this space.
        """
        canonical: dict[str, Any] = {}
        self._encode_row(config, canonical)
        return canonical

    def to_tensor(
        self,
        configs: Mapping[str, Any] | Sequence[Mapping[str, Any]],
        dtype: torch.dtype = torch.float64,
        device: torch.device | None = None,
    ) -> Tensor:
        """Encode one configuration (``d``) or a list of them (``n x d``)."""
        if isinstance(configs, Mapping):
            return torch.tensor(self._encode_row(configs), dtype=dtype, device=device)
        rows = [self._encode_row(c) for c in configs]
        if not rows:
            return torch.zeros(0, self.dim, dtype=dtype, device=device)
        return torch.tensor(rows, dtype=dtype, device=device)

    def to_dicts(self, X: Tensor) -> list[dict[str, Any]]:
        """Decode an ``n x d`` tensor into configurations (active parameters only).

        Rows are first canonicalized (labels snapped to the nearest code,
        integers rounded, values clamped to bounds).

        Raises:
            ValueError: If a column that is active in its row is NaN.
        """
        if X.dim() == 1:
            X = X.unsqueeze(0)
        if X.dim() != 2 or X.shape[-1] != self.dim:
            raise ConfigurationError(
                f"X must be n x {self.dim}, got shape {tuple(X.shape)}."
            )
        X = X.detach().to(torch.float64).cpu()
        nan = X.isnan()
        X = self.canonicalize(torch.where(nan, self.bounds[0], X))
        active = self.column_activity(X)
        bad = (nan & active).nonzero()
        if bad.numel():
            row, col = bad[0].tolist()
            raise ConfigurationError(
                f"to_dicts: row {row} has NaN for the active parameter "
                f"{self.parameter_names[col]!r}."
            )
        out = []
        for row, act in zip(X.tolist(), active.tolist(), strict=False):
            config = {}
            for name in self.parameter_names:
                c = self.columns[name]
                if act[c.column]:
                    config[name] = self._decode(c, row[c.column])
            out.append(config)
        return out

    def to_dict(self, x: Tensor) -> dict[str, Any]:
        """Decode one ``d`` row."""
        return self.to_dicts(x.reshape(1, -1))[0]

    def _decode(self, c: Column, value: float) -> Any:
        if c.name in self.choice_codes:
            return self._label_of(c.name, value)
        if isinstance(c.param, Integer):
            raw = 10.0**value if c.param.log_scale else value
            return min(max(int(round(raw)), c.param.low), c.param.high)
        return 10.0**value if c.param.log_scale else value

    def _label_of(self, name: str, code: float) -> Hashable:
        for label, value in self.choice_codes[name].items():
            if value == code:
                return label
        raise ConfigurationError(f"parameter {name!r}: no label with code {code}.")

    def _encode_row(
        self, config: Mapping[str, Any], canonical: dict[str, Any] | None = None
    ) -> list[float]:
        """The encoding of ``config``; fills ``canonical`` (if given) with the
        configuration in the space's own terms."""
        canonical = {} if canonical is None else canonical
        if not isinstance(config, Mapping):
            raise ConfigurationError(
                f"a configuration must be a dict of parameter values, got "
                f"{type(config).__name__}."
            )
        unknown = [k for k in config if k not in self.columns]
        if unknown:
            raise ConfigurationError(
                f"unknown parameter {unknown[0]!r}; the space has "
                f"{self.parameter_names}."
            )
        row = self.canonical_values.tolist()
        stack = [self.root]
        while stack:
            vertex = stack.pop()
            for p in (*vertex.params, *vertex.choices):
                if p.name not in config:
                    kind = "choice" if isinstance(p, Choice) else "parameter"
                    raise ConfigurationError(
                        f"missing value for active {kind} {p.name!r}."
                    )
                column = self.columns[p.name].column
                if isinstance(p, (Choice, Categorical)):
                    label = canonical[p.name] = p.match(config[p.name])
                    row[column] = self.choice_codes[p.name][label]
                    if isinstance(p, Choice):
                        stack.append(p.options[label])
                else:
                    value = canonical[p.name] = p.check(config[p.name])
                    row[column] = math.log10(value) if p.log_scale else float(value)
        inactive = [k for k in config if k not in canonical]
        if inactive:
            raise ConfigurationError(
                f"parameter {inactive[0]!r} is inactive in this configuration "
                "(its branch is not chosen); leave it out."
            )
        return row

    # -------------------------------------------------------------- sampling
    def sample(
        self,
        n: int,
        seed: int | None = None,
        by: str = "choice",
        generator: torch.Generator | None = None,
        canonical: bool = True,
    ) -> Tensor:
        """Sample ``n`` valid encoded configurations (``n x d``); see
        [`treebo.space.sampling.sample_space()`][treebo.space.sampling.sample_space] for
        the arguments."""
        return sample_space(self, n, seed, by, generator, canonical)

    def from_unit_cube(self, U: Tensor, canonical: bool = True) -> Tensor:
        """Map points of ``[0, 1]^d`` (e.g. Sobol points) to valid encodings;
        see
        [`treebo.space.sampling.from_unit_cube()`][treebo.space.sampling.from_unit_cube]."""
        return from_unit_cube(self, U, canonical)

    def set_paths(self, X: Tensor, path_index: Tensor) -> Tensor:
        """Set the choice columns of each row of ``X`` to the given path's values."""
        values = self.tree.path_choice_values.to(X)[path_index.to(X.device)]
        return self.canonicalize(torch.where(torch.isnan(values), X, values))

    def __repr__(self) -> str:
        return (
            f"TreeSpace(dim={self.dim}, paths={self.num_paths}, "
            f"parameters={self.parameter_names})"
        )
