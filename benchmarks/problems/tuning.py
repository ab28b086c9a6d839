"""Benchmark problems shaped like tuning spaces: flags, integers, categoricals.

- ``FlagProblem(k)``: four reals and ``k`` binary flags at the root (choices
  whose options own nothing, i.e. plain categoricals). Flag ``i`` adds its own
  constant ``c_i`` unless it takes its target value, so the optimum needs the
  right value of every flag.
- ``ActivatingFlagsProblem(variant)``: a training-recipe space with several
  flags on one vertex, each activating a parameter (``use_weight_decay`` ->
  ``weight_decay``, ...), an optimizer choice, a log-scale learning rate, an
  integer and a categorical, and a non-smooth objective (absolute values).
  Variants ``"a"`` and ``"b"`` place the optimum and the penalties
  differently: tune on one, confirm on the other.

Each problem has ``space``, ``objective(config) -> float`` (minimized) and
``optimal_value``.
"""

from __future__ import annotations

import math

from treebo import Categorical, Choice, Integer, Real, TreeSpace, Vertex


class FlagProblem:
    """Four reals plus ``k`` flags, each flag adding a different constant."""

    def __init__(self, k: int = 12, dim: int = 4) -> None:
        self.k, self.dim = k, dim
        self.space = TreeSpace(
            Vertex(
                [Real(f"x{j}", 0.0, 1.0) for j in range(dim)],
                [Choice(f"flag{i}", [False, True]) for i in range(k)],
            )
        )
        self.targets = [i % 3 != 0 for i in range(k)]
        self.costs = [0.05 + 0.5 * (i + 1) / k for i in range(k)]
        self.centers = [0.2 + 0.6 * j / max(1, dim - 1) for j in range(dim)]
        self.optimal_value = 0.0

    def objective(self, config: dict) -> float:
        value = sum((config[f"x{j}"] - c) ** 2 for j, c in enumerate(self.centers))
        return value + sum(
            cost
            for i, (cost, target) in enumerate(
                zip(self.costs, self.targets, strict=True)
            )
            if config[f"flag{i}"] != target
        )


class ActivatingFlagsProblem:
    """Flags that activate parameters, beside a log-scale rate (see module)."""

    VARIANTS = {
        # lr optimum per optimizer, weight-decay optimum, dropout optimum,
        # warmup optimum, best schedule, penalties for flags left off.
        "a": {
            "lr": {"sgd": -2.0, "adam": -3.0},
            "adam_floor": 0.1,
            "wd": -4.0,
            "dropout": 0.3,
            "warmup": 5,
            "schedule": "cosine",
            "off": {"wd": 0.5, "dropout": 0.2, "warmup": 0.3, "schedule": 0.25},
        },
        "b": {
            "lr": {"sgd": -1.5, "adam": -3.5},
            "adam_floor": 0.0,
            "wd": -2.5,
            "dropout": 0.1,
            "warmup": 12,
            "schedule": "step",
            "off": {"wd": 0.15, "dropout": 0.4, "warmup": 0.1, "schedule": 0.35},
        },
    }

    def __init__(self, variant: str = "a") -> None:
        if variant not in self.VARIANTS:
            raise ValueError(f"variant must be one of {list(self.VARIANTS)}.")
        self.variant = variant
        self.p = self.VARIANTS[variant]
        optimizer = Choice(
            "optimizer",
            {
                "sgd": Vertex(
                    [Real("momentum", 0.0, 0.99)], [Choice("nesterov", [False, True])]
                ),
                "adam": Vertex([Real("beta1", 0.5, 0.999)]),
            },
        )

        def flag(name: str, param) -> Choice:
            return Choice(name, {False: Vertex(), True: Vertex([param])})

        self.space = TreeSpace(
            Vertex(
                [Real("lr", 1e-5, 1.0, log_scale=True)],
                [
                    optimizer,
                    flag("use_weight_decay", Real("weight_decay", 1e-6, 1e-1, True)),
                    flag("use_dropout", Real("dropout", 0.0, 0.8)),
                    flag("use_warmup", Integer("warmup_epochs", 1, 20)),
                    flag(
                        "use_schedule",
                        Categorical("schedule", ["cosine", "step", "linear"]),
                    ),
                ],
            )
        )
        self.optimal_value = min(0.0, self.p["adam_floor"])

    def objective(self, config: dict) -> float:
        p, off = self.p, self.p["off"]
        opt = config["optimizer"]
        value = abs(math.log10(config["lr"]) - p["lr"][opt])
        if opt == "sgd":
            value += abs(config["momentum"] - 0.9) + 0.2 * (not config["nesterov"])
        else:
            value += 2 * abs(config["beta1"] - 0.9) + p["adam_floor"]
        if config["use_weight_decay"]:
            value += 0.3 * abs(math.log10(config["weight_decay"]) - p["wd"])
        else:
            value += off["wd"]
        if config["use_dropout"]:
            value += abs(config["dropout"] - p["dropout"])
        else:
            value += off["dropout"]
        if config["use_warmup"]:
            value += 0.05 * abs(config["warmup_epochs"] - p["warmup"])
        else:
            value += off["warmup"]
        if config["use_schedule"]:
            value += 0.0 if config["schedule"] == p["schedule"] else 0.15
        else:
            value += off["schedule"]
        return value


TUNING_PROBLEMS = {
    "flags12": lambda: FlagProblem(12),
    "flags20": lambda: FlagProblem(20),
    "recipe_a": lambda: ActivatingFlagsProblem("a"),
    "recipe_b": lambda: ActivatingFlagsProblem("b"),
}
