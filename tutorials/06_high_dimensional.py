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
# # High-dimensional BO with the tree-additive GP
#
# A function of many real variables that interact mostly in pairs (Han et al.,
# 2021): the tree-additive GP learns which pairs interact as a forest over the
# variables, and its UCB is maximized exactly by message passing over that
# forest. `minimize_box` takes an objective on tensors and a box.

# %%
import os

import matplotlib.pyplot as plt
import torch

import treebo
from treebo import minimize_box
from treebo.test_functions import AdditiveGPFunction, additive_graph

SMOKE = os.environ.get("TREEBO_TUTORIAL_SMOKE") == "1"
BUDGET = 14 if SMOKE else 100
treebo.set_verbosity("WARNING")

# %% [markdown]
# A 24-dimensional function drawn from an additive GP whose variables interact
# in disjoint triangles (Han et al.'s (2021) "partition" graph; a sample path, so its
# minimum on the grid is known).

# %%
dim, edges = additive_graph("partition", 24)
f = AdditiveGPFunction(dim, edges, grid_points=50, seed=0)
bounds = torch.tensor([[0.0] * dim, [1.0] * dim])
f.optimal_value

# %%
result = minimize_box(lambda x: f(x.unsqueeze(0)).item(), bounds, BUDGET, seed=0)
random_x = torch.rand(
    BUDGET, dim, dtype=torch.float64, generator=torch.Generator().manual_seed(0)
)
random_y = f(random_x)

plt.plot(result.Y.cummin(0).values - f.optimal_value, label="tree-additive GP")
plt.plot(random_y.cummin(0).values - f.optimal_value, label="random search")
plt.yscale("log")
plt.xlabel("evaluations")
plt.ylabel("regret")
plt.legend()
plt.show()
