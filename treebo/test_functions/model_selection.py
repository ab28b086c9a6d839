r"""A real conditional task: choose and tune a classifier by cross-validation.

[`ModelSelection`][treebo.test_functions.model_selection.ModelSelection] (P9 in the
benchmark reference) scores a configuration by the cross-validated error of a
scikit-learn pipeline on a dataset bundled with scikit-learn (no download): a
preprocessing step chosen at the root and shared by every model, then one of six model
families with their own integer, categorical and conditional parameters:

- ``svm``: ``C``, and a ``kernel`` choice whose ``gamma`` is shared by the
  ``rbf``, ``poly`` and ``sigmoid`` kernels and ``coef0`` by ``poly`` and
  ``sigmoid`` (ConfigSpace's ``InCondition``); ``degree`` for ``poly``;
- ``forest``: a random forest (integers, a criterion, a bootstrap flag);
- ``boosting``: histogram gradient boosting;
- ``knn``: neighbours, weights and metric;
- ``mlp``: a small neural network (width, depth, activation, rates);
- ``logistic``: L2-regularized logistic regression.

Every fit runs for real; the result is deterministic given ``seed`` (the folds
and every model's ``random_state``). Fits run single-threaded.

Example:
    >>> task = ModelSelection("breast_cancer", seed=0, folds=3)
    >>> config = {"preprocessing": "standard", "model": "logistic", "C_lr": 1.0}
    >>> 0.0 <= task.objective(config) < 0.1
    True
"""

from __future__ import annotations

import warnings
from typing import Any

from treebo.space import TreeSpace
from treebo.space.parameters import Categorical, Choice, Integer, Real, Vertex

DATASETS = ("digits", "breast_cancer", "wine", "iris")


def model_selection_space() -> TreeSpace:
    """The space of preprocessing steps, model families and their parameters."""
    gamma = Real("gamma", 1e-5, 1.0, log_scale=True)
    coef0 = Real("coef0", 0.0, 1.0)
    svm = Vertex(
        [Real("C", 1e-3, 1e3, log_scale=True)],
        [
            Choice(
                "kernel",
                {
                    "rbf": Vertex([gamma]),
                    "poly": Vertex([gamma, coef0, Integer("degree", 2, 5)]),
                    "sigmoid": Vertex([gamma, coef0]),
                    "linear": Vertex(),
                },
            )
        ],
    )
    forest = Vertex(
        [
            Integer("n_estimators", 10, 300, log_scale=True),
            Integer("max_depth", 2, 32, log_scale=True),
            Integer("min_samples_leaf", 1, 20),
            Real("max_features", 0.05, 1.0),
            Categorical("criterion", ["gini", "entropy"]),
        ],
        [Choice("bootstrap", [True, False])],
    )
    boosting = Vertex(
        [
            Integer("max_iter", 20, 300, log_scale=True),
            Real("learning_rate", 1e-3, 1.0, log_scale=True),
            Integer("max_leaf_nodes", 4, 64, log_scale=True),
            Real("l2_regularization", 1e-6, 1.0, log_scale=True),
        ]
    )
    knn = Vertex(
        [
            Integer("n_neighbors", 1, 50, log_scale=True),
            Categorical("weights", ["uniform", "distance"]),
            Categorical("metric", ["euclidean", "manhattan", "chebyshev"]),
        ]
    )
    mlp = Vertex(
        [
            Integer("width", 16, 256, log_scale=True),
            Integer("depth", 1, 3),
            Categorical("activation", ["relu", "tanh"]),
            Real("alpha", 1e-6, 1e-1, log_scale=True),
            Real("learning_rate_init", 1e-4, 1e-1, log_scale=True),
        ]
    )
    logistic = Vertex([Real("C_lr", 1e-4, 1e4, log_scale=True)])
    preprocessing = Choice(
        "preprocessing",
        {
            "none": Vertex(),
            "standard": Vertex(),
            "minmax": Vertex(),
            "pca": Vertex([Real("pca_variance", 0.5, 0.99)]),
        },
    )
    model = Choice(
        "model",
        {
            "svm": svm,
            "forest": forest,
            "boosting": boosting,
            "knn": knn,
            "mlp": mlp,
            "logistic": logistic,
        },
    )
    return TreeSpace(Vertex(choices=[preprocessing, model]))


class ModelSelection:
    """Cross-validated error of a chosen and tuned classifier (minimized).

    Args:
        dataset: One of `DATASETS` (bundled with scikit-learn).
        seed: Seed of the folds and of every model's ``random_state``.
        folds: Number of stratified cross-validation folds.

    Attributes:
        space:
            [`model_selection_space()`][treebo.test_functions.model_selection.model_selection_space].
        optimal_value: ``None`` (unknown; compare best errors).
    """

    def __init__(self, dataset: str = "digits", seed: int = 0, folds: int = 3) -> None:
        if dataset not in DATASETS:
            raise ValueError(f"dataset must be one of {DATASETS}, got {dataset!r}.")
        if isinstance(folds, bool) or not isinstance(folds, int) or folds < 2:
            raise ValueError(f"folds must be an integer >= 2, got {folds!r}.")
        from sklearn import datasets

        loader = getattr(datasets, f"load_{dataset}")
        self.X, self.y = loader(return_X_y=True)
        self.dataset, self.seed, self.folds = dataset, seed, folds
        self.space = model_selection_space()
        self.optimal_value = None

    def objective(self, config: dict[str, Any]) -> float:
        """``1 -`` mean cross-validated accuracy of the configured pipeline."""
        from sklearn.model_selection import StratifiedKFold, cross_val_score

        config = self.space.validate(config)
        pipeline = self.pipeline(config)
        cv = StratifiedKFold(self.folds, shuffle=True, random_state=self.seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # convergence warnings of short fits
            scores = cross_val_score(pipeline, self.X, self.y, cv=cv, n_jobs=1)
        return float(1.0 - scores.mean())

    def pipeline(self, config: dict[str, Any]) -> Any:
        """The scikit-learn pipeline of a (validated) configuration."""
        from sklearn.decomposition import PCA
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import MinMaxScaler, StandardScaler

        steps = []
        step = config["preprocessing"]
        if step == "standard":
            steps.append(StandardScaler())
        elif step == "minmax":
            steps.append(MinMaxScaler())
        elif step == "pca":
            steps += [
                StandardScaler(),
                PCA(config["pca_variance"], random_state=self.seed),
            ]
        steps.append(self._model(config))
        return make_pipeline(*steps)

    def _model(self, c: dict[str, Any]) -> Any:
        from sklearn.ensemble import (
            HistGradientBoostingClassifier,
            RandomForestClassifier,
        )
        from sklearn.linear_model import LogisticRegression
        from sklearn.neighbors import KNeighborsClassifier
        from sklearn.neural_network import MLPClassifier
        from sklearn.svm import SVC

        seed, model = self.seed, c["model"]
        if model == "svm":
            return SVC(
                C=c["C"],
                kernel=c["kernel"],
                gamma=c.get("gamma", "scale"),
                coef0=c.get("coef0", 0.0),
                degree=c.get("degree", 3),
                max_iter=200_000,
                random_state=seed,
            )
        if model == "forest":
            return RandomForestClassifier(
                n_estimators=c["n_estimators"],
                max_depth=c["max_depth"],
                min_samples_leaf=c["min_samples_leaf"],
                max_features=c["max_features"],
                criterion=c["criterion"],
                bootstrap=c["bootstrap"],
                random_state=seed,
                n_jobs=1,
            )
        if model == "boosting":
            return HistGradientBoostingClassifier(
                max_iter=c["max_iter"],
                learning_rate=c["learning_rate"],
                max_leaf_nodes=c["max_leaf_nodes"],
                l2_regularization=c["l2_regularization"],
                early_stopping=False,
                random_state=seed,
            )
        if model == "knn":
            return KNeighborsClassifier(
                n_neighbors=c["n_neighbors"], weights=c["weights"], metric=c["metric"]
            )
        if model == "mlp":
            return MLPClassifier(
                hidden_layer_sizes=(c["width"],) * c["depth"],
                activation=c["activation"],
                alpha=c["alpha"],
                learning_rate_init=c["learning_rate_init"],
                max_iter=100,
                random_state=seed,
            )
        return LogisticRegression(C=c["C_lr"], max_iter=500)
