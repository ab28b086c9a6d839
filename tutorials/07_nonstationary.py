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
# # A non-stationary function with the treed GP
#
# Gramacy's 2-D exponential function is flat on most of its domain and rugged
# in one corner. One stationary GP has one lengthscale for both; the treed GP
# (Assael et al.) splits the domain and fits a GP per leaf.

# %%
import os

import matplotlib.pyplot as plt
import torch

import treebo
from treebo import minimize_box
from treebo.test_functions import Exp2D

SMOKE = os.environ.get("TREEBO_TUTORIAL_SMOKE") == "1"
BUDGET = 14 if SMOKE else 50
treebo.set_verbosity("WARNING")

f = Exp2D()
runs = {
    name: minimize_box(
        lambda x: f(x.unsqueeze(0)).item(), f.bounds, BUDGET, seed=0, strategy=name
    )
    for name in ("treed", "add_tree")
}
for name, result in runs.items():
    print(name, result.best_value - f.optimal_value)

# %% [markdown]
# Where the two models spent their evaluations: the treed GP concentrates on
# the rugged corner around the minimum at (-0.71, 0).

# %%
grid = torch.linspace(-2, 6, 100, dtype=torch.float64)
G1, G2 = torch.meshgrid(grid, grid, indexing="xy")
Z = f(torch.stack([G1.flatten(), G2.flatten()], -1)).reshape(100, 100)
fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
for ax, (name, result) in zip(axes, runs.items(), strict=True):
    ax.contourf(G1, G2, Z, levels=30, cmap="viridis")
    ax.scatter(result.X[:, 0], result.X[:, 1], c="white", s=12, edgecolors="k")
    ax.set_title(name)
plt.show()
