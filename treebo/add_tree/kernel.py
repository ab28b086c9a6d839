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
shared-shape parameter is best at its lower bound) before they are explored. The
interaction terms of the paper's App. E are a kernel of their own,
[`AncestorInteractionKernel`][treebo.add_tree.interaction.AncestorInteractionKernel],
added with ``+``: the sum, an
[`AddTreeKernelSum`][treebo.add_tree.kernel.AddTreeKernelSum], is what
[`AddTreeGP`][treebo.add_tree.model.AddTreeGP] uses with ``ancestor_interactions``.

Evaluation is vectorized over vertices with the slot encoding of
[`TreeStructure`][treebo.space.structure.TreeStructure]: each point has at most one
active vertex per slot, and two points share a vertex only in the same slot, so a pair
needs ``S`` (= tree depth for a plain tree) kernel terms rather than ``V``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import torch
from gpytorch.kernels import Kernel
from gpytorch.priors import Prior
from torch import Tensor

from treebo.add_tree.features import (
    SlotFeatures,
    feature_tables,
    inherited_columns,
    vertex_features,
)
from treebo.add_tree.hyperparameters import VertexHyperparameters, sharing_groups
from treebo.add_tree.options import BASE_KERNELS, validate_vertex_bias
from treebo.add_tree.slot_gram import SlotGram
from treebo.gp.correlation import stationary_correlation
from treebo.space.structure import (
    HierarchicalDependencies,
    TreeStructure,
    as_tree_structure,
)


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

    Two class-level hooks let a subclass change which vertices have a term and what
    each term reads, with everything else (sharing, priors, the batched evaluation)
    as here:
    [`term_vertices()`][treebo.add_tree.kernel.AddTreeKernel.term_vertices] and
    ``reads_ancestors`` (each term reads its ancestors' parameters after its own, as
    [`AncestorInteractionKernel`][treebo.add_tree.interaction.AncestorInteractionKernel]'s
    do).

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
        share_lengthscales: ``"none"`` (every vertex its own ARD lengthscales),
            ``"depth"`` (vertices at the same depth share them, so a branch with
            little data borrows the smoothness learned on its siblings) or
            ``"all"``.
        share_outputscales: ``"none"`` (every vertex its own output scale),
            ``"depth"`` (vertices at the same depth share it, so an unexplored
            branch keeps the amplitude learned on its explored siblings instead
            of the prior's, which keeps its posterior variance honest) or
            ``"all"``.
        shared_component: Add, per slot (per depth in a plain tree), a
            function shared by all of the slot's vertices (see the module
            docstring), with a learned output scale ``slot_outputscale[s]``
            (prior and initial value: half the vertex output scales'). Off by
            default (Definition 4 exactly).
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
        batch_shape: Batch shape of the hyper-parameters.
        categorical_values: ``{column: values}`` of the parameter columns that are
            unordered categoricals: modelled by one-hot features (see
            [`treebo.add_tree.features`][treebo.add_tree.features]) rather than as
            numbers.

    The lengthscales are constrained to ``[2.5e-3, 1e3]`` (inputs scaled to the unit
    cube) and the output scales to at least ``1e-8`` (finite prior densities where a
    fit drives a scale towards zero); ``register_constraint()`` replaces either.

    Shapes:
        ``forward(x1: *b x n x d, x2: *b x m x d) -> *b x n x m``, or
        ``*b x n`` with ``diag=True``.

    Example:
        >>> k = AddTreeKernel(3, {0: {0: [1], 1: [2]}}, share_lengthscales="depth")
        >>> x = torch.tensor([[0.0, 0.2, 0.0], [1.0, 0.0, 0.7]])
        >>> k(x).to_dense().shape
        torch.Size([2, 2])
    """

    has_lengthscale = False

    #: Whether each vertex's term reads its ancestors' parameters after its own
    #: (each with a lengthscale of its own in that term).
    reads_ancestors: bool = False

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
        batch_shape: torch.Size | None = None,
        categorical_values: Mapping[int, Sequence[float]] | None = None,
    ) -> None:
        batch_shape = torch.Size() if batch_shape is None else batch_shape
        super().__init__(batch_shape=batch_shape)
        if base_kernel not in BASE_KERNELS:
            raise ValueError(
                f"base_kernel must be one of {BASE_KERNELS}, got {base_kernel!r}."
            )
        self.tree = tree = as_tree_structure(dim, hierarchical_dependencies)
        self.dim = dim
        self.base_kernel = base_kernel
        self.vertex_bias = vertex_bias = validate_vertex_bias(vertex_bias)
        columns = inherited_columns(tree) if self.reads_ancestors else None
        # Lengthscale slots per vertex: its own columns (then its ancestors').
        vertex_dims = (
            torch.tensor([len(c) for c in columns]) if columns else tree.vertex_dims
        )
        self.categorical_values = {
            int(c): [float(a) for a in values]
            for c, values in (categorical_values or {}).items()
        }
        if self.categorical_values or columns:
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
        selected = self.term_vertices(tree)
        # A term that reads its ancestors has parameters where its path has any.
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
        self._register_hyperparameters(
            vertex_dims, batch_shape, lengthscale_prior, outputscale_prior
        )

    @classmethod
    def term_vertices(cls, tree: TreeStructure) -> Tensor:
        """``V`` booleans: the vertices whose terms the kernel sums (every vertex; a
        vertex without parameters or offset contributes nothing either way)."""
        return torch.ones(tree.num_vertices, dtype=torch.bool)

    def __add__(self, other: Kernel) -> Kernel:
        """``self + other``: an
        [`AddTreeKernelSum`][treebo.add_tree.kernel.AddTreeKernelSum] where ``other``
        is an Add-Tree kernel (or sum) of the same tree, else GPyTorch's sum."""
        if isinstance(other, (AddTreeKernel, AddTreeKernelSum)):
            return AddTreeKernelSum(self, other)
        return super().__add__(other)

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
        return self._vertex_terms(x1, x2, diag, x1_features, x2_features)

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
        return k

    def vertex_prior_variance(self) -> Tensor:
        """``batch_shape x V`` prior variance of each vertex's component."""
        variance = self.effective_outputscale() + self.effective_offset()
        if self.shared_component:
            variance = variance + self._vertex_shared_scale()
        return variance


class AddTreeKernelSum(Kernel):
    r"""The sum of Add-Tree kernels of one tree, e.g. an
    [`AddTreeKernel`][treebo.add_tree.kernel.AddTreeKernel] plus an
    [`AncestorInteractionKernel`][treebo.add_tree.interaction.AncestorInteractionKernel]:
    what ``+`` of two such kernels gives.

    Each vertex's component is the sum of the summands' components, so the sum keeps
    the per-vertex methods [`AddTreeGP`][treebo.add_tree.model.AddTreeGP] and
    [`AddTreeUCB`][treebo.add_tree.acquisition.AddTreeUCB] use. The summands are
    ``kernels[0]``, ``kernels[1]``, ...; a state dict of a single Add-Tree kernel
    (names without ``kernels.``) loads into the first, so a model with interaction
    terms can start from a fit without them.

    Args:
        *kernels: Two or more Add-Tree kernels (or sums) over the same columns.

    Shapes:
        As [`AddTreeKernel`][treebo.add_tree.kernel.AddTreeKernel]'s.

    Example:
        >>> from treebo.add_tree import AncestorInteractionKernel
        >>> deps = {0: {0: [1, 2], 1: [3]}, 2: {0: [4], 1: [5]}}
        >>> k = AddTreeKernel(6, deps) + AncestorInteractionKernel(6, deps)
        >>> type(k).__name__, len(k.kernels)
        ('AddTreeKernelSum', 2)
    """

    has_lengthscale = False

    def __init__(self, *kernels: AddTreeKernel | AddTreeKernelSum) -> None:
        flat: list[AddTreeKernel] = []
        for kernel in kernels:
            if isinstance(kernel, AddTreeKernelSum):
                flat.extend(kernel.kernels)
            elif isinstance(kernel, AddTreeKernel):
                flat.append(kernel)
            else:
                raise TypeError(
                    "AddTreeKernelSum adds Add-Tree kernels, got "
                    f"{type(kernel).__name__}."
                )
        if len(flat) < 2:
            raise ValueError("AddTreeKernelSum needs at least two kernels.")
        first = flat[0]
        deps = first.tree.hierarchical_dependencies
        if any(
            k.dim != first.dim or k.tree.hierarchical_dependencies != deps
            for k in flat[1:]
        ):
            raise ValueError("the summed kernels must share their columns and tree.")
        super().__init__()
        self.kernels = torch.nn.ModuleList(flat)
        self.register_load_state_dict_pre_hook(_load_single_kernel_state)

    @property
    def batch_shape(self) -> torch.Size:
        """The summands' batch shapes, broadcast."""
        return torch.broadcast_shapes(*(k.batch_shape for k in self.kernels))

    @property
    def tree(self) -> TreeStructure:
        """The summands' tree."""
        return self.kernels[0].tree

    @property
    def dim(self) -> int:
        """The number of input columns."""
        return self.kernels[0].dim

    @property
    def reads_ancestors(self) -> bool:
        """Whether a summand's terms read ancestors' parameters."""
        return any(k.reads_ancestors for k in self.kernels)

    @property
    def shared_component(self) -> bool:
        """Whether a summand has per-slot shared components."""
        return any(k.shared_component for k in self.kernels)

    def _any(self, name: str) -> Tensor:
        flags = [getattr(k, name) for k in self.kernels]
        return torch.stack(flags).any(dim=0)

    @property
    def vertex_has_params(self) -> Tensor:
        """``V`` booleans: a summand's term of the vertex reads parameters."""
        return self._any("vertex_has_params")

    @property
    def vertex_has_offset(self) -> Tensor:
        """``V`` booleans: a summand's term of the vertex has a constant."""
        return self._any("vertex_has_offset")

    @property
    def vertex_contributes(self) -> Tensor:
        """``V`` booleans: the vertex has a term in some summand."""
        return self._any("vertex_contributes")

    def slot_features(self, x: Tensor) -> tuple[SlotFeatures, ...]:
        """Each summand's ``slot_features(x)``, for ``forward()``'s ``x1_features``
        and ``x2_features``."""
        return tuple(k.slot_features(x) for k in self.kernels)

    def forward(
        self,
        x1: Tensor,
        x2: Tensor,
        diag: bool = False,
        last_dim_is_batch: bool = False,
        x2_features: tuple[SlotFeatures, ...] | None = None,
        x1_features: tuple[SlotFeatures, ...] | None = None,
        **params,
    ) -> Tensor:
        """The summands' ``forward()``, added (dense, in order)."""
        n = len(self.kernels)
        x1_features = (None,) * n if x1_features is None else x1_features
        x2_features = (None,) * n if x2_features is None else x2_features
        return _sum(
            kernel.forward(
                x1, x2, diag, last_dim_is_batch, x2_features=f2, x1_features=f1
            )
            for kernel, f1, f2 in zip(
                self.kernels, x1_features, x2_features, strict=True
            )
        )

    def vertex_covariance(self, z: Tensor, x: Tensor) -> Tensor:
        """The summands' ``vertex_covariance()``, added: ``*b x r x V x n``."""
        return _sum(k.vertex_covariance(z, x) for k in self.kernels)

    def vertex_prior_variance(self) -> Tensor:
        """The summands' ``vertex_prior_variance()``, added: ``batch_shape x V``."""
        return _sum(k.vertex_prior_variance() for k in self.kernels)

    def __add__(self, other: Kernel) -> Kernel:
        """``self + other``, one flat sum where ``other`` is an Add-Tree kernel."""
        if isinstance(other, (AddTreeKernel, AddTreeKernelSum)):
            return AddTreeKernelSum(self, other)
        return super().__add__(other)


def _sum(terms: Iterable[Tensor]) -> Tensor:
    """``terms`` added in order (``sum()`` would start from a Python ``0``)."""
    total = None
    for term in terms:
        total = term if total is None else total + term
    return total


def _load_single_kernel_state(
    module: AddTreeKernelSum, state_dict: dict[str, Tensor], prefix: str, *args: Any
) -> None:
    """Rename a single Add-Tree kernel's entries (``prefix`` + name) to the first
    summand's (``prefix + "kernels.0."`` + name) where that one is absent."""
    del module, args
    for key in [k for k in state_dict if k.startswith(prefix)]:
        name = key[len(prefix) :]
        target = f"{prefix}kernels.0.{name}"
        if not name.startswith("kernels.") and target not in state_dict:
            state_dict[target] = state_dict.pop(key)
