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
# # Choosing from a pool of configurations
#
# Sometimes only some configurations can be evaluated: a tabular benchmark, a
# pre-computed design, the settings a lab can run. `minimize(...,
# candidates=pool)` proposes only rows of the pool, each at most once; the
# acquisition is scored over the whole pool in chunks, so pools of 10^5 rows
# work.

# %%
import os

import matplotlib.pyplot as plt

import treebo
from treebo import minimize
from treebo.plot import plot_best_so_far
from treebo.test_functions import Jenatton

SMOKE = os.environ.get("TREEBO_TUTORIAL_SMOKE") == "1"
BUDGET = 10 if SMOKE else 40
treebo.set_verbosity("WARNING")

problem = Jenatton()
pool = problem.space.to_dicts(problem.space.sample(5000, seed=0))
best_in_pool = min(problem.objective(c) for c in pool)
pool[:2]

# %%
result = minimize(problem.objective, problem.space, BUDGET, seed=0, candidates=pool)
print("best found", result.best_value, "best in the pool", best_in_pool)
assert all(trial.params in pool for trial in result.history)

# %%
plot_best_so_far(result)
plt.axhline(best_in_pool, color="k", ls="--", label="best in the pool")
plt.legend()
plt.show()
