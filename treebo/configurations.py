r"""The configurations ("paths") of a tree over columns: counted, enumerated.

A *configuration* of a :class:`~treebo.structure.TreeStructure` is the set of
vertices that one full assignment of its choice columns activates. For a tree in
which every vertex holds at most one choice column these are the root-to-leaf
paths; several choices on one vertex multiply them. Their number grows
exponentially with the number of choices (twelve binary flags give 4096), so:

- :func:`count_configurations` and :func:`max_active_vertices` work by dynamic
  programming over the vertices (linear in the size of the tree), never by
  listing configurations;
- :class:`PathTable` lists them, as tensors, only for trees with at most
  :data:`MAX_ENUMERATED_PATHS` configurations.

For a vertex :math:`v` with choice columns :math:`c` and, for each value
:math:`a` of :math:`c`, the children :math:`u` it activates,

.. math::

    N(v) = \prod_{c} \sum_{a} \prod_{u \in \mathrm{ch}(v, c, a)} N(u).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch
from torch import Tensor

if TYPE_CHECKING:
    from treebo.structure import TreeStructure

#: Trees with more configurations than this are never enumerated.
MAX_ENUMERATED_PATHS = 4096


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
        tree: A tree with at most :data:`MAX_ENUMERATED_PATHS` configurations.

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
