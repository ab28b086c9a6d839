"""Real tuning tasks: real learners cross-validated on data bundled with
scikit-learn, each with integer, categorical and conditional parameters.

Every task fits its estimator for real on every evaluation, single-threaded,
with fixed folds and ``random_state`` (deterministic given the task), in well
under three seconds on a laptop core. The score is minimized and its optimum
is unknown (tables compare the best score so far).

==================  ========================================================
``rt_mlp_digits``   MLP on digits: depth (1-3 layers, widths per layer),
                    solver (adam: rate, beta1; sgd: rate, momentum, Nesterov,
                    schedule; lbfgs), batch size for the stochastic solvers;
                    hold-out log loss
``rt_hgb_cancer``   histogram gradient boosting on breast_cancer: depth
                    limit or none, L2 or none, early stopping (validation
                    share, patience) or a fixed number of iterations; CV log
                    loss
``rt_svm_wine``     SVC on wine: scaler (standard, min-max, quantile with its
                    quantile count), kernel (rbf: gamma; poly: gamma, degree,
                    coef0; linear), class weights; CV error
``rt_ridge_diab``   ridge regression on diabetes after a feature map (none,
                    polynomial: degree, interactions only; splines: knots,
                    degree; random Fourier features: gamma, count); CV MSE
``rt_trees_diab``   tree ensembles on diabetes: random forest or extra trees
                    (depth limit, feature share, bootstrap with sample share)
                    or gradient boosting (loss: squared, Huber with its
                    quantile, absolute; rate, subsample); CV MSE
``rt_logreg_digits`` logistic regression on digits: penalty (l2: C; l1: C;
                    elastic net: C, l1 ratio), PCA (components, whitening) or
                    standard scaling, class weights; CV log loss
``rt_*_acc``        the MLP, boosting and logistic tasks scored by their error
                    rate (step-shaped: ``ACCURACY_TASKS``)
==================  ========================================================
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from treebo import Categorical, Choice, Integer, Real, TreeSpace, Vertex

#: Rows kept of digits (a stratified subsample keeps fits fast).
DIGITS_ROWS = 600


def _log(name: str, low: float, high: float) -> Real:
    return Real(name, low, high, log_scale=True)


class RealTask:
    """A learner cross-validated on a bundled dataset (the score is minimized).

    Args:
        dataset: ``load_<dataset>`` of :mod:`sklearn.datasets`.
        space: The search space.
        estimator: Builds the estimator of a configuration (given the seed).
        scoring: A scikit-learn scorer name (higher is better; negated here).
        folds: Cross-validation folds; ``None``: one stratified hold-out split
            of a quarter of the rows.
        seed: Seed of the folds and the estimators.
    """

    def __init__(
        self,
        dataset: str,
        space: TreeSpace,
        estimator: Callable[[dict[str, Any], int], Any],
        scoring: str,
        folds: int | None = 3,
        seed: int = 0,
    ) -> None:
        from sklearn import datasets

        X, y = getattr(datasets, f"load_{dataset}")(return_X_y=True)
        if dataset == "digits":
            keep = np.random.default_rng(0).permutation(len(y))[:DIGITS_ROWS]
            X, y = X[keep], y[keep]
        self.X, self.y = X, y
        self.space, self.estimator = space, estimator
        self.scoring, self.folds, self.seed = scoring, folds, seed
        self.classification = dataset != "diabetes"
        self.optimal_value = None

    def splits(self) -> Any:
        from sklearn.model_selection import KFold, StratifiedKFold, train_test_split

        if self.folds is None:
            index = np.arange(len(self.y))
            stratify = self.y if self.classification else None
            train, test = train_test_split(
                index, test_size=0.25, random_state=self.seed, stratify=stratify
            )
            return [(train, test)]
        kind = StratifiedKFold if self.classification else KFold
        return kind(self.folds, shuffle=True, random_state=self.seed)

    def objective(self, config: dict[str, Any]) -> float:
        """The mean cross-validated loss of the configuration (the error
        where the scorer is accuracy, else the negated score)."""
        from sklearn.model_selection import cross_val_score

        config = self.space.validate(config)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # convergence warnings of short fits
            scores = cross_val_score(
                self.estimator(config, self.seed),
                self.X,
                self.y,
                cv=self.splits(),
                scoring=self.scoring,
                n_jobs=1,
                error_score="raise",
            )
        if self.scoring == "accuracy":
            return float(1.0 - np.mean(scores))  # the error
        return float(-np.mean(scores))


# ----------------------------------------------------------------- MLP, digits
def mlp_space() -> TreeSpace:
    def layers(k: int) -> Vertex:
        return Vertex([Integer(f"width{i}", 8, 128, log_scale=True) for i in range(k)])

    def stochastic(extra: list[Any], choices: list[Choice] | None = None) -> Vertex:
        return Vertex(
            [_log("learning_rate_init", 1e-4, 1e-1), *extra,
             Integer("batch_size", 16, 256, log_scale=True)],
            choices or [],
        )  # fmt: skip

    solver = Choice(
        "solver",
        {
            "adam": stochastic([Real("beta_1", 0.5, 0.99)]),
            "sgd": stochastic(
                [
                    Real("momentum", 0.0, 0.99),
                    Categorical("schedule", ["constant", "invscaling", "adaptive"]),
                ],
                [Choice("nesterovs_momentum", [False, True])],
            ),  # fmt: skip
            "lbfgs": Vertex(),
        },
    )
    return TreeSpace(
        Vertex(
            [
                _log("alpha", 1e-6, 1e-1),
                Categorical("activation", ["relu", "tanh", "logistic"]),
            ],
            [Choice("depth", {1: layers(1), 2: layers(2), 3: layers(3)}), solver],
        )  # fmt: skip
    )


def mlp_estimator(c: dict[str, Any], seed: int) -> Any:
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    kwargs: dict[str, Any] = {}
    if c["solver"] != "lbfgs":
        kwargs = {
            "learning_rate_init": c["learning_rate_init"],
            "batch_size": c["batch_size"],
        }
    if c["solver"] == "adam":
        kwargs["beta_1"] = c["beta_1"]
    if c["solver"] == "sgd":
        kwargs.update(
            momentum=c["momentum"],
            nesterovs_momentum=c["nesterovs_momentum"],
            learning_rate=c["schedule"],
        )
    mlp = MLPClassifier(
        hidden_layer_sizes=tuple(c[f"width{i}"] for i in range(c["depth"])),
        activation=c["activation"],
        alpha=c["alpha"],
        solver=c["solver"],
        max_iter=40,
        random_state=seed,
        **kwargs,
    )
    return make_pipeline(StandardScaler(), mlp)


# ------------------------------------------------- gradient boosting, cancer
def hgb_space() -> TreeSpace:
    return TreeSpace(
        Vertex(
            [
                _log("learning_rate", 1e-3, 1.0),
                Integer("max_leaf_nodes", 4, 64, log_scale=True),
                Integer("min_samples_leaf", 2, 60, log_scale=True),
            ],
            [
                Choice(
                    "depth_limit",
                    {
                        "none": Vertex(),
                        "limited": Vertex([Integer("max_depth", 2, 12)]),
                    },
                ),
                Choice(
                    "l2",
                    {
                        "none": Vertex(),
                        "on": Vertex([_log("l2_regularization", 1e-4, 10.0)]),
                    },
                ),
                Choice(
                    "early_stopping",
                    {
                        "off": Vertex([Integer("max_iter", 10, 300, log_scale=True)]),
                        "on": Vertex(
                            [
                                Real("validation_fraction", 0.1, 0.3),
                                Integer("n_iter_no_change", 2, 20),
                            ]
                        ),
                    },
                ),
            ],
        )  # fmt: skip
    )


def hgb_estimator(c: dict[str, Any], seed: int) -> Any:
    from sklearn.ensemble import HistGradientBoostingClassifier

    stopping = c["early_stopping"] == "on"
    return HistGradientBoostingClassifier(
        learning_rate=c["learning_rate"],
        max_leaf_nodes=c["max_leaf_nodes"],
        min_samples_leaf=c["min_samples_leaf"],
        max_depth=c.get("max_depth"),
        l2_regularization=c.get("l2_regularization", 0.0),
        early_stopping=stopping,
        max_iter=300 if stopping else c["max_iter"],
        validation_fraction=c.get("validation_fraction", 0.1),
        n_iter_no_change=c.get("n_iter_no_change", 10),
        random_state=seed,
    )


# --------------------------------------------------------------- SVC, wine
def svm_space() -> TreeSpace:
    gamma = _log("gamma", 1e-4, 10.0)
    return TreeSpace(
        Vertex(
            [_log("C", 1e-3, 1e3), Categorical("class_weight", ["none", "balanced"])],
            [
                Choice(
                    "scaler",
                    {
                        "standard": Vertex(),
                        "minmax": Vertex(),
                        "quantile": Vertex([Integer("n_quantiles", 10, 100)]),
                    },
                ),
                Choice(
                    "kernel",
                    {
                        "rbf": Vertex([gamma]),
                        "poly": Vertex(
                            [gamma, Integer("degree", 2, 5), Real("coef0", 0.0, 2.0)]
                        ),
                        "linear": Vertex(),
                    },
                ),
            ],
        )  # fmt: skip
    )


def svm_estimator(c: dict[str, Any], seed: int) -> Any:
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import MinMaxScaler, QuantileTransformer, StandardScaler
    from sklearn.svm import SVC

    scaler = {
        "standard": StandardScaler,
        "minmax": MinMaxScaler,
        "quantile": lambda: QuantileTransformer(n_quantiles=c["n_quantiles"]),
    }[c["scaler"]]()
    svc = SVC(
        C=c["C"],
        kernel=c["kernel"],
        gamma=c.get("gamma", "scale"),
        degree=c.get("degree", 3),
        coef0=c.get("coef0", 0.0),
        class_weight=None if c["class_weight"] == "none" else "balanced",
        max_iter=100_000,
        random_state=seed,
    )
    return make_pipeline(scaler, svc)


# ------------------------------------------------- feature maps + ridge, diabetes
def ridge_space() -> TreeSpace:
    return TreeSpace(
        Vertex(
            [_log("alpha", 1e-4, 1e3)],
            [
                Choice(
                    "features",
                    {
                        "none": Vertex(),
                        "poly": Vertex(
                            [Integer("poly_degree", 2, 3)],
                            [Choice("interaction_only", [False, True])],
                        ),
                        "spline": Vertex(
                            [Integer("n_knots", 3, 12), Integer("spline_degree", 1, 3)]
                        ),
                        "fourier": Vertex(
                            [
                                _log("rbf_gamma", 1e-3, 10.0),
                                Integer("n_components", 20, 400, log_scale=True),
                            ]
                        ),
                    },
                )
            ],
        )  # fmt: skip
    )


def ridge_estimator(c: dict[str, Any], seed: int) -> Any:
    from sklearn.kernel_approximation import RBFSampler
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import (
        PolynomialFeatures,
        SplineTransformer,
        StandardScaler,
    )

    steps: list[Any] = [StandardScaler()]
    if c["features"] == "poly":
        steps.append(
            PolynomialFeatures(c["poly_degree"], interaction_only=c["interaction_only"])
        )
    elif c["features"] == "spline":
        steps.append(SplineTransformer(c["n_knots"], c["spline_degree"]))
    elif c["features"] == "fourier":
        steps.append(
            RBFSampler(
                gamma=c["rbf_gamma"], n_components=c["n_components"], random_state=seed
            )
        )
    return make_pipeline(*steps, Ridge(alpha=c["alpha"]))


# ----------------------------------------------------- tree ensembles, diabetes
def trees_space() -> TreeSpace:
    def forest() -> Vertex:
        return Vertex(
            [Integer("n_estimators", 10, 200, log_scale=True),
             Real("max_features", 0.1, 1.0),
             Integer("min_samples_leaf", 1, 30, log_scale=True)],
            [Choice("depth_limit", {"none": Vertex(),
                                    "limited": Vertex([Integer("max_depth", 2, 16)])}),
             Choice("bootstrap", {False: Vertex(),
                                  True: Vertex([Real("max_samples", 0.3, 1.0)])})],
        )  # fmt: skip

    boosting = Vertex(
        [_log("learning_rate", 1e-3, 1.0), Real("subsample", 0.3, 1.0),
         Integer("boosting_rounds", 10, 300, log_scale=True),
         Integer("boosting_depth", 1, 6)],
        [Choice("loss", {"squared_error": Vertex(), "absolute_error": Vertex(),
                         "huber": Vertex([Real("huber_alpha", 0.5, 0.99)])})],
    )  # fmt: skip
    return TreeSpace(
        Vertex(
            choices=[
                Choice(
                    "model",
                    {
                        "random_forest": forest(),
                        "extra_trees": forest(),
                        "boosting": boosting,
                    },
                )  # fmt: skip
            ]
        )
    )


def trees_estimator(c: dict[str, Any], seed: int) -> Any:
    from sklearn.ensemble import (
        ExtraTreesRegressor,
        GradientBoostingRegressor,
        RandomForestRegressor,
    )

    if c["model"] == "boosting":
        return GradientBoostingRegressor(
            loss=c["loss"],
            alpha=c.get("huber_alpha", 0.9),
            learning_rate=c["learning_rate"],
            subsample=c["subsample"],
            n_estimators=c["boosting_rounds"],
            max_depth=c["boosting_depth"],
            random_state=seed,
        )
    kind = (
        RandomForestRegressor if c["model"] == "random_forest" else ExtraTreesRegressor
    )
    return kind(
        n_estimators=c["n_estimators"],
        max_features=c["max_features"],
        min_samples_leaf=c["min_samples_leaf"],
        max_depth=c.get("max_depth"),
        bootstrap=c["bootstrap"],
        max_samples=c.get("max_samples"),
        random_state=seed,
        n_jobs=1,
    )


# ------------------------------------------------ logistic regression, digits
def logreg_space() -> TreeSpace:
    return TreeSpace(
        Vertex(
            [_log("C", 1e-4, 1e2), Categorical("class_weight", ["none", "balanced"])],
            [
                Choice(
                    "penalty",
                    {
                        "l2": Vertex(),
                        "l1": Vertex(),
                        "elasticnet": Vertex([Real("l1_ratio", 0.05, 0.95)]),
                    },
                ),
                Choice(
                    "preprocessing",
                    {
                        "standard": Vertex(),
                        "pca": Vertex(
                            [Integer("n_components", 5, 60, log_scale=True)],
                            [Choice("whiten", [False, True])],
                        ),
                    },
                ),
            ],
        )  # fmt: skip
    )


def logreg_estimator(c: dict[str, Any], seed: int) -> Any:
    from sklearn.decomposition import PCA
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    steps: list[Any] = [StandardScaler()]
    if c["preprocessing"] == "pca":
        steps.append(PCA(c["n_components"], whiten=c["whiten"], random_state=seed))
    model = LogisticRegression(
        C=c["C"],
        l1_ratio={"l2": 0.0, "l1": 1.0}.get(c["penalty"], c.get("l1_ratio")),
        solver="saga",
        class_weight=None if c["class_weight"] == "none" else "balanced",
        max_iter=60,
        tol=1e-3,
        random_state=seed,
    )
    return make_pipeline(*steps, model)


REAL_TASKS: dict[str, Callable[[], RealTask]] = {
    "rt_mlp_digits": lambda: RealTask(
        "digits", mlp_space(), mlp_estimator, "neg_log_loss", folds=None
    ),
    "rt_hgb_cancer": lambda: RealTask(
        "breast_cancer", hgb_space(), hgb_estimator, "neg_log_loss"
    ),
    "rt_svm_wine": lambda: RealTask("wine", svm_space(), svm_estimator, "accuracy"),
    "rt_ridge_diab": lambda: RealTask(
        "diabetes", ridge_space(), ridge_estimator, "neg_mean_squared_error"
    ),
    "rt_trees_diab": lambda: RealTask(
        "diabetes", trees_space(), trees_estimator, "neg_mean_squared_error"
    ),
    "rt_logreg_digits": lambda: RealTask(
        "digits", logreg_space(), logreg_estimator, "neg_log_loss"
    ),
}

#: The classification tasks scored by their error rate instead of the log loss:
#: accuracy on a hold-out quarter or a fold of 60 to 200 rows moves in steps of
#: 1/rows, so these objectives are step-shaped (``rt_svm_wine`` already is).
ACCURACY_TASKS: dict[str, Callable[[], RealTask]] = {
    "rt_mlp_digits_acc": lambda: RealTask(
        "digits", mlp_space(), mlp_estimator, "accuracy", folds=None
    ),
    "rt_hgb_cancer_acc": lambda: RealTask(
        "breast_cancer", hgb_space(), hgb_estimator, "accuracy"
    ),
    "rt_logreg_digits_acc": lambda: RealTask(
        "digits", logreg_space(), logreg_estimator, "accuracy"
    ),
}
