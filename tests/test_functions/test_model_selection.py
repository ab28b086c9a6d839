"""ModelSelection (P9): a real, deterministic, conditional tuning task."""

from __future__ import annotations

import pytest

pytest.importorskip("sklearn")

from treebo.test_functions import ModelSelection  # noqa: E402


def test_every_family_fits_and_the_result_is_deterministic():
    task = ModelSelection("iris", seed=0, folds=3)
    space = task.space
    assert space.num_paths == 4 * (4 + 5)  # preprocessing x (svm kernels + 5 others)
    assert space.columns["gamma"].parent == ("kernel", ("rbf", "poly", "sigmoid"))
    configs = space.to_dicts(space.sample(60, seed=0))
    families = {c["model"] for c in configs}
    assert families == {"svm", "forest", "boosting", "knn", "mlp", "logistic"}
    for family in sorted(families):
        config = next(c for c in configs if c["model"] == family)
        error = task.objective(config)
        assert 0.0 <= error <= 1.0
        assert task.objective(config) == error  # the same folds and seeds
    best = {"preprocessing": "standard", "model": "svm", "C": 10.0, "kernel": "linear"}
    assert task.objective(best) < 0.1


def test_bad_arguments_and_configurations_are_named():
    with pytest.raises(ValueError, match="dataset"):
        ModelSelection("mnist")
    with pytest.raises(ValueError, match="folds"):
        ModelSelection("iris", folds=1)
    task = ModelSelection("iris")
    with pytest.raises(ValueError, match="'gamma' is inactive"):
        task.objective(
            {
                "preprocessing": "none",
                "model": "svm",
                "C": 1.0,
                "kernel": "linear",
                "gamma": 0.1,
            }
        )
