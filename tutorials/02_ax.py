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
# # Bring your Ax search space
#
# An Ax experiment over a hierarchical space (choice parameters with
# `dependent_parameters`) switches to treebo's Add-Tree GP with one import and
# one call. The experiment saves to and loads from JSON as usual. The space can
# also be converted to a `TreeSpace`, and back.

# %%
import logging
import os
import tempfile
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
from ax.api.client import Client
from ax.api.configs import ChoiceParameterConfig, RangeParameterConfig
from ax.utils.common.logger import set_ax_logger_levels

from treebo.integrations.ax import (
    add_tree_generation_strategy,
    ax_search_space,
    tree_space_from_ax,
)
from treebo.test_functions import Jenatton

SMOKE = os.environ.get("TREEBO_TUTORIAL_SMOKE") == "1"
N_TRIALS = 8 if SMOKE else 30
set_ax_logger_levels(logging.WARNING)  # no line per trial
warnings.filterwarnings("ignore")

# %% [markdown]
# The Jenatton et al. benchmark, written with Ax's own configs: `x1` picks
# `(x2, r8)` or `(x3, r9)`, and `x2`, `x3` each pick one of two leaves.


# %%
def choice(name, dependents):
    return ChoiceParameterConfig(
        name, [0, 1], "int", dependent_parameters=dict(enumerate(dependents))
    )


client = Client()
client.configure_experiment(
    parameters=[
        choice("x1", [["x2", "r8"], ["x3", "r9"]]),
        choice("x2", [["x4"], ["x5"]]),
        choice("x3", [["x6"], ["x7"]]),
        *[RangeParameterConfig(n, (0.0, 1.0), "float") for n in ("r8", "r9")],
        *[RangeParameterConfig(n, (-1.0, 1.0), "float") for n in "x4 x5 x6 x7".split()],
    ]
)
client.configure_optimization(objective="-f")

# %% [markdown]
# The two added lines:

# %%
client.set_generation_strategy(add_tree_generation_strategy(noise_floor=1e-6))

# %% [markdown]
# The loop is Ax's own.

# %%
problem = Jenatton()
values = []
for _ in range(N_TRIALS):
    for index, params in client.get_next_trials(max_trials=1).items():
        values.append(problem(params))
        client.complete_trial(index, raw_data={"f": values[-1]})
min(values)

# %%
best = [min(values[: i + 1]) for i in range(len(values))]
plt.plot(range(1, len(best) + 1), best)
plt.xlabel("trials")
plt.ylabel("best f")
plt.show()

# %% [markdown]
# Save, load, and go on:

# %%
path = Path(tempfile.mkdtemp()) / "experiment.json"
client.save_to_json_file(str(path))
loaded = Client.load_from_json_file(str(path))
loaded.get_next_trials(max_trials=1)

# %% [markdown]
# ## The space as a `TreeSpace`, and back
#
# `ax_search_space` writes a `TreeSpace` as an Ax `SearchSpace` with
# `dependents` (for `Client.set_experiment` or Ax's lower-level API);
# `tree_space_from_ax` builds the tree from such a space, to use treebo's own
# loop, plots and checkpoints on it. The round trip keeps the tree: the same
# configurations, with the same active parameters.

# %%
ax_space = ax_search_space(problem.space)
print(ax_space.is_hierarchical, [p.name for p in ax_space.parameters.values()])
space = tree_space_from_ax(ax_space)
configs = problem.space.to_dicts(problem.space.sample(5, seed=0))
[space.validate(c) == c for c in configs]
