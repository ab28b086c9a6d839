r"""Tree-structured (conditional) search spaces.

A space is a tree of :class:`Vertex` objects. Each vertex owns continuous
parameters (:class:`Real`) and categorical :class:`Choice` parameters whose
options lead to child vertices; a parameter on an inner vertex is shared by
every leaf below it. Example (Jenatton et al., 2017)::

    space = TreeSpace(Vertex(choices=[Choice("x1", {
        0: Vertex([Real("r8", 0, 1)], [Choice("x2", {
            0: Vertex([Real("x4", -1, 1)]), 1: Vertex([Real("x5", -1, 1)])})]),
        1: Vertex([Real("r9", 0, 1)], [Choice("x3", {
            0: Vertex([Real("x6", -1, 1)]), 1: Vertex([Real("x7", -1, 1)])})]),
    })]))

**Tensor layout.** A configuration (a dict of the *active* parameters) maps to a
row of ``d`` columns, one per parameter, in the breadth-first linearization of
Ma & Blaschko (2020, appendix A): vertices in BFS order, each contributing its
continuous parameters then its choices. A choice column holds the chosen
option's rank (the paper's tag); a log-scale parameter holds ``log10`` of its
value. Inactive columns hold a canonical value (the lower bound; rank 0).
:meth:`TreeSpace.to_hierarchical_dependencies` describes the same layout in
BoTorch's ``{parent_col: {value: [child_cols]}}`` format, so BoTorch's models and
treebo's consume the same tensors.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from treebo.parameters import Choice, ConfigurationError, Real, Vertex
from treebo.structure import HierarchicalDependencies, TreeStructure

__all__ = ["Choice", "ConfigurationError", "Real", "TreeSpace", "Vertex"]


@dataclass(frozen=True)
class _Column:
    name: str
    column: int
    vertex: int  # index into TreeSpace.vertices
    param: Real | Choice


class TreeSpace:
    """A tree-structured search space and its tensor encoding.

    Args:
        root: The root :class:`Vertex`.

    Attributes:
        dim: Number of columns ``d``.
        bounds: ``2 x d`` float64 tensor of bounds in the tensor representation.
        tree: The :class:`~treebo.structure.TreeStructure` of the columns.
    """

    def __init__(self, root: Vertex, *, _layout: dict[str, Any] | None = None) -> None:
        if not isinstance(root, Vertex):
            raise TypeError(
                f"TreeSpace needs a root Vertex, got {type(root).__name__}."
            )
        self.root = root
        # BFS over vertices.
        vertices: list[Vertex] = []
        parents: list[tuple[int, str, Hashable] | None] = []
        queue: deque[tuple[Vertex, tuple[int, str, Hashable] | None]] = deque(
            [(root, None)]
        )
        while queue:
            vertex, parent = queue.popleft()
            index = len(vertices)
            vertices.append(vertex)
            parents.append(parent)
            for choice in vertex.choices:
                for label, child in choice.options.items():
                    queue.append((child, (index, choice.name, label)))
        self.vertices: tuple[Vertex, ...] = tuple(vertices)
        self.vertex_parents = tuple(parents)
        names = [p.name for v in vertices for p in (*v.params, *v.choices)]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(
                f"TreeSpace: parameter names must be unique: {sorted(dup)}."
            )

        layout = _layout or {}
        given_cols: Mapping[str, int] | None = layout.get("columns")
        codes: Mapping[str, Mapping[Hashable, float]] = layout.get("codes", {})
        self.columns: dict[str, _Column] = {}
        next_col = 0
        for vi, vertex in enumerate(vertices):
            for p in (*vertex.params, *vertex.choices):
                col = given_cols[p.name] if given_cols is not None else next_col
                next_col += 1
                self.columns[p.name] = _Column(p.name, col, vi, p)
        self.dim = len(self.columns)
        if self.dim == 0:
            raise ConfigurationError(
                "TreeSpace: the space has no parameters; give the root Vertex a "
                "Real or a Choice."
            )
        if sorted(c.column for c in self.columns.values()) != list(range(self.dim)):
            raise ValueError("TreeSpace: columns must be a permutation of 0..d-1.")
        self.choice_codes: dict[str, dict[Hashable, float]] = {}
        for c in self.columns.values():
            if isinstance(c.param, Choice):
                given = codes.get(c.name)
                self.choice_codes[c.name] = {
                    label: float(given[label]) if given else float(rank)
                    for rank, label in enumerate(c.param.labels)
                }
        self.parameter_names = [
            name
            for name, _ in sorted(self.columns.items(), key=lambda kv: kv[1].column)
        ]
        bounds = torch.zeros(2, self.dim, dtype=torch.float64)
        canonical = torch.zeros(self.dim, dtype=torch.float64)
        for c in self.columns.values():
            if isinstance(c.param, Real):
                lo, up = c.param.model_bounds
            else:
                vals = list(self.choice_codes[c.name].values())
                lo, up = min(vals), max(vals)
            bounds[0, c.column], bounds[1, c.column] = lo, up
            canonical[c.column] = (
                lo
                if isinstance(c.param, Real)
                else self.choice_codes[c.name][c.param.labels[0]]
            )
        self.bounds = bounds
        self.canonical_values = canonical
        self.tree = TreeStructure.build(self.dim, self.to_hierarchical_dependencies())
        choice_names = [n for n in self.parameter_names if n in self.choice_codes]
        self._choice_cols = torch.tensor(
            [self.columns[n].column for n in choice_names], dtype=torch.long
        )
        k_max = max([len(self.choice_codes[n]) for n in choice_names], default=1)
        table = torch.full((len(choice_names), k_max), math.inf, dtype=torch.float64)
        for i, n in enumerate(choice_names):
            vals = list(self.choice_codes[n].values())
            table[i, : len(vals)] = torch.tensor(vals, dtype=torch.float64)
        self._choice_code_table = table
        self._column_vertex = self._map_columns_to_tree_vertices()

    # ------------------------------------------------------------ building
    @classmethod
    def from_hierarchical_dependencies(
        cls,
        hierarchical_dependencies: HierarchicalDependencies,
        bounds: Tensor,
        names: Sequence[str] | None = None,
        log_scale: Iterable[int] = (),
    ) -> TreeSpace:
        """Build a space from BoTorch's ``{parent_col: {value: [child_cols]}}``.

        The tensor layout is the caller's: column ``i`` stays column ``i`` and a
        choice column takes the values named in the dictionary (those values are
        also the choice's labels in dicts).

        Args:
            hierarchical_dependencies: The tree over columns.
            bounds: ``2 x d`` tensor; rows for choice columns are ignored.
            names: Optional parameter names (default ``x0``, ``x1``, ...).
            log_scale: Columns to model on a log scale (bounds then in raw units).
        """
        bounds = torch.as_tensor(bounds, dtype=torch.float64)
        if bounds.dim() != 2 or bounds.shape[0] != 2:
            raise ValueError(f"bounds must be 2 x d, got shape {tuple(bounds.shape)}.")
        d = bounds.shape[1]
        tree = TreeStructure.build(d, hierarchical_dependencies)
        names = list(names) if names is not None else [f"x{i}" for i in range(d)]
        if len(names) != d:
            raise ValueError(f"names has {len(names)} entries for {d} columns.")
        log_cols = set(log_scale)
        deps = tree.hierarchical_dependencies
        for c in sorted(log_cols):
            if not isinstance(c, int) or not 0 <= c < d:
                raise ValueError(f"log_scale: {c!r} is not a column of 0..{d - 1}.")
            if c in deps:
                raise ValueError(
                    f"log_scale: column {c} ({names[c]!r}) is a choice; only "
                    "continuous columns can be on a log scale."
                )

        def build(cols: Sequence[int]) -> Vertex:
            params, choices = [], []
            for c in sorted(cols):
                if c in deps:
                    opts = {
                        _label(v): build(children) for v, children in deps[c].items()
                    }
                    choices.append(Choice(names[c], opts))
                else:
                    params.append(
                        Real(
                            names[c],
                            float(bounds[0, c]),
                            float(bounds[1, c]),
                            log_scale=c in log_cols,
                        )
                    )
            return Vertex(params, choices)

        root = build(
            tree.vertices[0].continuous_columns + tree.vertices[0].choice_columns
        )
        codes = {names[c]: {_label(v): float(v) for v in deps[c]} for c in deps}
        return cls(
            root,
            _layout={"columns": {n: i for i, n in enumerate(names)}, "codes": codes},
        )

    def to_hierarchical_dependencies(self) -> dict[int, dict[float, list[int]]]:
        """This space's tree in BoTorch's ``{parent_col: {value: [child_cols]}}``."""
        deps: dict[int, dict[float, list[int]]] = {}
        for c in self.columns.values():
            if isinstance(c.param, Choice):
                branch = {}
                for label, child in c.param.options.items():
                    child_cols = [
                        self.columns[p.name].column
                        for p in (*child.params, *child.choices)
                    ]
                    branch[_label(self.choice_codes[c.name][label])] = sorted(
                        child_cols
                    )
                deps[c.column] = branch
        return deps

    def _map_columns_to_tree_vertices(self) -> Tensor:
        out = torch.zeros(self.dim, dtype=torch.long)
        for v in self.tree.vertices:
            for c in (*v.continuous_columns, *v.choice_columns):
                out[c] = v.index
        return out

    # -------------------------------------------------------------- queries
    @property
    def continuous_columns(self) -> list[int]:
        return list(self.tree.continuous_columns)

    @property
    def choice_columns(self) -> list[int]:
        return list(self.tree.choice_columns)

    @property
    def num_paths(self) -> int:
        return self.tree.num_paths

    def paths(self) -> list[dict[str, Hashable]]:
        """Every path (leaf configuration) as ``{choice_name: label}``."""
        out = []
        values = self.tree.path_choice_values
        for i in range(self.num_paths):
            out.append(
                {
                    name: self._label_of(name, float(values[i, c.column]))
                    for name, c in self.columns.items()
                    if isinstance(c.param, Choice)
                    and not math.isnan(values[i, c.column])
                }
            )
        return out

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
        """Snap choice columns to valid codes, clamp to bounds, reset inactive columns.

        Args:
            X: ``batch x n x d`` tensor.

        Returns:
            A tensor of the same shape whose rows are valid encodings.
        """
        bounds = self.bounds.to(X)
        X = torch.maximum(torch.minimum(X, bounds[1]), bounds[0])
        if self._choice_cols.numel():
            cols = self._choice_cols.to(X.device)
            codes = self._choice_code_table.to(X)  # C x K (inf-padded)
            dist = (X[..., cols].unsqueeze(-1) - codes).abs()
            snapped = torch.take_along_dim(
                codes.expand(*dist.shape), dist.argmin(-1, keepdim=True), dim=-1
            ).squeeze(-1)
            X = X.clone()
            X[..., cols] = snapped
        active = self.column_activity(X)
        return torch.where(active, X, self.canonical_values.to(X))

    # ---------------------------------------------------- dicts <-> tensors
    def validate(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """Check ``config`` and return it in the space's own terms.

        Returns:
            The configuration with Python floats for continuous values and
            the space's own label objects for choices (so ``numpy.int64(1)``
            becomes the label ``1``).

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

        Rows are first canonicalized (choices snapped to the nearest option,
        values clamped to bounds).

        Raises:
            ValueError: If a column that is active in its row is NaN.
        """
        if X.dim() == 1:
            X = X.unsqueeze(0)
        if X.dim() != 2 or X.shape[-1] != self.dim:
            raise ValueError(f"X must be n x {self.dim}, got shape {tuple(X.shape)}.")
        X = X.detach().to(torch.float64).cpu()
        nan = X.isnan()
        X = self.canonicalize(torch.where(nan, self.bounds[0], X))
        active = self.column_activity(X)
        bad = (nan & active).nonzero()
        if bad.numel():
            row, col = bad[0].tolist()
            raise ValueError(
                f"to_dicts: row {row} has NaN for the active parameter "
                f"{self.parameter_names[col]!r}."
            )
        out = []
        for row, act in zip(X.tolist(), active.tolist(), strict=False):
            config = {}
            for name in self.parameter_names:
                c = self.columns[name]
                if not act[c.column]:
                    continue
                value = row[c.column]
                if isinstance(c.param, Choice):
                    config[name] = self._label_of(name, value)
                else:
                    config[name] = 10.0**value if c.param.log_scale else value
            out.append(config)
        return out

    def to_dict(self, x: Tensor) -> dict[str, Any]:
        """Decode one ``d`` row."""
        return self.to_dicts(x.reshape(1, -1))[0]

    def _label_of(self, name: str, code: float) -> Hashable:
        for label, value in self.choice_codes[name].items():
            if value == code:
                return label
        raise ConfigurationError(f"choice {name!r}: no option with code {code}.")

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
        used: set[str] = set()
        stack = [self.root]
        while stack:
            vertex = stack.pop()
            for p in vertex.params:
                if p.name not in config:
                    raise ConfigurationError(
                        f"missing value for active parameter {p.name!r}."
                    )
                value = canonical[p.name] = p.check(config[p.name])
                row[self.columns[p.name].column] = (
                    math.log10(value) if p.log_scale else value
                )
                used.add(p.name)
            for ch in vertex.choices:
                if ch.name not in config:
                    raise ConfigurationError(
                        f"missing value for active choice {ch.name!r}."
                    )
                label = canonical[ch.name] = ch.match(config[ch.name])
                row[self.columns[ch.name].column] = self.choice_codes[ch.name][label]
                used.add(ch.name)
                stack.append(ch.options[label])
        inactive = [k for k in config if k not in used]
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
        """Sample ``n`` valid encoded configurations (``n x d``).

        Args:
            n: Number of samples.
            seed: Seed of a fresh generator (ignored if ``generator`` is given).
            by: ``"choice"``: every choice uniform over its options (a path's
                probability is the product along it); ``"path"``: every path
                equally likely. Continuous values are uniform in the tensor
                representation (log-uniform for ``log_scale``).
            generator: Optional ``torch.Generator``.
            canonical: Reset inactive columns to their canonical value. With
                ``False`` every continuous column holds a random value (useful
                for scoring every vertex at once, or for switching paths).
        """
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"n must be an integer >= 0, got {n!r}.")
        if by not in ("choice", "path"):
            raise ValueError(f"by must be 'choice' or 'path', got {by!r}.")
        if generator is None:
            generator = torch.Generator()
            if seed is not None:
                generator.manual_seed(seed)
        u = torch.rand(n, self.dim, generator=generator, dtype=torch.float64)
        X = self.bounds[0] + u * (self.bounds[1] - self.bounds[0])
        if by == "path":
            idx = torch.randint(self.num_paths, (n,), generator=generator)
            values = self.tree.path_choice_values
            X = torch.where(torch.isnan(values[idx]), X, values[idx])
        else:
            for name, codes in self.choice_codes.items():
                col = self.columns[name].column
                vals = torch.tensor(list(codes.values()), dtype=torch.float64)
                X[:, col] = vals[torch.randint(len(vals), (n,), generator=generator)]
        if not canonical:
            return X
        return self.canonicalize(X)

    def set_paths(self, X: Tensor, path_index: Tensor) -> Tensor:
        """Set the choice columns of each row of ``X`` to the given path's values."""
        values = self.tree.path_choice_values.to(X)[path_index.to(X.device)]
        return self.canonicalize(torch.where(torch.isnan(values), X, values))

    def __repr__(self) -> str:
        return (
            f"TreeSpace(dim={self.dim}, paths={self.num_paths}, "
            f"parameters={self.parameter_names})"
        )


def _label(value: int | float) -> int | float:
    """An int where ``value`` is integral (labels and keys of BoTorch codes)."""
    return int(value) if float(value).is_integer() else float(value)
