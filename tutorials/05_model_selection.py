# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: -all
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # A real model-selection task
#
# Choose a preprocessing step, a classifier family (SVM with four kernels,
# random forest, gradient boosting, logistic regression) and tune it, by
# cross-validated error on a dataset bundled with scikit-learn. The space has
# many paths and shared parameters (`gamma` under three of the SVM's kernels).
# Each evaluation trains real models, so a few run at once
# (`n_workers=2`: two threads; see `ProcessExecutor` and the cluster tutorial
# notes in the docs for processes and clusters).

# %%
import os

import matplotlib.pyplot as plt

import treebo
from treebo import minimize
from treebo.plot import plot_best_so_far, plot_paths, plot_tree, plot_trials
from treebo.test_functions import ModelSelection

SMOKE = os.environ.get("TREEBO_TUTORIAL_SMOKE") == "1"
BUDGET = 10 if SMOKE else 60
treebo.set_verbosity("WARNING")

task = ModelSelection("breast_cancer", seed=0, folds=3)
print(task.space.num_paths, "paths")
task.space.paths()[:4]

# %%
result = minimize(task.objective, task.space, budget=BUDGET, seed=0, n_workers=2)
result.best_params, result.best_value

# %% [markdown]
# Which branches did the run spend its evaluations on, and what did it find
# there?

# %%
fig, axes = plt.subplots(1, 3, figsize=(16, 4))
plot_best_so_far(result, ax=axes[0])
plot_trials(result, task.space, ax=axes[1])
plot_paths(result, task.space, ax=axes[2])
plt.tight_layout()
plt.show()

# %%
plot_tree(result, task.space)
plt.show()

# %% [markdown]
# The best configuration as a scikit-learn pipeline:

# %%
task.pipeline(task.space.validate(result.best_params))
