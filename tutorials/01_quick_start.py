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
# # Quick start: a conditional search space
#
# A search space is a tree: a `Choice` picks a branch, every vertex owns
# parameters, and a parameter on an inner vertex is shared by every leaf below
# it. Here a learning rate is shared by two model families, each with settings
# of its own.

# %%
import math
import os
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt

import treebo
from treebo import Categorical, Choice, Integer, Real, TreeSpace, Vertex, minimize
from treebo.plot import plot_best_so_far, plot_tree, plot_trials

SMOKE = os.environ.get("TREEBO_TUTORIAL_SMOKE") == "1"  # CI runs a short version
BUDGET = 12 if SMOKE else 50

space = TreeSpace(
    Vertex(
        [Real("lr", 1e-4, 1e-1, log_scale=True)],  # shared by every leaf
        [
            Choice(
                "model",
                {
                    "svm": Vertex([Real("C", 1e-2, 1e2, log_scale=True)]),
                    "tree": Vertex(
                        [
                            Integer("depth", 1, 10),
                            Categorical("criterion", ["gini", "entropy"]),
                        ]
                    ),
                },
            )
        ],
    )
)
space.paths()

# %% [markdown]
# The objective takes a dict of the *active* parameters: an SVM configuration
# has no `depth`. Replace the formula with a training run.


# %%
def objective(params: dict) -> float:
    loss = (math.log10(params["lr"]) + 2) ** 2
    if params["model"] == "svm":
        return loss + (math.log10(params["C"]) - 1) ** 2
    gini = params["criterion"] == "gini"
    return loss + 0.1 * (params["depth"] - 4) ** 2 + 0.05 * gini


# %% [markdown]
# `minimize` logs a line per trial on the `"treebo"` logger; quiet it here.
# With `checkpoint=`, each evaluation is appended to a journal as it returns,
# and the same call resumes a killed run.

# %%
treebo.set_verbosity("WARNING")
folder = Path(tempfile.mkdtemp())
result = minimize(
    objective, space, budget=BUDGET, seed=0, checkpoint=folder / "run.jsonl"
)
result.best_params, result.best_value

# %% [markdown]
# Running it again with a larger budget goes on from the checkpoint.

# %%
more = minimize(
    objective, space, budget=BUDGET + 5, seed=0, checkpoint=folder / "run.jsonl"
)
len(result.history), len(more.history)

# %% [markdown]
# ## Plots
#
# The best value so far, every trial coloured by its branch, and the tree with
# each vertex's share of the evaluations and its best value.

# %%
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.5))
plot_best_so_far(more, ax=left)
plot_trials(more, space, ax=right)
plt.show()

# %%
plot_tree(more, space)
plt.show()

# %% [markdown]
# ## Ask and tell
#
# To drive the evaluations yourself (a scheduler, several workers), use the
# optimizer directly: `ask()` returns a configuration, `tell()` records its
# value; configurations asked for and not yet told are pending, and the next
# proposals avoid them.

# %%
opt = treebo.TreeOptimizer(space, seed=1)
for _ in range(6):
    params = opt.ask()
    opt.tell(params, objective(params))
opt.best_trial
