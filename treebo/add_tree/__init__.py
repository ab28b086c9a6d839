"""Add-Tree: GPs over conditional search spaces (Ma & Blaschko, 2020).

One family, one folder, in layers: the slot features of a point
([`features`][treebo.add_tree.features]) and the kernel's hyper-parameters
([`hyperparameters`][treebo.add_tree.hyperparameters]) under the kernel
([`AddTreeKernel`][treebo.add_tree.kernel.AddTreeKernel], a sum of per-vertex kernels
gated by the activity of each vertex), the interaction terms of a vertex's parameters
with its ancestors' added to it with ``+``
([`AncestorInteractionKernel`][treebo.add_tree.interaction.AncestorInteractionKernel])
and the kernel's settings
([`options`][treebo.add_tree.options]); the model
([`AddTreeGP`][treebo.add_tree.model.AddTreeGP]); the per-vertex UCB and its
optimizer, Algorithm 2 ([`acquisition`][treebo.add_tree.acquisition]); the local
refinement of the incumbent ([`local_refinement`][treebo.add_tree.local_refinement],
[`local_steps`][treebo.add_tree.local_steps]); each vertex's share of the fitted
model's variance ([`importance`][treebo.add_tree.importance]); and the loop's two
strategies ([`strategy`][treebo.add_tree.strategy]: ``"add_tree"``, LogEI;
``"add_tree_ucb"``, Add-Tree-GP-UCB), composed of parts: the global model's fitter
([`fitting`][treebo.add_tree.fitting]), the screen of far-out scores
([`outliers`][treebo.add_tree.outliers]), the local steps and the global search
([`global_search`][treebo.add_tree.global_search]).
"""

from treebo.add_tree.acquisition import AddTreeUCB, add_tree_beta, optimize_add_tree_ucb
from treebo.add_tree.fitting import AddTreeFit
from treebo.add_tree.global_search import LogEISearch, VertexUCBSearch
from treebo.add_tree.integrated_ei import IntegratedLogEISearch
from treebo.add_tree.interaction import AncestorInteractionKernel
from treebo.add_tree.kernel import AddTreeKernel, AddTreeKernelSum
from treebo.add_tree.local_steps import LocalSteps, LocalStepSettings
from treebo.add_tree.model import AddTreeGP, BranchWithoutDataWarning, VertexPosterior
from treebo.add_tree.options import (
    LOOP_KERNEL_OPTIONS,
    AddTreeKernelOptions,
    AddTreeOptions,
    AddTreeUCBOptions,
    LocalStepOptions,
)
from treebo.add_tree.strategy import AddTreeStrategy, AddTreeUCBStrategy

__all__ = [
    "LOOP_KERNEL_OPTIONS",
    "AddTreeFit",
    "AddTreeGP",
    "AddTreeKernel",
    "AddTreeKernelSum",
    "AddTreeKernelOptions",
    "AddTreeOptions",
    "AddTreeStrategy",
    "AddTreeUCB",
    "AddTreeUCBOptions",
    "AddTreeUCBStrategy",
    "AncestorInteractionKernel",
    "BranchWithoutDataWarning",
    "LocalStepOptions",
    "LocalStepSettings",
    "LocalSteps",
    "IntegratedLogEISearch",
    "LogEISearch",
    "VertexPosterior",
    "VertexUCBSearch",
    "add_tree_beta",
    "optimize_add_tree_ucb",
]
