r"""The Add-Tree covariance function (Ma & Blaschko, AISTATS 2020).

For two points $x, x'$ of a tree-structured space, with $l(x)$ the set of vertices
active at $x$,

$$
k(x, x') = \sum_{v \in l(x) \cap l(x')} \sigma_v^2\,
    \kappa\!\left(\frac{x|_v - x'|_v}{\ell_v}\right),
$$

where $x|_v$ are the parameters owned by vertex $v$ (numbers, and categoricals as
one-hot features: [`treebo.add_tree.features`][treebo.add_tree.features]), $\ell_v$
their ARD lengthscales, $\sigma_v^2$ the vertex's output scale and $\kappa$ an RBF or
Matern-5/2 correlation (Definition 4 / Algorithm 1 of the paper). Each term is the
product of a delta kernel on "both points pass through $v$" and a stationary kernel, so
the sum is PSD (Proposition 1). With ``vertex_bias``, each shared vertex also adds a
learned constant $c_v \ge 0$ (a random offset per branch), which keeps the sum PSD. With
``shared_component``, the vertices of one slot (one depth of a plain tree) also share a
function: for every slot $s$ in which both points have an active vertex with continuous
parameters ($u$ and $u'$, not necessarily the same), the kernel adds
$\tau_s^2\,\kappa(x|_u / \ell_u - x'|_{u'} / \ell_{u'})$, a stationary kernel of a
feature map, hence PSD. Sibling branches then learn each other's trends (e.g. that a
shared-shape parameter is best at its lower bound) before they are explored. With
``ancestor_interactions``, every vertex $v$ with parameters below another vertex with
parameters adds an interaction term
$\rho_v^2\,\kappa(x|_{a(v)} / \ell'_v - x'|_{a(v)} / \ell'_v)$ for pairs that share $v$,
where $x|_{a(v)}$ are the parameters of $v$ and of its ancestors (App. E of the paper: a
delta kernel on $v$ times a kernel of the path's parameters, hence PSD).

Evaluation is vectorized over vertices with the slot encoding of
[`TreeStructure`][treebo.space.structure.TreeStructure]: each point has at most one
active vertex per slot, and two points share a vertex only in the same slot, so a pair
needs ``S`` (= tree depth for a plain tree) kernel terms rather than ``V``.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence

import torch
from gpytorch.constraints import Interval
from gpytorch.kernels import Kernel
from gpytorch.priors import Prior
from torch import Tensor

from treebo.add_tree.features import (
    SlotFeatures,
    feature_tables,
    inherited_columns,
    interacting_vertices,
    vertex_features,
)
from treebo.add_tree.hyperparameters import (
    VertexHyperparameters,
    log_normal_prior,
    sharing_groups,
)
from treebo.add_tree.options import BASE_KERNELS, validate_vertex_bias
from treebo.gp.correlation import SlotGram, stationary_correlation
from treebo.space.structure import (
    HierarchicalDependencies,
    TreeStructure,
    as_tree_structure,
)

#: Prior median (and initial value) of an interaction term's output scale, as a
#: fraction of a vertex's.
INTERACTION_SCALE = 0.1


def _lead(t: Tensor, rank: int) -> Tensor:
    """Prepend singleton dimensions up to ``rank`` dimensions."""
    return t.reshape((1,) * (rank - t.dim()) + tuple(t.shape))


class AddTreeKernel(VertexHyperparameters, Kernel):
    r"""Add-Tree kernel: sum of per-vertex kernels over the vertices two points share.

    A drop-in for `botorch.models.hierarchical.HierarchicalConditionalKernel` (same
    ``dim`` and ``hierarchical_dependencies`` arguments, same column layout): choice
    columns are only used to decide which vertices are active, and every vertex with
    continuous columns contributes
    ``outputscale[v] * kappa(|x_v - x'_v| / lengthscale[v])``.

    Args:
        dim: Number of input columns ``d``.
        hierarchical_dependencies: ``{parent_col: {value: [child_cols]}}``, or its
            [`TreeStructure`][treebo.space.structure.TreeStructure] (shared, not
            rebuilt).
        base_kernel: ``"rbf"`` (default) or ``"matern52"``.
        vertex_bias: Learned constants ``c_v >= 0`` added to ``k_v`` for pairs that
            share vertex ``v`` (a random per-branch offset, the role of the
            kernel on the choice columns in BoTorch's kernel): ``"none"`` (or
            ``False``), ``"empty"`` (or ``True``: only vertices without
            continuous columns, which otherwise contribute nothing) or
            ``"all"`` (every vertex). The constants follow the output scales'
            sharing groups.
        shared_component: Add, per slot (per depth in a plain tree), a
            function shared by all of the slot's vertices (see the module
            docstring), with a learned output scale ``slot_outputscale[s]``
            (prior and initial value: half the vertex output scales'). Off by
            default (Definition 4 exactly).
        share_lengthscales: ``"none"`` (every vertex its own ARD lengthscales),
            ``"depth"`` (vertices at the same depth share them, so a branch with
            little data borrows the smoothness learned on its siblings) or
            ``"all"``.
        share_outputscales: ``"none"`` (every vertex its own output scale),
            ``"depth"`` (vertices at the same depth share it, so an unexplored
            branch keeps the amplitude learned on its explored siblings instead
            of the prior's, which keeps its posterior variance honest) or
            ``"all"``.
        lengthscale_prior: Prior on the ``G x D_max`` group lengthscales
            (``G = V`` without sharing). Default: the dimension-scaled LogNormal
            of Hvarfner et al. (2024) with the vertex's own dimension,
            ``LogNormal(sqrt(2) + log(d_v) / 2, sqrt(3))``. ``False`` for none.
        outputscale_prior: Prior on the group output scales (``V`` of them
            without sharing). Default:
            ``LogNormal(log(1 / h), 1)`` with ``h`` the largest number of
            contributing vertices on a path, so that the prior variance along a
            path is about 1 (standardized outcomes) and no vertex's scale
            collapses to zero on scarce data. Pass ``False`` for none.
        lengthscale_constraint: Default ``Interval(2.5e-3, 1e3)`` (for inputs
            scaled to the unit cube).
        outputscale_constraint: Default ``GreaterThan(1e-8)`` (strictly positive
            even where a fit drives an output scale towards zero, so that the
            output-scale prior's density stays finite).
        batch_shape: Batch shape of the hyper-parameters.
        categorical_values: ``{column: values}`` of the parameter columns that are
            unordered categoricals: modelled by one-hot features (see
            [`treebo.add_tree.features`][treebo.add_tree.features]) rather than as
            numbers.
        inherit_ancestors: Each vertex's term also reads its ancestors' parameters:
            $\kappa$ of $x|_{a(v)}$ with $a(v)$ the parameters of $v$ and of every
            vertex above it, each with its own lengthscale in $v$'s term. A parameter
            shared by several branches may then act differently in each (the learning
            rate's best value depends on the optimizer chosen below it): the interaction
            terms of Ma & Blaschko (2020), App. E, folded into the vertex's term. A long
            lengthscale on an inherited column gives back Definition 4. A vertex without
            parameters of their own has a term on its ancestors' alone (the learning
            rate's effect under one optimizer that has no parameters differs from its
            effect under another). Vertices with no parameters on their path contribute
            nothing (or their offset).
        ancestor_interactions: Keep Definition 4's terms and add, for each vertex with
            parameters below a vertex with parameters, an interaction term on its own
            and its ancestors' parameters, with its own lengthscales and output scale
            $\rho_v^2$ (Ma & Blaschko, 2020, App. E; module docstring). The output
            scales' prior is centred at a tenth of a vertex's (``INTERACTION_SCALE``).
            The terms' lengthscales and output scales are shared as
            ``share_lengthscales`` and ``share_outputscales`` say. On an additive
            objective the terms slow learning down; the loop's
            ``AddTreeOptions.alternative_kernels`` uses them only where leave-one-out
            shows that they predict better. Cannot be combined with
            ``inherit_ancestors``.
        vertices: ``V`` booleans: the vertices whose terms the kernel sums
            (default: every vertex; a vertex without parameters or offset
            contributes nothing either way).

    Attributes:
        interaction: The kernel of the interaction terms (an
            ``AddTreeKernel`` with ``inherit_ancestors`` over the interacting
            vertices), or ``None``.

    Shapes:
        ``forward(x1: *b x n x d, x2: *b x m x d) -> *b x n x m``, or
        ``*b x n`` with ``diag=True``.
    """

    has_lengthscale = False

    def __init__(
        self,
        dim: int,
        hierarchical_dependencies: HierarchicalDependencies | TreeStructure,
        base_kernel: str = "rbf",
        vertex_bias: bool | str = False,
        share_lengthscales: str = "none",
        share_outputscales: str = "none",
        shared_component: bool = False,
        lengthscale_prior: Prior | None | bool = None,
        outputscale_prior: Prior | None | bool = None,
        lengthscale_constraint: Interval | None = None,
        outputscale_constraint: Interval | None = None,
        batch_shape: torch.Size | None = None,
        categorical_values: Mapping[int, Sequence[float]] | None = None,
        inherit_ancestors: bool = False,
        ancestor_interactions: bool = False,
        vertices: Tensor | None = None,
    ) -> None:
        batch_shape = torch.Size() if batch_shape is None else batch_shape
        super().__init__(batch_shape=batch_shape)
        if base_kernel not in BASE_KERNELS:
            raise ValueError(
                f"base_kernel must be one of {BASE_KERNELS}, got {base_kernel!r}."
            )
        self.tree = as_tree_structure(dim, hierarchical_dependencies)
        self.dim = dim
        self.base_kernel = base_kernel
        self.vertex_bias = vertex_bias = validate_vertex_bias(vertex_bias)
        tree = self.tree
        if not isinstance(inherit_ancestors, bool):
            raise ValueError(
                f"inherit_ancestors must be a bool, got {inherit_ancestors!r}."
            )
        self.inherit_ancestors = inherit_ancestors
        if not isinstance(ancestor_interactions, bool):
            raise ValueError(
                f"ancestor_interactions must be a bool, got {ancestor_interactions!r}."
            )
        if ancestor_interactions and inherit_ancestors:
            raise ValueError(
                "ancestor_interactions adds separate interaction terms; it cannot "
                "be combined with inherit_ancestors (which folds them into each "
                "vertex's term)."
            )
        self.ancestor_interactions = ancestor_interactions
        columns = inherited_columns(tree) if inherit_ancestors else None
        # Lengthscale slots per vertex: its own columns, then its ancestors'.
        vertex_dims = (
            torch.tensor([len(c) for c in columns]) if columns else tree.vertex_dims
        )
        self.categorical_values = {
            int(c): [float(a) for a in values]
            for c, values in (categorical_values or {}).items()
        }
        if self.categorical_values or inherit_ancestors:
            tables = feature_tables(tree, self.categorical_values, columns)
            self.register_buffer("feature_columns", tables["columns"])
            self.register_buffer("feature_mask", tables["mask"])
            if self.categorical_values:
                self.register_buffer("feature_codes", tables["codes"])
                self.register_buffer("feature_slots", tables["slots"])
            else:  # feature f is lengthscale slot f
                self.feature_codes = self.feature_slots = None
        else:  # one feature per column
            self.register_buffer("feature_columns", tree.vertex_columns.clone())
            self.register_buffer(
                "feature_mask", tree.vertex_column_mask.to(torch.float64)
            )
            self.feature_codes = self.feature_slots = None
        selected = torch.ones(tree.num_vertices, dtype=torch.bool)
        if vertices is not None:
            vertices = torch.as_tensor(vertices)
            if vertices.shape != selected.shape or vertices.dtype != torch.bool:
                raise ValueError(
                    f"vertices must be {tree.num_vertices} booleans (one per "
                    f"vertex), got {vertices.dtype} of shape {tuple(vertices.shape)}."
                )
            selected = vertices.cpu()
        # With inherit_ancestors a vertex without parameters of its own still
        # has a term on its ancestors' (a parameter may act differently there).
        has_params = (vertex_dims > 0) & selected
        if vertex_bias == "all":
            has_offset = selected
        elif vertex_bias == "empty":
            has_offset = (tree.vertex_dims == 0) & selected
        else:
            has_offset = torch.zeros_like(has_params)
        contributes = has_params | has_offset
        self.register_buffer("vertex_has_params", has_params)
        self.register_buffer("vertex_has_offset", has_offset)
        self.register_buffer("vertex_contributes", contributes)
        self.register_buffer("slot_weights", tree.slot_weights(contributes))
        if not isinstance(shared_component, bool):
            raise ValueError(
                f"shared_component must be a bool, got {shared_component!r}."
            )
        self.shared_component = shared_component
        self.register_buffer("vertex_slots", tree.vertex_slots.clone())

        # Sharing groups: vertices in one group share their lengthscales (or
        # output scales).
        group = sharing_groups(tree, share_lengthscales, "share_lengthscales")
        os_group = sharing_groups(tree, share_outputscales, "share_outputscales")
        self.share_lengthscales = share_lengthscales
        self.share_outputscales = share_outputscales
        self.register_buffer("lengthscale_group", group)
        self.register_buffer("outputscale_group", os_group)
        lengthscale_constraint, outputscale_constraint, path_len = (
            self._register_hyperparameters(
                vertex_dims,
                batch_shape,
                lengthscale_prior,
                outputscale_prior,
                lengthscale_constraint,
                outputscale_constraint,
            )
        )
        self.interaction = (
            self._interaction_kernel(
                path_len,
                lengthscale_constraint,
                outputscale_constraint,
            )
            if ancestor_interactions
            else None
        )

    def _interaction_kernel(
        self,
        path_len: int,
        lengthscale_constraint: Interval,
        outputscale_constraint: Interval,
    ) -> AddTreeKernel | None:
        """The kernel of the ancestor interaction terms (``None`` where no
        vertex with parameters lies below another)."""
        interacting = interacting_vertices(self.tree) & self.vertex_has_params.cpu()
        if not bool(interacting.any()):
            return None
        scale = INTERACTION_SCALE / path_len
        kernel = AddTreeKernel(
            self.dim,
            self.tree,
            base_kernel=self.base_kernel,
            share_lengthscales=self.share_lengthscales,
            share_outputscales=self.share_outputscales,
            outputscale_prior=log_normal_prior(math.log(scale), 1.0),
            lengthscale_constraint=copy.deepcopy(lengthscale_constraint),
            outputscale_constraint=copy.deepcopy(outputscale_constraint),
            batch_shape=self.batch_shape,
            categorical_values=self.categorical_values,
            inherit_ancestors=True,
            vertices=interacting,
        )
        kernel.outputscale = scale
        return kernel

    # ----------------------------------------------------------- features
    def _vertex_features(self, x: Tensor) -> Tensor:
        r"""Scaled features of every vertex: ``*b x n x V x F``
        ([`vertex_features()`][treebo.add_tree.features.vertex_features]).

        Padded entries are zero, so they add nothing to distances.
        """
        return vertex_features(
            x,
            self.lengthscale,
            self.feature_columns,
            self.feature_mask,
            self.feature_codes,
            self.feature_slots,
        )

    def slot_features(self, x: Tensor) -> SlotFeatures:
        """What the vertex terms read of ``x`` (``*b x n x d``), computed once: pass it
        to [`forward()`][treebo.add_tree.kernel.AddTreeKernel.forward] as
        ``x2_features`` to evaluate many queries against the same points (e.g. the
        training inputs while an acquisition function is optimized). Valid while
        the hyper-parameters stay as they are."""
        return SlotFeatures(*self._slot_features(x))

    def _slot_features(
        self, x: Tensor
    ) -> tuple[Tensor, Tensor, Tensor, Tensor | None, Tensor | None]:
        """Per-slot vertex ids, scaled features, output scales, constants (None
        without ``vertex_bias``) and has-parameters indicators (None without
        ``shared_component``) of ``x``."""
        tree = self.tree
        active = tree.vertex_activity(x)
        ids = tree.slot_vertices(active, weights=self.slot_weights)
        z = self._vertex_features(x)
        z = torch.cat([z, torch.zeros_like(z[..., :1, :])], dim=-2)  # empty slot
        batch = torch.broadcast_shapes(z.shape[:-2], ids.shape[:-1])
        z = z.expand(*batch, *z.shape[-2:])
        ids = ids.expand(*batch, ids.shape[-1])
        z_slot = torch.take_along_dim(z, ids.unsqueeze(-1), dim=-2)

        def per_slot(values: Tensor) -> Tensor:  # *kb x V -> *batch x S
            values = torch.cat([values, torch.zeros_like(values[..., :1])], dim=-1)
            values = values.unsqueeze(-2).expand(*batch, values.shape[-1])
            return torch.take_along_dim(values, ids, dim=-1)

        s_slot = per_slot(self.effective_outputscale())
        o_slot = None
        if self.vertex_bias != "none":
            o_slot = per_slot(self.effective_offset())
        p_slot = None
        if self.shared_component:
            p_slot = per_slot(self.vertex_has_params.to(z))
        return ids, z_slot, s_slot, o_slot, p_slot

    def forward(
        self,
        x1: Tensor,
        x2: Tensor,
        diag: bool = False,
        last_dim_is_batch: bool = False,
        x2_features: SlotFeatures | None = None,
        x1_features: SlotFeatures | None = None,
        **params,
    ) -> Tensor:
        """The covariance of ``x1`` and ``x2`` as any GPyTorch kernel's, reading
        ``x1_features`` and ``x2_features`` (``slot_features()`` of ``x1`` and ``x2``
        computed beforehand) where given."""
        if last_dim_is_batch:
            raise NotImplementedError(
                "AddTreeKernel does not support last_dim_is_batch."
            )
        for name, x in (("x1", x1), ("x2", x2)):
            if x.shape[-1] != self.dim:
                raise ValueError(
                    f"AddTreeKernel expects {name} with {self.dim} columns, got "
                    f"shape {tuple(x.shape)}."
                )
        gram = self._vertex_terms(x1, x2, diag, x1_features, x2_features)
        if self.interaction is not None:
            gram = gram + self.interaction.forward(x1, x2, diag=diag)
        return gram

    def _vertex_terms(
        self,
        x1: Tensor,
        x2: Tensor,
        diag: bool,
        x1_features: SlotFeatures | None,
        x2_features: SlotFeatures | None,
    ) -> Tensor:
        """The sum of the vertex terms (and offsets, shared components)."""
        features = self._slot_features(x1) if x1_features is None else x1_features
        ids1, z1, s1, o1, p1 = features
        if x2_features is None:  # the same tensor (a training covariance): once
            x2_features = features if x2 is x1 else self._slot_features(x2)
        ids2, z2, _, _, p2 = x2_features
        # Align batch ranks without copying (a batch of queries against one
        # training set must not recompute the training set's features).
        rank = max(ids1.dim(), ids2.dim())
        ids1, s1 = _lead(ids1, rank), _lead(s1, rank)
        ids2 = _lead(ids2, rank)
        z1, z2 = _lead(z1, rank + 1), _lead(z2, rank + 1)
        tau = None
        if self.shared_component:
            p1, p2 = _lead(p1, rank), _lead(p2, rank)
            tau = self.slot_outputscale  # *kb x S
        if diag:
            sq = (z1 - z2).pow(2).sum(-1)  # *b x n x S
            k = stationary_correlation(sq, self.base_kernel)
            same = ids1 == ids2
            weight = same * s1
            if self.shared_component:
                weight = weight + tau.unsqueeze(-2) * p1 * p2
            out = (k * weight).sum(-1)
            if o1 is not None:
                out = out + (same * _lead(o1, rank)).sum(-1)
            return out
        # Slot-first layout: every n x m block is contiguous, and the sum over
        # slots runs over the outermost axis.
        a = z1.movedim(-2, -3).contiguous()  # *b x S x n x D
        b = z2.movedim(-2, -3).contiguous()  # *b x S x m x D
        # Only pairs in the same vertex of a slot interact, through that vertex's
        # output scale and constant; with shared components any two vertices of a
        # slot that own parameters do.
        ids1, ids2 = ids1.movedim(-1, -2), ids2.movedim(-1, -2)  # *b x S x n
        if self.shared_component:
            p1, p2 = p1.movedim(-1, -2), p2.movedim(-1, -2)
        offsets = None if o1 is None else _lead(o1, rank).movedim(-1, -2)
        scales = s1.movedim(-1, -2)
        return SlotGram.apply(
            a, b, ids1, ids2, scales, offsets, tau, p1, p2, self.base_kernel
        )

    def vertex_covariance(self, z: Tensor, x: Tensor) -> Tensor:
        r"""Per-vertex cross-covariances, with the query treated as active everywhere.

        Component ``v`` of the Add-Tree GP has covariance
        $k_v(z, x) = (\sigma_v^2 \kappa((z|_v - x|_v)/\ell_v) + c_v)\,a_v(x)$ between a
        query ``z`` that passes through ``v`` and a point ``x`` ($a_v(x)$ is 1 iff ``v``
        is active at ``x``). With ``shared_component``, component ``v`` also holds its
        slot's shared function, which adds $\tau_s^2 \kappa(z|_v/\ell_v - x|_u/\ell_u)$
        for the vertex $u$ active at ``x`` in ``v``'s slot $s$; the components of a path
        still sum to the full covariance.

        Args:
            z: ``*b x r x d`` query points (only continuous columns are read).
            x: ``*b x n x d`` points, e.g. the training inputs.

        Returns:
            ``*b x r x V x n`` tensor.
        """
        zf = self._vertex_features(z)  # *b x r x V x D
        xf = self._vertex_features(x)  # *b x n x V x D
        diff = zf.unsqueeze(-2) - xf.transpose(-2, -3).unsqueeze(-4)  # r V n D
        k = stationary_correlation(diff.pow(2).sum(-1), self.base_kernel)
        active = self.tree.vertex_activity(x).to(k).transpose(-1, -2)  # *b x V x n
        scale = self.effective_outputscale().unsqueeze(-1)  # *kb x V x 1
        k = k * scale.unsqueeze(-3)
        if self.vertex_bias != "none":
            k = k + self.effective_offset().unsqueeze(-1).unsqueeze(-3)
        k = k * active.unsqueeze(-3)
        if self.shared_component:
            _, x_slot, _, _, p_slot = self._slot_features(x)  # *b x n x S (x D)
            xs = x_slot[..., self.vertex_slots, :]  # *b x n x V x D
            diff = zf.unsqueeze(-2) - xs.transpose(-2, -3).unsqueeze(-4)
            ks = stationary_correlation(diff.pow(2).sum(-1), self.base_kernel)
            present = p_slot[..., self.vertex_slots].transpose(-1, -2)  # *b x V x n
            tau = self._vertex_shared_scale().unsqueeze(-1).unsqueeze(-3)
            k = k + ks * tau * present.unsqueeze(-3)
        if self.interaction is not None:
            k = k + self.interaction.vertex_covariance(z, x)
        return k

    def vertex_prior_variance(self) -> Tensor:
        """``batch_shape x V`` prior variance of each vertex's component."""
        variance = self.effective_outputscale() + self.effective_offset()
        if self.shared_component:
            variance = variance + self._vertex_shared_scale()
        if self.interaction is not None:
            variance = variance + self.interaction.vertex_prior_variance()
        return variance
