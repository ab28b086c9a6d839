"""Walking a tree of [`Vertex`][treebo.space.parameters.Vertex] objects: its parameters
in breadth-first order, the condition that activates each, and how each is
modelled (its *role*)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any

from treebo.space.parameters import (
    Categorical,
    Choice,
    ConfigurationError,
    Integer,
    Real,
    Vertex,
)

#: How a column is modelled and optimized.
ROLES = ("real", "integer", "categorical", "choice")


@dataclass(frozen=True)
class Column:
    """One column of a space's tensor layout.

    Attributes:
        name: The parameter's name.
        column: Its index in the layout.
        param: The parameter.
        role: How it is modelled and optimized, one of `ROLES`.
        parent: ``(choice name, labels)`` of the options that activate it,
            or ``None`` on the root vertex.
    """

    name: str
    column: int
    param: Real | Integer | Categorical | Choice
    role: str  # one of ROLES
    parent: tuple[str, tuple[Hashable, ...]] | None  # (choice, labels) or root


def column_role(param: Real | Integer | Categorical | Choice) -> str:
    """``"real"``, ``"integer"`` (integers and ordered categoricals, modelled
    as numbers), ``"categorical"`` (unordered, or a choice whose options own
    nothing) or ``"choice"`` (selects a sub-tree)."""
    if isinstance(param, Real):
        return "real"
    if isinstance(param, Integer) or (isinstance(param, Categorical) and param.ordered):
        return "integer"
    if isinstance(param, Choice) and param.selects_subtree:
        return "choice"
    return "categorical"


def collect_parameters(
    root: Vertex,
) -> tuple[list[Any], dict[str, Any], list[Vertex]]:
    """The parameters in BFS order (each once), each one's parent condition
    (``(choice name, labels)`` or ``None``), and the vertices in BFS order.

    A name met again must be the same parameter, in another option of the
    same choice (it is then active under each); anything else is an error.

    Raises:
        ConfigurationError: Naming the parameter, for a name used twice in a
            vertex, for two different parameters of one name, and for a
            parameter under two different parents.
    """
    order: list[Any] = []
    vertices: list[Vertex] = []
    parent: dict[str, tuple[str, list[Hashable]] | None] = {}
    queue: deque[tuple[Vertex, tuple[str, Hashable] | None]] = deque([(root, None)])
    while queue:
        vertex, here = queue.popleft()
        vertices.append(vertex)
        names = [p.name for p in (*vertex.params, *vertex.choices)]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ConfigurationError(
                f"TreeSpace: parameter names must be unique; {twice} appear twice "
                "in one vertex."
            )
        for p in (*vertex.params, *vertex.choices):
            if p.name not in parent:
                order.append(p)
                parent[p.name] = None if here is None else (here[0], [here[1]])
                if isinstance(p, Choice):
                    queue.extend(
                        (child, (p.name, label)) for label, child in p.options.items()
                    )
                continue
            first = next(q for q in order if q.name == p.name)
            seen = parent[p.name]
            if p != first:
                raise ConfigurationError(
                    f"TreeSpace: parameter names must be unique; {p.name!r} names "
                    "two different parameters."
                )
            if seen is None or here is None or seen[0] != here[0]:
                where = [
                    "the root" if c is None else f"choice {c[0]!r}"
                    for c in (seen, here)
                ]
                raise ConfigurationError(
                    f"TreeSpace: parameter {p.name!r} is under two different "
                    f"parents ({where[0]} and {where[1]}); a parameter may be "
                    "shared only by options of one choice."
                )
            seen[1].append(here[1])
    parents = {n: None if c is None else (c[0], tuple(c[1])) for n, c in parent.items()}
    return order, parents, vertices


def build_root(
    roots: Iterable[Hashable],
    make: Callable[[Hashable, Callable[[Iterable[Hashable]], Vertex]], Any],
) -> Vertex:
    """The root [`Vertex`][treebo.space.parameters.Vertex] of a tree described key by
    key (by column, by name), as the importers of foreign spaces read it.

    ``make(key, vertex)`` returns the parameter (or
    [`Choice`][treebo.space.parameters.Choice]) of ``key``; a choice builds its options
    with ``vertex(child_keys)``. Each key's parameter is made once, so a key listed
    under several options is one parameter shared by them.

    Args:
        roots: The keys of the root vertex's parameters.
        make: Builds one parameter from its key.
    """
    made: dict[Hashable, Any] = {}

    def parameter(key: Hashable) -> Any:
        if key not in made:
            made[key] = make(key, vertex)
        return made[key]

    def vertex(keys: Iterable[Hashable]) -> Vertex:
        owned = [parameter(key) for key in keys]
        return Vertex(
            [p for p in owned if not isinstance(p, Choice)],
            [p for p in owned if isinstance(p, Choice)],
        )

    return vertex(roots)
