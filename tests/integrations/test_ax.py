"""Ax integration: search spaces with dependents, and AddTreeGP inside Ax."""

from __future__ import annotations

import logging
import math
import warnings

import pytest
import torch

pytest.importorskip("ax")

from ax.core.parameter import ChoiceParameter, ParameterType, RangeParameter  # noqa: E402
from ax.core.search_space import SearchSpace  # noqa: E402

from treebo import Choice, ConfigurationError, Real, TreeSpace, Vertex  # noqa: E402
from treebo.add_tree import AddTreeGP  # noqa: E402
from treebo.integrations.ax import (  # noqa: E402
    LOOP_MODEL_OPTIONS,
    add_tree_generation_strategy,
    ax_search_space,
    tree_space_from_ax,
)
from treebo.test_functions import Jenatton, generalized_jenatton_space  # noqa: E402


def hpo_space() -> SearchSpace:
    """An optimizer choice whose branches own different parameters."""
    return SearchSpace(
        parameters=[
            ChoiceParameter(
                "optimizer",
                ParameterType.STRING,
                values=["sgd", "adam"],
                dependents={"sgd": ["momentum"], "adam": ["beta1", "schedule"]},
                is_ordered=False,
                sort_values=False,
            ),
            RangeParameter("lr", ParameterType.FLOAT, 1e-5, 1e-1, log_scale=True),
            RangeParameter("momentum", ParameterType.FLOAT, 0.0, 0.99),
            RangeParameter("beta1", ParameterType.FLOAT, 0.5, 0.999),
            ChoiceParameter(
                "schedule",
                ParameterType.INT,
                values=[0, 1],
                dependents={1: ["decay"]},
                is_ordered=True,
            ),
            RangeParameter("decay", ParameterType.FLOAT, 0.1, 0.9),
        ]
    )


def test_tree_space_from_ax_builds_the_tree():
    space = tree_space_from_ax(hpo_space())
    root = space.root
    assert [p.name for p in root.params] == ["lr"] and root.params[0].log_scale
    assert [c.name for c in root.choices] == ["optimizer"]
    adam = root.choices[0].options["adam"]
    assert [p.name for p in adam.params] == ["beta1"]
    assert adam.choices[0].options[1].params[0].name == "decay"
    # Paths: sgd, adam/schedule 0, adam/schedule 1.
    assert space.num_paths == 3
    config = {
        "lr": 1e-3,
        "optimizer": "adam",
        "beta1": 0.9,
        "schedule": 1,
        "decay": 0.5,
    }
    assert space.to_dict(space.to_tensor(config)) == pytest.approx(config)


@pytest.mark.parametrize(
    "space", [Jenatton().space, generalized_jenatton_space(3, balanced=False)]
)
def test_round_trip_through_ax_keeps_the_layout(space):
    ax_space = ax_search_space(space)
    assert ax_space.is_hierarchical
    back = tree_space_from_ax(ax_space)
    assert back.parameter_names == space.parameter_names
    assert back.to_hierarchical_dependencies() == space.to_hierarchical_dependencies()
    torch.testing.assert_close(back.bounds, space.bounds)
    X = space.sample(20, seed=0)
    assert back.to_dicts(X) == space.to_dicts(X)


def test_loop_model_options_are_the_tree_optimizer_defaults():
    from treebo import TreeOptimizer

    opt = TreeOptimizer(Jenatton().space)
    assert opt.strategy.name == "add_tree"
    assert opt.strategy.options.kernel.as_kwargs() == LOOP_MODEL_OPTIONS
    # The noise is inferred by both: Ax's default likelihood is BoTorch's.
    assert opt.strategy.options.noise_floor is None and opt.noise == "infer"


def test_integers_categoricals_and_shared_dependents_round_trip():
    ax_space = SearchSpace(
        parameters=[
            ChoiceParameter(
                "kernel",
                ParameterType.STRING,
                values=["rbf", "poly", "linear"],
                dependents={"rbf": ["gamma"], "poly": ["degree"]},
                is_ordered=False,
                sort_values=False,
            ),
            RangeParameter("gamma", ParameterType.FLOAT, 1e-3, 1.0, log_scale=True),
            RangeParameter("degree", ParameterType.INT, 2, 5),
            ChoiceParameter(
                "criterion",
                ParameterType.STRING,
                values=["gini", "entropy", "log_loss"],
                is_ordered=False,
                sort_values=False,
            ),
        ]
    )
    space = tree_space_from_ax(ax_space)
    col = {n: space.columns[n].column for n in space.parameter_names}
    assert space.columns["degree"].role == "integer"
    assert space.categorical_values == {col["criterion"]: [0.0, 1.0, 2.0]}
    deps = space.to_hierarchical_dependencies()
    assert deps[col["kernel"]] == {0: [col["gamma"]], 1: [col["degree"]], 2: []}
    again = tree_space_from_ax(ax_search_space(space))
    assert again.parameter_names == space.parameter_names
    assert again.to_hierarchical_dependencies() == deps
    assert again.categorical_values == space.categorical_values
    config = {"kernel": "poly", "degree": 3, "criterion": "gini"}
    assert again.validate(config) == config
    # Ax holds trees only: a parameter shared by two options is refused.
    gamma = Real("gamma", 1e-3, 1.0)
    shared = TreeSpace(
        Vertex(choices=[Choice("k", {"rbf": Vertex([gamma]), "poly": Vertex([gamma])})])
    )
    with pytest.raises(ValueError, match="'gamma' is shared by the options"):
        ax_search_space(shared)


def test_unsupported_ax_parameters_are_named():
    from ax.core.parameter import FixedParameter

    bad = SearchSpace(parameters=[FixedParameter("n", ParameterType.INT, 3)])
    with pytest.raises(ValueError, match="'n'.*FixedParameter"):
        tree_space_from_ax(bad)
    from ax.core.parameter_constraint import ParameterConstraint

    x, y = (RangeParameter(n, ParameterType.FLOAT, 0.0, 1.0) for n in "xy")
    constrained = SearchSpace(
        parameters=[x, y],
        parameter_constraints=[ParameterConstraint(inequality="x + y <= 1")],
    )
    with pytest.raises(ConfigurationError, match="parameter constraint.*x"):
        tree_space_from_ax(constrained)
    with pytest.raises(ValueError, match="num_initial_trials"):
        add_tree_generation_strategy(num_initial_trials=0)
    with pytest.raises(ValueError, match="noise_floor must be > 0"):
        add_tree_generation_strategy(noise_floor=-1e-6)


def run_ax(search_space, objective, num_initial: int, num_trials: int, **options):
    """Run Sobol + AddTreeGP in Ax; return the strategy (its model is fitted).

    ``options`` go to ``add_tree_generation_strategy``.
    """
    from ax.core.data import Data
    from ax.core.experiment import Experiment
    from ax.core.objective import Objective
    from ax.core.optimization_config import OptimizationConfig
    from pandas import DataFrame

    space = tree_space_from_ax(search_space)
    logging.disable(logging.WARNING)
    experiment = Experiment(
        name="treebo",
        search_space=search_space,
        optimization_config=OptimizationConfig(
            Objective("-f", metric_name_to_signature={"f": "f"})
        ),
    )
    strategy = add_tree_generation_strategy(
        num_initial_trials=num_initial, seed=0, **options
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(num_trials):
            (generator_run,) = strategy.gen(experiment=experiment, n=1)[0]
            trial = experiment.new_trial(generator_run=generator_run)
            params = dict(trial.arm.parameters)
            space.validate(params)  # only the active parameters, in bounds
            value = objective(params)
            trial.mark_running(no_runner_required=True)
            row = {
                "arm_name": trial.arm.name,
                "metric_name": "f",
                "metric_signature": "f",
                "mean": value,
                "sem": 0.0,
                "trial_index": trial.index,
            }
            experiment.attach_data(Data(df=DataFrame([row])))
            trial.mark_completed()
    logging.disable(logging.NOTSET)
    return strategy


def test_add_tree_gp_runs_inside_ax_on_jenatton():
    problem = Jenatton()
    # AddTreeGP's own defaults: Definition 4 exactly.
    strategy = run_ax(
        ax_search_space(problem.space), problem.objective, 6, 7, model_options={}
    )
    adapter = strategy.current_node.generator_spec_to_gen_from._fitted_adapter
    model = adapter.generator.surrogate.model
    assert isinstance(model, AddTreeGP)
    # Ax handed over the tree: 7 vertices, every path of the Jenatton space.
    assert model.tree.num_vertices == 7 and model.tree.num_paths == 4
    # Ax's columns carry the tree: points on different top-level branches share
    # only the root (no continuous parameter), so their covariance is exactly 0;
    # points on one path share every vertex of it.
    X = model.train_inputs[0]
    assert X.shape[-2] == 6  # fitted before the last (7th) trial
    with torch.no_grad():
        K = model.covar_module(X).to_dense()
    names = adapter.generator.surrogate.training_data[0].feature_names
    x1 = X[:, names.index("x1")]
    other_branch = x1.unsqueeze(-1) != x1.unsqueeze(-2)
    assert other_branch.any() and (K[other_branch] == 0).all()
    assert (K.diagonal() > 0).all()


def test_ax_space_with_unordered_string_choice_and_log_scale():
    # The common HPO case: a string choice (categorical for Ax) and a log-scale
    # range. Ax's transforms keep one column per choice for AddTreeGP.
    def objective(params):
        return math.log10(params["lr"]) ** 2 + params.get("decay", 0.0)

    # The strategy's default model options and the loop's noise floor.
    strategy = run_ax(hpo_space(), objective, 4, 6, noise_floor=1e-6)
    adapter = strategy.current_node.generator_spec_to_gen_from._fitted_adapter
    model = adapter.generator.surrogate.model
    assert isinstance(model, AddTreeGP)
    # Ax lists only non-empty dependents: root, sgd, adam and schedule=1 (whose
    # vertex owns decay); a point with schedule=0 ends at the adam vertex.
    assert model.tree.num_vertices == 4 and model.tree.num_paths == 2
    # The options reached the model, and the likelihood has the floor.
    kernel = model.covar_module
    assert kernel.shared_component and kernel.share_outputscales == "depth"
    assert kernel.share_lengthscales == "depth" and kernel.vertex_bias == "all"
    noise = model.likelihood.noise_covar
    assert noise.raw_noise_constraint.lower_bound.item() == pytest.approx(1e-6)
    assert (noise.noise >= 1e-6).all()


def test_ax_plain_categoricals_and_integers_reach_the_kernel():
    # Ax passes AddTreeGP only the indices of unordered choices; the
    # registered input constructor adds every value, observed or not.
    space = SearchSpace(
        parameters=[
            ChoiceParameter(
                "optimizer",
                ParameterType.STRING,
                values=["sgd", "adam"],
                dependents={"sgd": ["momentum"], "adam": ["beta1"]},
                is_ordered=False,
                sort_values=False,
            ),
            RangeParameter("lr", ParameterType.FLOAT, 1e-5, 1e-1, log_scale=True),
            RangeParameter("momentum", ParameterType.FLOAT, 0.0, 0.99),
            RangeParameter("beta1", ParameterType.FLOAT, 0.5, 0.999),
            RangeParameter("layers", ParameterType.INT, 1, 8),
            ChoiceParameter(
                "act",
                ParameterType.STRING,
                values=["relu", "tanh", "gelu", "silu", "elu", "selu", "mish"],
                is_ordered=False,
                sort_values=False,
            ),
        ]
    )
    codes = {"relu": 0, "tanh": 1, "gelu": 2, "silu": 3, "elu": 4, "selu": 5}

    def objective(params):
        assert isinstance(params["layers"], int)
        return (
            math.log10(params["lr"]) ** 2
            + 0.1 * params["layers"]
            + codes.get(params["act"], 6)
        )

    strategy = run_ax(space, objective, 3, 5, noise_floor=1e-6)
    adapter = strategy.current_node.generator_spec_to_gen_from._fitted_adapter
    model = adapter.generator.surrogate.model
    names = adapter.generator.surrogate.training_data[0].feature_names
    act = names.index("act")
    observed = model.train_inputs[0][:, act].unique()
    assert len(observed) < 7  # not every value was tried ...
    values = model.covar_module.categorical_values
    assert set(values) == {act}  # the tree's own choice is not a categorical
    assert values[act] == [float(c) for c in range(7)]  # ... but all are known


def jenatton_client():
    """An Ax ``Client`` over the Jenatton space written with Ax's own configs."""
    from ax.api.client import Client
    from ax.api.configs import ChoiceParameterConfig, RangeParameterConfig

    def choice(name, dependents):
        return ChoiceParameterConfig(
            name, [0, 1], "int", dependent_parameters=dict(enumerate(dependents))
        )

    client = Client()
    client.configure_experiment(
        parameters=[
            choice("x1", [["x2", "r8"], ["x3", "r9"]]),
            choice("x2", [["x4"], ["x5"]]),
            choice("x3", [["x6"], ["x7"]]),
            *[RangeParameterConfig(n, (0.0, 1.0), "float") for n in ("r8", "r9")],
            *[
                RangeParameterConfig(n, (-1.0, 1.0), "float")
                for n in "x4 x5 x6 x7".split()
            ],
        ]
    )
    client.configure_optimization(objective="-f")
    return client


@pytest.mark.parametrize(
    "n_sobol, n_trials",
    [(3, 5), pytest.param(5, 15, marks=[pytest.mark.slow, pytest.mark.timeout(3600)])],
)
def test_an_ax_client_switches_to_add_tree_and_saves_to_json(
    n_sobol, n_trials, tmp_path
):
    from ax.api.client import Client

    problem = Jenatton()
    client = jenatton_client()
    # The lines a user adds: one import, one call.
    client.set_generation_strategy(
        add_tree_generation_strategy(n_sobol, seed=0, noise_floor=1e-6)
    )
    values = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        logging.getLogger("ax").setLevel(logging.WARNING)
        for _ in range(n_trials):
            for index, params in client.get_next_trials(max_trials=1).items():
                problem.space.validate(params)  # a configuration of the tree
                values.append(problem(params))
                client.complete_trial(index, raw_data={"f": values[-1]})
        if n_trials >= 15:  # BO improves on the Sobol trials
            assert min(values[n_sobol:]) < min(values[:n_sobol])
        path = tmp_path / "client.json"
        client.save_to_json_file(str(path))
        loaded = Client.load_from_json_file(str(path))
        nodes = loaded._generation_strategy._nodes
        spec = nodes[-1].generator_specs[0].generator_kwargs["surrogate_spec"]
        assert spec.model_configs[0].botorch_model_class is AddTreeGP
        assert spec.model_configs[0].likelihood_options == {"noise_floor": 1e-6}
        ((index, params),) = loaded.get_next_trials(max_trials=1).items()
    assert index == n_trials
    problem.space.validate(params)
