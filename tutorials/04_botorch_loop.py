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
# # `AddTreeGP` in your own BoTorch loop
#
# `treebo.add_tree.AddTreeGP` is a BoTorch `Model` on the column layout of
# BoTorch's `hierarchical_dependencies` (the same as
# `HierarchicalConditionalKernelGP`). Any BoTorch acquisition works with it;
# `optimize_acqf_tree` maximizes an acquisition over every path of the tree in
# one batch. Here: a hand-written LogEI loop on the Jenatton problem.

# %%
import os
import warnings

import matplotlib.pyplot as plt
import torch
from botorch.acquisition import LogExpectedImprovement
from botorch.fit import fit_gpytorch_mll
from gpytorch.mlls import ExactMarginalLogLikelihood

from treebo.add_tree import AddTreeGP, BranchWithoutDataWarning
from treebo.optim import optimize_acqf_tree
from treebo.test_functions import Jenatton

SMOKE = os.environ.get("TREEBO_TUTORIAL_SMOKE") == "1"
N_ITERATIONS = 4 if SMOKE else 25
torch.manual_seed(0)

problem = Jenatton()
space = problem.space
print(space.to_hierarchical_dependencies())  # what BoTorch calls the tree

# %% [markdown]
# The data: encoded configurations `X` (`n x d`, inactive columns at their
# defaults) and their values. BoTorch maximizes, so the model sees `-f`.

# %%
X = space.sample(6, seed=0)
Y = -problem(X).unsqueeze(-1)
deps = space.to_hierarchical_dependencies()
# A branch that no row has visited yet is expected early in a run; the model
# warns about it in case the choice values are encoded wrongly.
warnings.filterwarnings("ignore", category=BranchWithoutDataWarning)

for _ in range(N_ITERATIONS):
    model = AddTreeGP(X, (Y - Y.mean()) / Y.std(), deps)
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    best_f = ((Y - Y.mean()) / Y.std()).max()
    acqf = LogExpectedImprovement(model, best_f=best_f)
    candidate = optimize_acqf_tree(acqf, space, seed=0).candidate  # 1 x d
    X = torch.cat([X, candidate])
    Y = torch.cat([Y, -problem(candidate).unsqueeze(-1)])

best = (-Y).cummin(0).values.squeeze(-1)
plt.plot(range(1, len(best) + 1), best - problem.optimal_value)
plt.yscale("log")
plt.xlabel("evaluations")
plt.ylabel("regret")
plt.show()
space.to_dict(X[(-Y).argmin()])

# %% [markdown]
# ## Per-vertex posteriors
#
# The Add-Tree GP is a sum of one GP per vertex of the tree; its
# `vertex_posterior` gives each vertex's mean and variance at a point, which
# tells which branch the model believes in and how sure it is.

# %%
post = model.vertex_posterior(X[-1:])
for vertex in space.tree.vertices:
    names = [space.parameter_names[c] for c in vertex.continuous_columns]
    print(
        f"vertex {vertex.index} {names}: mean {post.mean[0, vertex.index]:+.3f}, "
        f"sd {post.variance[0, vertex.index].sqrt():.3f}"
    )
