r"""The configurations ("paths") of a tree over columns: counted, enumerated.

A *configuration* of a [`TreeStructure`][treebo.space.structure.TreeStructure] is the
set of vertices that one full assignment of its choice columns activates. For a tree in
which every vertex holds at most one choice column these are the root-to-leaf paths;
several choices on one vertex multiply them. Their number grows exponentially with the
number of choices (twelve binary flags give 4096), so:

- [`count_configurations()`][treebo.space.configurations.count_configurations] and
[`max_active_vertices()`][treebo.space.configurations.max_active_vertices] work by
dynamic
  programming over the vertices (linear in the size of the tree), never by
  listing configurations;
- [`PathTable`][treebo.space.configurations.PathTable] lists them, as tensors, only for
trees with at most
  `MAX_ENUMERATED_PATHS` configurations.

For a vertex $v$ with choice columns $c$ and, for each value $a$ of $c$, the children
$u$ it activates,

$$
N(v) = \prod_{c} \sum_{a} \prod_{u \in \mathrm{ch}(v, c, a)} N(u).
$$

"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

import torch
from torch import Tensor

if TYPE_CHECKING:
    from treebo.space.structure import TreeStructure

#: Trees with more configurations than this are never enumerated.
MAX_ENUMERATED_PATHS = 4096

#: Optimizers treat trees with at most this many configurations path by path.
MAX_LISTED_PATHS = 32


def _children_by_value(tree: TreeStructure, v: int) -> list[list[list[int]]]:
    """For each choice column of ``v``, for each of its values, the children it
    activates."""
    out = []
    for c in tree.vertices[v].choice_columns:
        kids = tree.children[(v, c)]
        out.append(
            [
                [u for u in kids if value in tree.vertices[u].condition[1]]
                for value in tree.choice_values[c]
            ]
        )
    return out


def count_configurations(tree: TreeStructure) -> int:
    """The number of configurations (a Python int, exact however large)."""
    count = [1] * tree.num_vertices
    for v in reversed(range(tree.num_vertices)):  # children after parents
        total = 1
        for per_value in _children_by_value(tree, v):
            total *= sum(_product(count[u] for u in kids) for kids in per_value)
        count[v] = total
    return count[0]


def max_active_vertices(tree: TreeStructure, weight: Sequence[int]) -> int:
    """The largest total ``weight`` of the vertices of one configuration.

    With ``weight`` 1 for the vertices that contribute to a kernel, this is the
    largest number of terms a point's variance can have.
    """
    best = [0] * tree.num_vertices
    for v in reversed(range(tree.num_vertices)):
        best[v] = int(weight[v]) + sum(
            max(sum(best[u] for u in kids) for kids in per_value)
            for per_value in _children_by_value(tree, v)
        )
    return best[0]


def _product(values) -> int:
    out = 1
    for value in values:
        out *= value
    return out


def _enumerate(tree: TreeStructure, v: int) -> list[frozenset[int]]:
    per_choice = []
    for per_value in _children_by_value(tree, v):
        options = []
        for kids in per_value:
            below = [_enumerate(tree, u) for u in kids]
            options.extend(frozenset().union(*c) for c in itertools.product(*below))
        per_choice.append(options)
    return [frozenset({v}).union(*c) for c in itertools.product(*per_choice)]


class PathTable:
    r"""Every configuration of a small tree, as tensors.

    Args:
        tree: A tree with at most `MAX_ENUMERATED_PATHS` configurations.

    Attributes:
        vertex_mask: ``P x V`` boolean: the vertices of each configuration.
        choice_values: ``P x d``: the value of every active choice column
            (NaN elsewhere).
        active_columns: ``P x d`` boolean: the columns active on each.

    Raises:
        ValueError: If the tree has too many configurations to list.
    """

    def __init__(self, tree: TreeStructure) -> None:
        n = count_configurations(tree)
        if n > MAX_ENUMERATED_PATHS:
            raise ValueError(
                f"the tree has {n} configurations (paths); listing them is "
                f"limited to {MAX_ENUMERATED_PATHS}. Use the optimizers and "
                "samplers that work by choice instead of by path."
            )
        V, d = tree.num_vertices, tree.dim
        paths = _enumerate(tree, 0)
        P = len(paths)
        rows = torch.repeat_interleave(
            torch.arange(P), torch.tensor([len(p) for p in paths])
        )
        cols = torch.tensor([v for p in paths for v in sorted(p)], dtype=torch.long)
        mask = torch.zeros(P, V, dtype=torch.bool)
        mask[rows, cols] = True
        self.vertex_mask = mask
        # A configuration's choice values: for each active vertex, the choice
        # columns it owns take the value that the configuration's children
        # (or, for a choice with no child vertex on that value, any) agree on.
        values = torch.full((P, d), float("nan"), dtype=torch.float64)
        owns = torch.zeros(V, d, dtype=torch.bool)
        for info in tree.vertices:
            owns[info.index, list(info.continuous_columns + info.choice_columns)] = True
        for p, members in enumerate(paths):
            for v in members:
                for c in tree.vertices[v].choice_columns:
                    values[p, c] = _chosen_value(tree, v, c, members)
        self.choice_values = values
        self.active_columns = (mask.to(torch.float64) @ owns.to(torch.float64)) > 0


def _chosen_value(
    tree: TreeStructure, v: int, c: int, members: frozenset[int]
) -> float:
    """The value of choice ``c`` (on vertex ``v``) that activates exactly the
    children of ``v`` in ``members``."""
    kids = tree.children[(v, c)]
    on = {u for u in kids if u in members}
    for value in tree.choice_values[c]:
        if {u for u in kids if value in tree.vertices[u].condition[1]} == on:
            return value
    raise AssertionError("configuration without a matching choice value")


def path_rows(tree: TreeStructure, table: PathTable, X: Tensor) -> Tensor:
    """The configuration of each row of ``X`` (``n x d`` -> ``n`` long)."""
    active = tree.vertex_activity(X).to(torch.float64)
    mask = table.vertex_mask.to(active)
    hits = active @ mask.T  # n x P
    return (hits == mask.sum(-1)).to(torch.float64).argmax(-1)


class ConfigurationSearch:
    r"""The configuration that maximizes a sum of per-vertex scores, by dynamic
    programming over the tree (max-sum), without listing configurations.

    For scores $s_v$, the best total below vertex $v$ is

    $$
    B(v) = s_v + \sum_{c} \max_{a} \sum_{u \in \mathrm{ch}(v, c, a)} B(u),
    $$

    computed level by level from the deepest vertices up, all vertices of a
    level at once (gathers and scatters over index tensors built once). The
    argmax of each choice gives the best value of every choice column; the
    configuration they make is the best one, and changing one active choice
    to another value (with the best values below it) gives the runners-up.

    Args:
        tree: The tree.

    Example:
        >>> from treebo.space.structure import TreeStructure
        >>> tree = TreeStructure(3, {0: {0: [1], 1: [2]}})
        >>> best = ConfigurationSearch(tree)(torch.tensor([0.0, 1.0, 3.0]))
        >>> best.value.item(), best.choice_values.tolist()
        (3.0, [1.0])
    """

    def __init__(self, tree: TreeStructure) -> None:
        self.tree = tree
        groups = [  # (choice column, value) of every option, in column order
            (c, a) for c in tree.choice_columns for a in tree.choice_values[c]
        ]
        self.group_column = torch.tensor([c for c, _ in groups], dtype=torch.long)
        self.group_value = torch.tensor([a for _, a in groups], dtype=torch.float64)
        self.columns = torch.tensor(tree.choice_columns, dtype=torch.long)
        owner = {c: v.index for v in tree.vertices for c in v.choice_columns}
        position = {c: i for i, c in enumerate(tree.choice_columns)}
        self.group_choice = torch.tensor(
            [position[c] for c, _ in groups], dtype=torch.long
        )
        self.choice_vertex = torch.tensor(
            [owner[c] for c in tree.choice_columns], dtype=torch.long
        )
        pairs = [  # (child vertex, group) for every option that activates it
            (u, g)
            for g, (c, a) in enumerate(groups)
            for u in tree.children[(owner[c], c)]
            if a in tree.vertices[u].condition[1]
        ]
        self.pair_child = torch.tensor([u for u, _ in pairs], dtype=torch.long)
        self.pair_group = torch.tensor([g for _, g in pairs], dtype=torch.long)
        self.depth = torch.tensor([v.depth for v in tree.vertices], dtype=torch.long)

    def __call__(self, scores: Tensor) -> ConfigurationScores:
        """The best configuration for ``V`` vertex ``scores``.

        Returns:
            A [`ConfigurationScores`][treebo.space.configurations.ConfigurationScores].
        """
        device, dtype = scores.device, scores.dtype
        V, C = self.tree.num_vertices, self.columns.numel()
        G = self.group_value.numel()
        child = self.pair_child.to(device)
        group = self.pair_group.to(device)
        choice = self.group_choice.to(device)
        owner = self.choice_vertex.to(device)
        depth = self.depth.to(device)
        best = scores.clone()
        group_sum = torch.zeros(G, dtype=dtype, device=device)
        choice_max = torch.zeros(C, dtype=dtype, device=device)
        for level in range(int(depth.max()) - 1, -1, -1):
            group_sum = torch.zeros(G, dtype=dtype, device=device).index_add(
                0, group, best[child]
            )
            choice_max = torch.full((C,), -torch.inf, dtype=dtype, device=device)
            choice_max = choice_max.scatter_reduce(0, choice, group_sum, "amax")
            below = torch.zeros(V, dtype=dtype, device=device).index_add(
                0, owner, choice_max
            )
            best = torch.where(depth == level, scores + below, best)
        # The first best option of every choice.
        is_best = group_sum == choice_max[choice]
        index = torch.arange(G, device=device)
        first = torch.full((C,), G, dtype=torch.long, device=device)
        first = first.scatter_reduce(0, choice, torch.where(is_best, index, G), "amin")
        values = self.group_value.to(device=device, dtype=dtype)
        return ConfigurationScores(
            value=best[0],
            choice_values=values[first],
            columns=self.columns.to(device),
            group_gain=group_sum - choice_max[choice],
            group_values=values,
            group_columns=self.group_column.to(device),
        )


class ConfigurationScores(NamedTuple):
    """The result of a
    [`ConfigurationSearch`][treebo.space.configurations.ConfigurationSearch].

    Attributes:
        value: The best total score.
        choice_values: ``C``: the best value of every choice column.
        columns: ``C``: the choice columns.
        group_gain: ``G``: for every (choice, value) option, the change of the
            total when that choice (if active) takes that value instead.
        group_values: ``G``: each option's value.
        group_columns: ``G``: each option's choice column.
    """

    value: Tensor
    choice_values: Tensor
    columns: Tensor
    group_gain: Tensor
    group_values: Tensor
    group_columns: Tensor
