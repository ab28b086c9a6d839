r"""Interaction terms between a vertex's parameters and its ancestors' (Ma &
Blaschko, AISTATS 2020, App. E).

Definition 4's kernel is additive over vertices: the effect of a parameter shared by
several branches (a learning rate above a choice of optimizer) is the same in every
branch. The paper's App. E adds, for every vertex $v$ with parameters below another
vertex with parameters, a term

$$
k^{\mathrm{int}}(x, x') = \sum_{v \in l(x) \cap l(x')} \rho_v^2\,
    \kappa\!\left(\frac{x|_{a(v)} - x'|_{a(v)}}{\ell'_v}\right),
$$

where $x|_{a(v)}$ are the parameters of $v$ and of its ancestors, each with a
lengthscale of its own in $v$'s term. Each term is a delta kernel on "both points pass
through $v$" times a kernel of the path's parameters, hence PSD; added to an
[`AddTreeKernel`][treebo.add_tree.kernel.AddTreeKernel] with ``+`` it lets the best
learning rate depend on the optimizer chosen below it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import torch
from gpytorch.priors import Prior
from torch import Tensor

from treebo.add_tree.features import interacting_vertices
from treebo.add_tree.hyperparameters import log_normal_prior
from treebo.add_tree.kernel import AddTreeKernel
from treebo.space.structure import (
    HierarchicalDependencies,
    TreeStructure,
    as_tree_structure,
)

#: Prior median (and initial value) of an interaction term's output scale, as a
#: fraction of a vertex's (``1 / h`` for ``h`` vertices on the longest path).
INTERACTION_SCALE = 0.1


class AncestorInteractionKernel(AddTreeKernel):
    r"""The interaction terms of Ma & Blaschko (2020), App. E (module docstring): one
    term per vertex with parameters below a vertex with parameters, on its own and its
    ancestors' parameters.

    An [`AddTreeKernel`][treebo.add_tree.kernel.AddTreeKernel] whose terms read their
    ancestors' parameters (``reads_ancestors``) and whose vertices are those that
    interact (no offsets, no shared components); add it to the additive kernel with
    ``+``.

    Args:
        dim: Number of input columns ``d``.
        hierarchical_dependencies: ``{parent_col: {value: [child_cols]}}``, or its
            [`TreeStructure`][treebo.space.structure.TreeStructure].
        base_kernel: ``"rbf"`` or ``"matern52"``.
        share_lengthscales: ``"none"``, ``"depth"`` or ``"all"``, as the additive
            kernel's.
        share_outputscales: Likewise, for the terms' output scales $\rho_v^2$.
        lengthscale_prior: Prior on the group lengthscales; default the
            dimension-scaled LogNormal of the path's parameters.
        outputscale_prior: Prior on the terms' output scales. Default:
            ``LogNormal(log(INTERACTION_SCALE / h), 1)`` with ``h`` the most vertices
            on one path (a tenth of a vertex's prior median where every vertex has a
            term); the output scales start at that median.
        batch_shape: Batch shape of the hyper-parameters.
        categorical_values: ``{column: values}`` of the unordered categorical
            parameter columns.

    Example:
        >>> from treebo.add_tree import AddTreeKernel
        >>> deps = {0: {0: [1, 2], 1: [3]}, 2: {0: [4], 1: [5]}}  # 4, 5 below 1
        >>> interaction = AncestorInteractionKernel(6, deps)
        >>> interaction.vertex_has_params.tolist()  # the vertices of 4 and of 5
        [False, False, False, True, True]
        >>> kernel = AddTreeKernel(6, deps) + interaction
        >>> x = torch.tensor([[0, 0.2, 0, 0, 0.3, 0], [0, 0.5, 0, 0, 0.1, 0]])
        >>> kernel(x).to_dense().shape
        torch.Size([2, 2])
    """

    reads_ancestors = True

    def __init__(
        self,
        dim: int,
        hierarchical_dependencies: HierarchicalDependencies | TreeStructure,
        base_kernel: str = "rbf",
        share_lengthscales: str = "none",
        share_outputscales: str = "none",
        lengthscale_prior: Prior | None | bool = None,
        outputscale_prior: Prior | None | bool = None,
        batch_shape: torch.Size | None = None,
        categorical_values: Mapping[int, Sequence[float]] | None = None,
    ) -> None:
        tree = as_tree_structure(dim, hierarchical_dependencies)
        scale = INTERACTION_SCALE / max(1, tree.max_active_vertices())
        if outputscale_prior is None:
            outputscale_prior = log_normal_prior(math.log(scale), 1.0)
        super().__init__(
            dim,
            tree,
            base_kernel=base_kernel,
            share_lengthscales=share_lengthscales,
            share_outputscales=share_outputscales,
            lengthscale_prior=lengthscale_prior,
            outputscale_prior=outputscale_prior,
            batch_shape=batch_shape,
            categorical_values=categorical_values,
        )
        self.outputscale = scale

    @classmethod
    def term_vertices(cls, tree: TreeStructure) -> Tensor:
        """The vertices with parameters below a vertex with parameters."""
        return interacting_vertices(tree)
