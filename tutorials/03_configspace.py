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
# # Bring your ConfigSpace
#
# A `ConfigurationSpace` with conditions (SMAC's, auto-sklearn's) converts to
# a `TreeSpace`: each condition's parent becomes a `Choice`, and a parameter
# under several values of its parent (`InCondition`) is one parameter shared by
# those branches. Here, an SVM whose kernel decides which parameters exist.

# %%
import math
import os

import matplotlib.pyplot as plt
from ConfigSpace import (
    Categorical,
    ConfigurationSpace,
    EqualsCondition,
    Float,
    InCondition,
    Integer,
)

import treebo
from treebo import minimize
from treebo.integrations.configspace import (
    configspace_from_tree_space,
    tree_space_from_configspace,
)
from treebo.plot import plot_best_so_far, plot_tree

SMOKE = os.environ.get("TREEBO_TUTORIAL_SMOKE") == "1"
BUDGET = 12 if SMOKE else 40
treebo.set_verbosity("WARNING")

cs = ConfigurationSpace(seed=0)
kernel = Categorical("kernel", ["linear", "rbf", "poly"])
C = Float("C", (1e-3, 1e3), log=True)
gamma = Float("gamma", (1e-4, 1e1), log=True)
degree = Integer("degree", (2, 5))
cs.add([kernel, C, gamma, degree])
cs.add(InCondition(gamma, kernel, ["rbf", "poly"]))
cs.add(EqualsCondition(degree, kernel, "poly"))

space = tree_space_from_configspace(cs)
print(space)
space.paths()

# %% [markdown]
# A stand-in for a cross-validated error, with its optimum on the RBF branch.


# %%
def error(params: dict) -> float:
    c = (math.log10(params["C"]) - 1) ** 2 / 9
    if params["kernel"] == "linear":
        return 0.30 + 0.05 * c
    g = (math.log10(params["gamma"]) + 2) ** 2 / 9
    if params["kernel"] == "rbf":
        return 0.05 + 0.1 * c + 0.2 * g
    return 0.12 + 0.1 * c + 0.2 * g + 0.02 * (params["degree"] - 3) ** 2


result = minimize(error, space, budget=BUDGET, seed=0)
result.best_params, result.best_value

# %%
fig, (left, right) = plt.subplots(1, 2, figsize=(12, 3.5))
plot_best_so_far(result, ax=left)
plot_tree(result, space, ax=right)
plt.show()

# %% [markdown]
# The way back: a `ConfigurationSpace` with the same conditions, whose
# configurations have the same active parameters as treebo's.

# %%
back = configspace_from_tree_space(space, seed=0)
samples = [dict(c) for c in back.sample_configuration(5)]
[space.validate(s) == s for s in samples]
