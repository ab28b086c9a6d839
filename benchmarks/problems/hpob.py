"""HPO-B's conditional search spaces as tree-structured pools.

HPO-B (Pineda-Arango et al., 2021) evaluates optimizers on pools of
configurations that OpenML users actually ran, each with its validation
accuracy. The ``bocode`` package ships the HPO-B-v3 pools offline (``pip install
--no-deps bocode``; data: ``bocode/opt_problems/hpo/data/hpob_data.npz``, one
``(n, d + 1)`` array per ``"<space>_<dataset>"``, features scaled to [0, 1],
accuracy last). Five of its spaces are conditional:

- **SVM** (5527, 5891): ``kernel`` is radial (HPO-B's ``_INVALID`` level, the
  default), linear or polynomial; ``gamma`` is active for radial, ``degree``
  for polynomial, where it may also be left at its default.
- **XGBoost** (5906, 5971, 6767): ``booster`` is ``gbtree`` (``_INVALID``, the
  default) or ``gblinear``; ``gbtree`` activates ``min_child_weight``,
  ``colsample_bytree``, ``colsample_bylevel`` and ``max_depth`` (which may be
  left at its default); ``eta``, ``subsample``, ``lambda``, ``alpha`` and
  ``nrounds`` (which may be left at its default) are shared; 6767 adds
  whether ``nthread`` was set.

A ``*.na`` column marks a parameter that was not set (its value column then
holds 0). An inactive parameter and one left at its default both show as
``.na``; the decoding tells them apart by the branch: under the branch that
does not use the parameter it is inactive, under the one that does it is a
choice between ``"default"`` and ``"tuned"``. :func:`decode` turns every row
into a configuration of the space; :func:`encode` turns a configuration back
into HPO-B's row (both checked on every pool row by the tests).

The test tasks: six datasets per space, except 5906, whose six pools in
``bocode`` are more than HPO-B's test split; its first two (3918, 9971) are
taken, which gives the 26 conditional test tasks the published means are
over. (Our inference from the pools' order; random search on these 26 tasks
reproduces HPO-B's published random baseline at 50 and 100 trials.)
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from treebo import Categorical, Choice, Real, TreeSpace, Vertex

#: Column names per space, in HPO-B's order (its meta-dataset descriptors).
_SVM = [
    "cost", "gamma", "gamma.na", "degree", "degree.na",
    "kernel.ohe._INVALID", "kernel.ohe._linear", "kernel.ohe._polynomial",
]  # fmt: skip
_XGB = [
    "eta", "max_depth", "max_depth.na", "min_child_weight", "min_child_weight.na",
    "subsample", "colsample_bytree", "colsample_bytree.na", "colsample_bylevel",
    "colsample_bylevel.na", "lambda", "alpha", "nrounds", "nrounds.na",
    "booster.ohe._INVALID", "booster.ohe._gblinear",
]  # fmt: skip
_XGB_6767 = [
    "eta", "subsample", "lambda", "alpha", "nthread", "nthread.na", "nrounds",
    "nrounds.na", "max_depth", "max_depth.na", "min_child_weight",
    "min_child_weight.na", "colsample_bytree", "colsample_bytree.na",
    "colsample_bylevel", "colsample_bylevel.na", "booster.ohe._INVALID",
    "booster.ohe._gblinear",
]  # fmt: skip
COLUMNS = {
    "5527": _SVM,
    "5891": _SVM,
    "5906": _XGB,
    "5971": _XGB,
    "6767": _XGB_6767,
}

#: HPO-B's conditional test tasks: ``(space, dataset)``.
TEST_TASKS = [
    *(("5527", d) for d in ("10101", "145804", "146064", "146065", "31", "9914")),
    *(("5891", d) for d in ("3492", "3891", "3899", "6566", "9889", "9980")),
    *(("5906", d) for d in ("3918", "9971")),
    *(("5971", d) for d in ("10093", "34536", "3954", "43", "6566", "9970")),
    *(("6767", d) for d in ("145804", "146064", "146065", "31", "9914", "9967")),
]

#: HPO-B's initial design: this many random pool rows per run.
N_INITIAL = 5

_TREE_PARAMETERS = ("min_child_weight", "colsample_bytree", "colsample_bylevel")
_KERNELS = {"_INVALID": "radial", "_linear": "linear", "_polynomial": "polynomial"}


def _unit(name: str) -> Real:
    return Real(name, 0.0, 1.0)


def _optional(name: str) -> Choice:
    """``<name>_set``: left at its default, or tuned."""
    return Choice(f"{name}_set", {"default": Vertex(), "tuned": Vertex([_unit(name)])})


def svm_space() -> TreeSpace:
    """SVM (5527, 5891): ``cost``, then the kernel's own parameters."""
    kernel = Choice(
        "kernel",
        {
            "radial": Vertex([_unit("gamma")]),
            "linear": Vertex(),
            "polynomial": Vertex(choices=[_optional("degree")]),
        },
    )
    return TreeSpace(Vertex([_unit("cost")], choices=[kernel]))


def xgboost_space(nthread: bool = False) -> TreeSpace:
    """XGBoost (5906, 5971; 6767 with ``nthread``): shared learning
    parameters, and four tree parameters under ``booster="gbtree"``."""
    shared: list[Any] = [_unit(n) for n in ("eta", "subsample", "lambda", "alpha")]
    if nthread:
        shared.append(Categorical("nthread", ["default", "set"]))
    gbtree = Vertex(
        [
            _unit(n)
            for n in ("min_child_weight", "colsample_bytree", "colsample_bylevel")
        ],
        choices=[_optional("max_depth")],
    )
    booster = Choice("booster", {"gbtree": gbtree, "gblinear": Vertex()})
    return TreeSpace(Vertex(shared, choices=[_optional("nrounds"), booster]))


def space_of(space_id: str) -> TreeSpace:
    """The :class:`~treebo.TreeSpace` of HPO-B search space ``space_id``."""
    if space_id not in COLUMNS:
        raise ValueError(
            f"space_id must be one of {sorted(COLUMNS)}, got {space_id!r}."
        )
    if space_id in ("5527", "5891"):
        return svm_space()
    return xgboost_space(nthread=space_id == "6767")


def decode(space_id: str, row: np.ndarray) -> dict[str, Any]:
    """The configuration of one HPO-B feature row.

    Raises:
        ValueError: If the row's ``.na`` and one-hot columns fit no branch.
    """
    col = dict(zip(COLUMNS[space_id], (float(v) for v in row), strict=True))
    na = {n[:-3] for n, v in col.items() if n.endswith(".na") and v == 1.0}
    config: dict[str, Any] = {}

    def take(name: str, used: bool) -> None:
        if used and name not in na:
            config[name] = col[name]
        elif not used and name not in na:
            raise ValueError(f"{name} is set on a branch that does not use it: {row}")

    def optional(name: str) -> None:
        config[f"{name}_set"] = "default" if name in na else "tuned"
        take(name, name not in na)

    if space_id in ("5527", "5891"):
        level = [k for k in _KERNELS if col[f"kernel.ohe.{k}"] == 1.0]
        if len(level) != 1:
            raise ValueError(f"no single kernel in {row}")
        kernel = config["kernel"] = _KERNELS[level[0]]
        config["cost"] = col["cost"]
        take("gamma", kernel == "radial")
        if kernel == "polynomial":
            optional("degree")
        else:
            take("degree", False)
        return config
    gbtree = col["booster.ohe._INVALID"] == 1.0
    if gbtree == (col["booster.ohe._gblinear"] == 1.0):
        raise ValueError(f"no single booster in {row}")
    config["booster"] = "gbtree" if gbtree else "gblinear"
    for name in ("eta", "subsample", "lambda", "alpha"):
        config[name] = col[name]
    if space_id == "6767":
        config["nthread"] = "default" if "nthread" in na else "set"
    optional("nrounds")
    for name in _TREE_PARAMETERS:
        take(name, gbtree)
    if gbtree:
        optional("max_depth")
    else:
        take("max_depth", False)
    return config


def encode(space_id: str, config: dict[str, Any]) -> np.ndarray:
    """HPO-B's feature row of a configuration (inverse of :func:`decode`)."""
    names = COLUMNS[space_id]
    row = dict.fromkeys(names, 0.0)
    for name in names:
        if name.endswith(".na"):
            row[name] = 0.0 if name[:-3] in config else 1.0
        elif ".ohe." not in name and name in config and name != "nthread":
            row[name] = float(config[name])
    if space_id in ("5527", "5891"):
        level = {v: k for k, v in _KERNELS.items()}[config["kernel"]]
        row[f"kernel.ohe.{level}"] = 1.0
    else:
        level = "_INVALID" if config["booster"] == "gbtree" else "_gblinear"
        row[f"booster.ohe.{level}"] = 1.0
    if space_id == "6767":
        unset = config["nthread"] == "default"
        row["nthread"], row["nthread.na"] = (0.0, 1.0) if unset else (1.0, 0.0)
    return np.array([row[n] for n in names])


def hpob_data_path() -> Path:
    """Where ``bocode`` keeps the HPO-B pools.

    Raises:
        ModuleNotFoundError: If ``bocode`` is not installed.
    """
    import importlib.util

    spec = importlib.util.find_spec("bocode")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(
            "HPO-B needs the bocode package: pip install --no-deps bocode"
        )
    return Path(spec.origin).parent / "opt_problems" / "hpo" / "data" / "hpob_data.npz"


@functools.lru_cache(maxsize=2)
def _tables() -> Any:
    return np.load(hpob_data_path())


class HPOBTask:
    """One HPO-B task as a pool: every row decoded into a configuration.

    A :class:`~benchmarks.problems.protocol.Problem` whose objective knows the
    pool's configurations only.

    Attributes:
        space: The search space.
        pool: ``m x d`` encodings of the pool's distinct configurations.
        accuracy: ``m`` validation accuracies (the best of a configuration's
            rows where HPO-B lists it more than once).
        raw: The ``m`` HPO-B feature rows behind ``pool``.
    """

    def __init__(self, space_id: str, dataset_id: str) -> None:
        self.space_id, self.dataset_id = space_id, dataset_id
        table = _tables()[f"{space_id}_{dataset_id}"]
        self.space = space_of(space_id)
        configs = [decode(space_id, row) for row in table[:, :-1]]
        encoded = self.space.to_tensor(configs)
        unique, inverse = torch.unique(encoded, dim=0, return_inverse=True)
        accuracy = torch.full((unique.shape[0],), -torch.inf, dtype=torch.float64)
        accuracy.scatter_reduce_(
            0, inverse, torch.as_tensor(table[:, -1], dtype=torch.float64), "amax"
        )
        first = torch.full((unique.shape[0],), table.shape[0], dtype=torch.long)
        first.scatter_reduce_(0, inverse, torch.arange(table.shape[0]), "amin")
        self.pool, self.accuracy = unique, accuracy
        self.raw = table[first.numpy(), :-1]
        self._index = {tuple(row.tolist()): i for i, row in enumerate(unique)}

    def index_of(self, config: dict[str, Any]) -> int:
        """The pool row of ``config``."""
        return self._index[tuple(self.space.to_tensor(config).tolist())]

    def accuracy_of(self, config: dict[str, Any]) -> float:
        """The validation accuracy of a pool configuration (to maximize)."""
        return float(self.accuracy[self.index_of(config)])

    def objective(self, config: dict[str, Any]) -> float:
        """The error of a pool configuration, ``1 - accuracy`` (to minimize; the
        runner, :mod:`benchmarks.hpob`, maximizes the accuracy)."""
        return 1.0 - self.accuracy_of(config)

    @property
    def optimal_value(self) -> float:
        """The pool's smallest error."""
        return 1.0 - float(self.accuracy.max())

    def normalized_regret(self, accuracies: Tensor) -> Tensor:
        r"""HPO-B's normalized regret of the best accuracy so far,
        :math:`1 - (y^+_t - \min y) / (\max y - \min y)` over the pool."""
        low, high = self.accuracy.min(), self.accuracy.max()
        best = torch.as_tensor(accuracies, dtype=torch.float64).cummax(0).values
        return 1.0 - (best - low) / (high - low)


def initial_rows(task: HPOBTask, seed: int) -> list[int]:
    """The seed's 5 random pool rows (the same for every method, in HPO-B's
    discrete and continuous modes)."""
    key = int(task.space_id) * 1_000_003 + int(task.dataset_id) + 7919 * seed
    generator = torch.Generator().manual_seed(key)
    return torch.randperm(task.pool.shape[0], generator=generator)[:N_INITIAL].tolist()
