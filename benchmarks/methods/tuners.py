"""Established tuners as peers: random search, Optuna's TPE, SMAC3 and Ax.

==============  ==============================================================
``random``      the shared initial design, then uniform per choice and value
``optuna_tpe``  Optuna's ``TPESampler(multivariate=True, group=True)``,
                define-by-run, started from the shared initial design
``smac``        SMAC3's hyperparameter-optimization facade (its own design)
``ax_default``  Ax's default generation strategy (``ax.api.Client``)
==============  ==============================================================
"""

from __future__ import annotations

from treebo import Categorical, Integer


def run_smac(problem, seed: int, budget: int) -> list[float]:
    """SMAC3's hyperparameter-optimization facade (random forest surrogate),
    ask/tell on the space exported to ConfigSpace, its own initial design."""
    import tempfile

    from smac import HyperparameterOptimizationFacade, Scenario
    from smac.runhistory.dataclasses import TrialValue

    from treebo.integrations.configspace import configspace_from_tree_space

    cs = configspace_from_tree_space(problem.space, seed=seed)
    with tempfile.TemporaryDirectory() as folder:
        scenario = Scenario(
            cs,
            deterministic=True,
            n_trials=budget,
            seed=seed,
            output_directory=folder,
        )
        smac = HyperparameterOptimizationFacade(
            scenario,
            lambda config, seed=0: 0.0,  # ask/tell: never called
            overwrite=True,
            logging_level=40,
        )
        values = []
        for _ in range(budget):
            info = smac.ask()
            config = {
                k: v.item() if hasattr(v, "item") else v
                for k, v in dict(info.config).items()
            }
            value = problem.objective(problem.space.validate(config))
            smac.tell(info, TrialValue(cost=value))
            values.append(value)
    return values


def _ax_name(name: str, label, shared: bool) -> str:
    return f"{name}__{label}" if shared else name


def run_ax(problem, seed: int, budget: int) -> list[float]:
    """Ax's default generation strategy (``ax.api.Client``) on the space.

    Ax's ``dependent_parameters`` cannot list one parameter under several
    options, so a shared parameter becomes one Ax parameter per option
    (``gamma__rbf``, ``gamma__poly``, ...), read back under its own name.
    """
    import logging

    from ax.api.client import Client
    from ax.api.configs import ChoiceParameterConfig, RangeParameterConfig

    from treebo import Integer, Real

    space = problem.space
    shared = {
        n: c.parent is not None and len(c.parent[1]) > 1
        for n, c in space.columns.items()
    }
    children: dict[tuple[str, object], list[str]] = {}
    for name, column in space.columns.items():
        if column.parent is not None:
            choice, labels = column.parent
            for label in labels:
                ax_name = _ax_name(name, label, shared[name])
                children.setdefault((choice, label), []).append(ax_name)
    configs = []
    for name in space.parameter_names:
        column = space.columns[name]
        p = column.param
        copies = column.parent[1] if shared[name] else [None]
        for label in copies:
            ax_name = _ax_name(name, label, shared[name])
            if isinstance(p, (Real, Integer)):
                is_int = isinstance(p, Integer)
                bounds = (p.low, p.high) if is_int else (p.lower, p.upper)
                configs.append(
                    RangeParameterConfig(
                        ax_name,
                        bounds,
                        "int" if is_int else "float",
                        scaling="log" if p.log_scale else "linear",
                    )
                )
                continue
            if column.role == "choice" and shared[name]:
                raise ValueError(f"run_ax: shared choice {name!r} not supported.")
            labels = p.labels
            kind = {bool: "bool", int: "int", float: "float"}.get(
                type(labels[0]), "str"
            )
            dependents = {
                label: children[(name, label)]
                for label in labels
                if (name, label) in children
            }
            configs.append(
                ChoiceParameterConfig(
                    ax_name,
                    list(labels),
                    kind,
                    is_ordered=getattr(p, "ordered", False),
                    dependent_parameters=dependents or None,
                )
            )
    logging.disable(logging.WARNING)
    client = Client(random_seed=seed)
    client.configure_experiment(parameters=configs)
    client.configure_optimization(objective="-loss")
    values = []
    try:
        for _ in range(budget):
            (index, params), *_ = client.get_next_trials(max_trials=1).items()
            config: dict = {}
            for name in space.parameter_names:  # parents before children
                column = space.columns[name]
                if column.parent is None:
                    config[name] = params[name]
                    continue
                choice, labels = column.parent
                if choice in config and config[choice] in labels:
                    label = config[choice]
                    config[name] = params[_ax_name(name, label, shared[name])]
            value = problem.objective(space.validate(config))
            client.complete_trial(index, raw_data={"loss": value})
            values.append(value)
    finally:
        logging.disable(logging.NOTSET)
    return values


def run_optuna(problem, design: list[dict], seed: int, budget: int) -> list[float]:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    space = problem.space

    def suggest(trial, vertex) -> dict:
        params = {}
        for p in vertex.params:
            if isinstance(p, Integer):
                value = trial.suggest_int(p.name, p.low, p.high, log=p.log_scale)
            elif isinstance(p, Categorical):
                value = trial.suggest_categorical(p.name, p.labels)
            else:
                value = trial.suggest_float(p.name, p.lower, p.upper, log=p.log_scale)
            params[p.name] = value
        for ch in vertex.choices:
            label = trial.suggest_categorical(ch.name, ch.labels)
            params[ch.name] = label
            params.update(suggest(trial, ch.options[label]))
        return params

    sampler = optuna.samplers.TPESampler(
        multivariate=True, group=True, seed=seed, n_startup_trials=len(design)
    )
    study = optuna.create_study(sampler=sampler)
    for config in design:
        study.enqueue_trial(config)
    values = []
    for _ in range(budget):
        trial = study.ask()
        params = suggest(trial, space.root)
        v = problem.objective(params)
        study.tell(trial, v)
        values.append(v)
    return values


def run_random(problem, design: list[dict], seed: int, budget: int) -> list[float]:
    """The initial design, then uniform samples (seeded by ``seed``)."""
    space = problem.space
    configs = design + space.to_dicts(space.sample(budget, seed=10_000 + seed))
    return [problem.objective(c) for c in configs[:budget]]
