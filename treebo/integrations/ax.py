r"""Ax integration: search spaces with ``dependents`` and an Add-Tree generation step.

Ax describes a conditional space with ``ChoiceParameter(..., dependents={value:
[names]})``: choosing ``value`` activates the named parameters. That is a
[`TreeSpace`][treebo.space.tree_space.TreeSpace]: a choice's options lead to child
vertices that own the activated parameters.
[`tree_space_from_ax()`][treebo.integrations.ax.tree_space_from_ax] and
[`ax_search_space()`][treebo.integrations.ax.ax_search_space] convert between the two,
and
[`add_tree_generation_strategy()`][treebo.integrations.ax.add_tree_generation_strategy]
runs [`AddTreeGP`][treebo.add_tree.model.AddTreeGP] inside Ax's modular BoTorch
generator, which passes the transformed space's ``hierarchical_dependencies`` to
`AddTreeGP.construct_inputs()`::

    from ax.core.experiment import Experiment

    experiment = Experiment(search_space=ax_search_space(space), ...)
    strategy = add_tree_generation_strategy(num_initial_trials=6)
    generator_run = strategy.gen(experiment=experiment, n=1)

With Ax's ``Client``, two added lines switch an experiment to the Add-Tree
model; the experiment saves to and loads from JSON as any other::

    from treebo.integrations.ax import add_tree_generation_strategy

    client.set_generation_strategy(add_tree_generation_strategy())

Importing this module registers ``AddTreeGP`` with Ax
([`register_with_ax()`][treebo.integrations.ax.register_with_ax]). Ax is an optional
dependency (``pip install "treebo[ax]"``); importing this module without it raises an
``ImportError`` that says so.
"""

from __future__ import annotations

from typing import Any

try:
    from ax.core.parameter import ChoiceParameter, ParameterType, RangeParameter
    from ax.core.search_space import SearchSpace
except ImportError as err:  # pragma: no cover - exercised without ax installed
    raise ImportError(
        "treebo.integrations.ax needs Ax: pip install 'treebo[ax]'."
    ) from err

from treebo.add_tree.options import LOOP_KERNEL_OPTIONS, AddTreeKernelOptions
from treebo.space import (
    Categorical,
    Choice,
    ConfigurationError,
    Integer,
    Real,
    TreeSpace,
)
from treebo.space.parameter_tree import build_root

_LABEL_TYPES = {bool: ParameterType.BOOL, int: ParameterType.INT}

#: The kernel options of treebo's loop
#: (``treebo.add_tree.options.LOOP_KERNEL_OPTIONS``)
#: as ``AddTreeGP`` keyword arguments: the default ``model_options`` of
#: ``add_tree_generation_strategy()``: sharing by depth lets an unexplored
#: branch borrow its siblings' scales (docs/design.md). Without a
#: ``noise_floor`` the noise is inferred under BoTorch's default prior, as in the
#: loop's default (``noise="infer"``); ``noise_floor=1e-6`` gives the loop's model for
#: ``noise="deterministic"``.
LOOP_MODEL_OPTIONS: dict[str, Any] = LOOP_KERNEL_OPTIONS.as_kwargs()


def tree_space_from_ax(search_space: SearchSpace) -> TreeSpace:
    """A [`TreeSpace`][treebo.space.tree_space.TreeSpace] from an Ax search space with
    ``dependents``.

    Parameters that no choice activates sit on the root vertex. A choice's
    ``dependents[value]`` become the parameters and choices of the vertex that ``value``
    leads to; a parameter listed under several values of one choice is one parameter
    shared by those options. Float ranges become [`Real`][treebo.space.parameters.Real],
    integer ranges [`Integer`][treebo.space.parameters.Integer], and choices without
    dependents [`Categorical`][treebo.space.parameters.Categorical] (ordered if Ax's
    is). Parameter names and choice values carry over (a choice value is the option's
    label in treebo's dicts).

    Args:
        search_space: An Ax ``SearchSpace`` of ``RangeParameter``\\ s (log scale
            allowed) and ``ChoiceParameter``\\ s, hierarchical or not.

    Raises:
        ConfigurationError: For parameter types treebo does not model (fixed
            parameters), naming the parameter; a parameter activated by two
            different choices; or parameter constraints (treebo's spaces have none:
            the constraint is named, not dropped).
    """
    if search_space.parameter_constraints:
        raise ConfigurationError(
            f"parameter constraint {search_space.parameter_constraints[0]} is not "
            "supported (a treebo space has none); remove it, or encode it in the "
            "objective (e.g. return a failure where it is violated)."
        )
    params = search_space.parameters
    parent_of: dict[str, str] = {}
    for name, p in params.items():
        if isinstance(p, ChoiceParameter) and p.is_hierarchical:
            for children in p.dependents.values():
                for child in children:
                    if child not in params:
                        raise ConfigurationError(
                            f"parameter {name!r}: dependent {child!r} is not in "
                            "the search space."
                        )
                    if parent_of.setdefault(child, name) != name:
                        raise ConfigurationError(
                            f"parameter {child!r} is activated by both "
                            f"{parent_of[child]!r} and {name!r}; a tree needs one "
                            "parent."
                        )

    def make(name: str, vertex) -> Any:
        p = params[name]
        if isinstance(p, RangeParameter):
            kind = Integer if p.parameter_type == ParameterType.INT else Real
            return kind(name, p.lower, p.upper, log_scale=p.log_scale)
        if isinstance(p, ChoiceParameter) and p.is_hierarchical:
            return Choice(
                name, {v: vertex(list(p.dependents.get(v, []))) for v in p.values}
            )
        if isinstance(p, ChoiceParameter):
            return Categorical(name, p.values, ordered=bool(p.is_ordered))
        raise ConfigurationError(
            f"parameter {name!r}: {type(p).__name__} is not supported; "
            "remove fixed parameters before converting."
        )

    roots = [name for name in params if name not in parent_of]
    return TreeSpace(build_root(roots, make))


def ax_search_space(space: TreeSpace) -> SearchSpace:
    """An Ax search space with ``dependents`` that describes ``space``.

    Reals and integers become ``RangeParameter``\\ s, categoricals ``ChoiceParameter``\\
    s (ordered as theirs), and choices ``ChoiceParameter``\\ s with ``dependents``
    (ordered: their order only matters to Ax's transforms;
    [`AddTreeGP`][treebo.add_tree.model.AddTreeGP] only uses them to pick branches, and
    ordered choices are not one-hot encoded, which keeps one column per choice); Ax
    sorts numeric choice values. Labels must be ``int``, ``float``, ``bool`` or ``str``
    of one type per parameter.

    Raises:
        ValueError: Naming the parameter, for labels Ax cannot hold and for a
            parameter shared by several options (Ax requires a tree of
            parameters).
    """
    dependents: dict[str, dict[Any, list[str]]] = {}
    for column in space.columns.values():
        if column.parent is not None:
            choice, labels = column.parent
            if len(labels) > 1:
                raise ValueError(
                    f"parameter {column.name!r} is shared by the options "
                    f"{list(labels)} of {choice!r}; Ax's dependents cannot list "
                    "a parameter under several values."
                )
            for label in labels:
                dependents.setdefault(choice, {}).setdefault(label, [])
                dependents[choice][label].append(column.name)
    parameters: list[Any] = []
    for name in space.parameter_names:
        p = space.columns[name].param
        if isinstance(p, (Real, Integer)):
            is_int = isinstance(p, Integer)
            lower, upper = (p.low, p.high) if is_int else (p.lower, p.upper)
            parameters.append(
                RangeParameter(
                    name,
                    ParameterType.INT if is_int else ParameterType.FLOAT,
                    lower=lower,
                    upper=upper,
                    log_scale=p.log_scale,
                )
            )
            continue
        labels = p.labels
        kinds = {type(label) for label in labels}
        if len(kinds) != 1 or not kinds <= {int, float, bool, str}:
            raise ValueError(
                f"parameter {name!r}: labels must share one of the types int, "
                f"float, bool, str for Ax, got {sorted(map(str, kinds))}."
            )
        kind = kinds.pop()
        ordered = p.ordered if isinstance(p, Categorical) else len(labels) > 1
        deps = dependents.get(name)
        parameters.append(
            ChoiceParameter(
                name,
                _LABEL_TYPES.get(
                    kind, ParameterType.STRING if kind is str else ParameterType.FLOAT
                ),
                values=list(labels),
                is_ordered=ordered,
                sort_values=kind in (int, float),
                dependents={k: deps.get(k, []) for k in labels} if deps else None,
            )
        )
    return SearchSpace(parameters=parameters)


_REGISTERED = False


def register_with_ax() -> None:
    """Make ``AddTreeGP`` and ``NoiseFloorLikelihood`` known to Ax.

    Both go into Ax's JSON and SQL storage registries (Ax's ``register_model`` for the
    model, the same registries for the likelihood), so an experiment whose generation
    strategy uses them saves and loads; ``AddTreeGP`` also gets its model-input
    constructor (`_register_ax_input_constructor()`), so a loaded experiment generates
    as the saved one did. Importing this module calls it; calling it again does nothing.

    Example:
        >>> from ax.storage.botorch_modular_registry import REVERSE_MODEL_REGISTRY
        >>> register_with_ax()
        >>> REVERSE_MODEL_REGISTRY["AddTreeGP"].__name__
        'AddTreeGP'
    """
    global _REGISTERED
    if _REGISTERED:
        return
    from ax.storage.botorch_modular_registry import (
        CLASS_TO_REGISTRY,
        CLASS_TO_REVERSE_REGISTRY,
        register_model,
    )
    from gpytorch.likelihoods import Likelihood

    from treebo.add_tree.model import AddTreeGP
    from treebo.gp.fit import NoiseFloorLikelihood

    register_model(AddTreeGP)
    # Ax has no register_likelihood; register_model does the same for models.
    name = NoiseFloorLikelihood.__name__
    CLASS_TO_REGISTRY[Likelihood][NoiseFloorLikelihood] = name
    CLASS_TO_REVERSE_REGISTRY[Likelihood][name] = NoiseFloorLikelihood
    _register_ax_input_constructor()
    _REGISTERED = True


def _register_ax_input_constructor() -> None:
    """Let Ax hand ``AddTreeGP`` the codes of its categorical columns.

    Ax passes only the indices of unordered choice columns to
    ``construct_inputs``; its search-space digest also knows their values
    (``discrete_choices``), so a model-input constructor registered for
    ``AddTreeGP`` (Ax's ``submodel_input_constructor`` dispatcher) adds them.
    """
    from ax.generators.torch.botorch_modular.surrogate import (
        submodel_input_constructor,
    )
    from botorch.models.model import Model

    from treebo.add_tree.model import AddTreeGP

    base = submodel_input_constructor.dispatch(Model)

    @submodel_input_constructor.register(AddTreeGP)
    def _add_tree_inputs(
        botorch_model_class, model_config, dataset, search_space_digest, surrogate
    ):
        inputs = base(
            botorch_model_class=botorch_model_class,
            model_config=model_config,
            dataset=dataset,
            search_space_digest=search_space_digest,
            surrogate=surrogate,
        )
        deps = search_space_digest.hierarchical_dependencies or {}
        choices = search_space_digest.discrete_choices
        values = {
            int(c): [float(v) for v in choices[c]]
            for c in search_space_digest.categorical_features
            if c not in deps and c in choices
        }
        if values:
            inputs["categorical_values"] = values
        return inputs


def add_tree_generation_strategy(
    num_initial_trials: int = 5,
    model_options: AddTreeKernelOptions | dict[str, Any] | None = None,
    seed: int | None = None,
    noise_floor: float | None = None,
) -> Any:
    """Sobol trials, then BoTorch BO with
    [`AddTreeGP`][treebo.add_tree.model.AddTreeGP], in Ax.

    The hierarchical structure is kept (``Cast(flatten_hss=False)``) and choice
    parameters stay one numeric column each (no one-hot encoding), so Ax hands
    ``AddTreeGP.construct_inputs`` the space's ``hierarchical_dependencies``.

    Args:
        num_initial_trials: Quasi-random trials before the model takes over.
        model_options: The kernel's settings, as
            [`AddTreeKernelOptions`][treebo.add_tree.options.AddTreeKernelOptions]
            or a dict of its fields. Default: the loop's (`LOOP_MODEL_OPTIONS`:
            lengthscales and output scales shared by depth, an offset per vertex, shared
            components); ``{}`` gives Definition 4 of the Add-Tree paper.
        seed: Seed of the Sobol trials (default: unseeded).
        noise_floor: Lower bound on the noise variance of the standardized outcomes (see
            [`noise_floor_likelihood()`][treebo.gp.fit.noise_floor_likelihood]; e.g.
            ``1e-6`` for a deterministic objective, as in
            [`TreeOptimizer`][treebo.loop.optimizer.TreeOptimizer]). Default: BoTorch's
            likelihood.

    Returns:
        An Ax ``GenerationStrategy``.
    """
    from ax.adapter.registry import Generators, Y_trans
    from ax.adapter.transforms.choice_encode import ChoiceToNumericChoice
    from ax.adapter.transforms.log import Log
    from ax.adapter.transforms.remove_fixed import RemoveFixed
    from ax.generation_strategy.generation_node import GenerationStep
    from ax.generation_strategy.generation_strategy import GenerationStrategy
    from ax.generators.torch.botorch_modular.surrogate import SurrogateSpec
    from ax.generators.torch.botorch_modular.utils import ModelConfig

    from treebo.add_tree.model import AddTreeGP
    from treebo.gp.fit import NoiseFloorLikelihood

    if num_initial_trials < 1:
        raise ValueError(f"num_initial_trials must be >= 1, got {num_initial_trials}.")
    if noise_floor is not None and not noise_floor > 0:
        raise ValueError(f"noise_floor must be > 0, got {noise_floor}.")
    register_with_ax()
    if model_options is None:
        kernel_options = LOOP_KERNEL_OPTIONS
    elif isinstance(model_options, AddTreeKernelOptions):
        kernel_options = model_options
    else:
        kernel_options = AddTreeKernelOptions(**model_options)
    likelihood: dict[str, Any] = {}
    if noise_floor is not None:
        likelihood = {
            "likelihood_class": NoiseFloorLikelihood,
            "likelihood_options": {"noise_floor": noise_floor},
        }
    config = ModelConfig(
        botorch_model_class=AddTreeGP,
        model_options=kernel_options.as_kwargs(),
        **likelihood,
    )
    surrogate = SurrogateSpec(model_configs=[config])
    return GenerationStrategy(
        name="Sobol+AddTreeGP",
        nodes=[
            GenerationStep(
                generator=Generators.SOBOL,
                num_trials=num_initial_trials,
                generator_kwargs={"seed": seed},
            ),
            GenerationStep(
                generator=Generators.BOTORCH_MODULAR,
                num_trials=-1,
                generator_kwargs={
                    "surrogate_spec": surrogate,
                    "transforms": [RemoveFixed, ChoiceToNumericChoice, Log, *Y_trans],
                    "transform_configs": {"Cast": {"flatten_hss": False}},
                },
            ),
        ],
    )


register_with_ax()
