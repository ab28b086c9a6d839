r"""ConfigSpace integration: SMAC's ``ConfigurationSpace`` as a treebo space.

A ``ConfigurationSpace`` whose conditions make each hyperparameter depend on at
most one categorical parent is a tree-structured space:

- ``UniformFloatHyperparameter`` (``log``): [`Real`][treebo.space.parameters.Real]
  (``log_scale``); ``UniformIntegerHyperparameter``:
  [`Integer`][treebo.space.parameters.Integer].
- ``CategoricalHyperparameter``: a [`Choice`][treebo.space.parameters.Choice] if some
  hyperparameter is conditioned on it, else a
  [`Categorical`][treebo.space.parameters.Categorical]; ``OrdinalHyperparameter``: the
  same, ``ordered=True``; ``Constant``: a one-value categorical.
- ``EqualsCondition``, ``InCondition``, ``NotEqualsCondition`` and ``And``/``Or``
  conjunctions of them on one parent: the child sits under the parent's options that
  the condition admits (several options: a shared parameter).

Forbidden clauses, conditions on two parents or on a numeric parent, non-uniform
distributions and categorical ``weights`` have no treebo counterpart and are refused
with an error that names them. Default values are not part of a treebo space (the
loop starts from its own design): to evaluate the default configuration first, tell
it, ``opt.tell(dict(cs.get_default_configuration()), value)``; it is a configuration
of the converted space. Names and values carry over, so a configuration of the
treebo space is a valid ``Configuration`` of the ``ConfigurationSpace`` (and the
other way round): the same names, the same values, inactive parameters absent.

ConfigSpace is an optional dependency (``pip install "treebo[configspace]"``).

Example:
    >>> from ConfigSpace import Categorical, ConfigurationSpace, Float
    >>> from ConfigSpace import InCondition
    >>> cs = ConfigurationSpace()
    >>> kernel = Categorical("kernel", ["rbf", "poly", "linear"])
    >>> gamma = Float("gamma", (1e-4, 1.0), log=True)
    >>> cs.add([kernel, gamma, InCondition(gamma, kernel, ["rbf", "poly"])])
    >>> space = tree_space_from_configspace(cs)
    >>> space.validate({"kernel": "poly", "gamma": 0.01})
    {'kernel': 'poly', 'gamma': 0.01}
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

try:
    import ConfigSpace as CS
    from ConfigSpace.conditions import (
        AndConjunction,
        EqualsCondition,
        InCondition,
        NotEqualsCondition,
        OrConjunction,
    )
except ImportError as err:  # pragma: no cover - exercised without ConfigSpace
    raise ImportError(
        "treebo.integrations.configspace needs ConfigSpace: pip install "
        "'treebo[configspace]'."
    ) from err

from treebo.space import TreeSpace
from treebo.space.parameter_tree import build_root
from treebo.space.parameters import (
    Categorical,
    Choice,
    ConfigurationError,
    Integer,
    Real,
)

__all__ = ["configspace_from_tree_space", "tree_space_from_configspace"]


def _plain(value: Any) -> Hashable:
    """A NumPy scalar as the Python value it holds."""
    return value.item() if hasattr(value, "item") else value


def _labels(hp: Any, child: str = "") -> list[Hashable]:
    """The values of a categorical or ordinal ``hp`` (a parent of ``child``)."""
    if isinstance(hp, CS.CategoricalHyperparameter):
        return [_plain(v) for v in hp.choices]
    if isinstance(hp, CS.OrdinalHyperparameter):
        return [_plain(v) for v in hp.sequence]
    raise ConfigurationError(
        f"hyperparameter {child!r} is conditioned on {hp.name!r}, a "
        f"{type(hp).__name__}; treebo conditions on categorical parents only."
    )


def _admitted(cs: Any, child: str) -> tuple[str, list[Hashable]] | None:
    """The parent of ``child`` and the parent's values that activate it."""
    conditions = cs.parent_conditions_of.get(child, [])
    if not conditions:
        return None
    if len(conditions) > 1:
        raise ConfigurationError(
            f"hyperparameter {child!r} has {len(conditions)} conditions; treebo "
            "needs one (an AndConjunction or OrConjunction on one parent)."
        )

    def values(cond: Any) -> tuple[str, set[Hashable]]:
        if isinstance(cond, (AndConjunction, OrConjunction)):
            parts = [values(c) for c in cond.components]
            parents = {p for p, _ in parts}
            if len(parents) > 1:
                raise ConfigurationError(
                    f"hyperparameter {child!r} depends on {sorted(parents)}; a "
                    "tree needs one parent per hyperparameter."
                )
            sets = [s for _, s in parts]
            joined = (
                set.intersection(*sets)
                if isinstance(cond, AndConjunction)
                else set.union(*sets)
            )
            return parents.pop(), joined
        parent = cond.parent
        labels = _labels(parent, child)
        if isinstance(cond, EqualsCondition):
            return parent.name, {_plain(cond.value)}
        if isinstance(cond, InCondition):
            return parent.name, {_plain(v) for v in cond.values}
        if isinstance(cond, NotEqualsCondition):
            return parent.name, set(labels) - {_plain(cond.value)}
        raise ConfigurationError(
            f"hyperparameter {child!r}: {type(cond).__name__} is not supported "
            "(treebo takes Equals, NotEquals and In conditions and their "
            "conjunctions on one parent)."
        )

    parent, admitted = values(conditions[0])
    order = _labels(cs[parent], child)
    return parent, [label for label in order if label in admitted]


def tree_space_from_configspace(cs: Any) -> TreeSpace:
    """A [`TreeSpace`][treebo.space.tree_space.TreeSpace] from a ConfigSpace
    ``ConfigurationSpace``.

    Args:
        cs: A ``ConfigurationSpace`` (see the module docstring for what maps
            to what).

    Raises:
        ConfigurationError: Naming the hyperparameter or clause, for forbidden
            clauses, conditions that do not form a tree, and hyperparameter
            types treebo does not model.
    """
    if cs.forbidden_clauses:
        raise ConfigurationError(
            f"forbidden clauses are not supported: {cs.forbidden_clauses[0]}; "
            "remove them (or encode them in the objective)."
        )
    hps = {hp.name: hp for hp in cs.values()}
    parent_of = {name: _admitted(cs, name) for name in hps}
    children: dict[str, dict[Hashable, list[str]]] = {}
    for name, condition in parent_of.items():
        if condition is not None:
            parent, labels = condition
            for label in labels:
                children.setdefault(parent, {}).setdefault(label, []).append(name)
    roots = [n for n, c in parent_of.items() if c is None]
    return TreeSpace(
        build_root(roots, lambda n, vertex: _parameter(hps[n], children.get(n), vertex))
    )


def _parameter(hp: Any, children: dict[Hashable, list[str]] | None, vertex) -> Any:
    name = hp.name
    if isinstance(hp, CS.UniformFloatHyperparameter):
        return Real(name, hp.lower, hp.upper, log_scale=bool(hp.log))
    if isinstance(hp, CS.UniformIntegerHyperparameter):
        return Integer(name, hp.lower, hp.upper, log_scale=bool(hp.log))
    if isinstance(hp, (CS.CategoricalHyperparameter, CS.OrdinalHyperparameter)):
        weights = getattr(hp, "weights", None)
        if weights is not None and len(set(weights)) > 1:
            raise ConfigurationError(
                f"hyperparameter {name!r}: weights {tuple(weights)} are not supported "
                "(a treebo space has no prior over labels); remove them."
            )
        labels = _labels(hp)
        if children:
            return Choice(name, {v: vertex(children.get(v, [])) for v in labels})
        ordered = isinstance(hp, CS.OrdinalHyperparameter)
        return Categorical(name, labels, ordered=ordered)
    if isinstance(hp, CS.Constant):
        return Categorical(name, [_plain(hp.value)])
    raise ConfigurationError(
        f"hyperparameter {name!r}: {type(hp).__name__} is not supported (treebo "
        "models uniform floats and integers, categoricals, ordinals and "
        "constants)."
    )


def configspace_from_tree_space(space: TreeSpace, seed: int | None = None) -> Any:
    """A ConfigSpace ``ConfigurationSpace`` that describes ``space``.

    Reals and integers become uniform float and integer hyperparameters (with
    ``log``), categoricals and choices ``CategoricalHyperparameter``\\ s
    (ordered categoricals ``OrdinalHyperparameter``\\ s, one-value ones
    ``Constant``\\ s), and each parameter below a choice gets an
    ``EqualsCondition`` (or an ``InCondition`` for a parameter shared by
    several options).

    Args:
        space: The treebo space.
        seed: Seed of the ``ConfigurationSpace``'s sampler.

    Raises:
        ConfigurationError: Naming the parameter, for labels ConfigSpace
            cannot hold (e.g. tuples).
    """
    cs = CS.ConfigurationSpace(seed=seed)
    hps: dict[str, Any] = {}
    for name in space.parameter_names:
        p = space.columns[name].param
        if isinstance(p, Real):
            hps[name] = CS.UniformFloatHyperparameter(
                name, p.lower, p.upper, log=p.log_scale
            )
        elif isinstance(p, Integer):
            hps[name] = CS.UniformIntegerHyperparameter(
                name, p.low, p.high, log=p.log_scale
            )
        else:
            labels = p.labels
            bad = [v for v in labels if not isinstance(v, (str, int, float, bool))]
            if bad:
                raise ConfigurationError(
                    f"parameter {name!r}: ConfigSpace holds str, int, float and "
                    f"bool values, not {bad[0]!r}."
                )
            if isinstance(p, Categorical) and len(labels) == 1:
                hps[name] = CS.Constant(name, labels[0])
            elif isinstance(p, Categorical) and p.ordered:
                hps[name] = CS.OrdinalHyperparameter(name, labels)
            else:
                hps[name] = CS.CategoricalHyperparameter(name, labels)
    cs.add(list(hps.values()))
    conditions = []
    for name in space.parameter_names:
        parent = space.columns[name].parent
        if parent is None:
            continue
        choice, labels = parent
        if len(labels) == 1:
            conditions.append(EqualsCondition(hps[name], hps[choice], labels[0]))
        else:
            conditions.append(InCondition(hps[name], hps[choice], list(labels)))
    cs.add(conditions)
    return cs
