"""Per-vertex hyper-parameters of the Add-Tree kernel, grouped by sharing.

The kernel stores one raw parameter per *sharing group* (every vertex its own
group without sharing; one group per depth with ``"depth"``; one in all with
``"all"``) and exposes per-vertex views. This mixin holds those views, their
setters, the closures of the priors registered on them, and the
registration of the parameters, constraints and priors.

Shapes (``V`` vertices, ``G``/``G_os`` lengthscale/output-scale groups,
``D_max`` the most continuous columns of a vertex, ``S`` slots):

- ``group_lengthscale``: ``batch_shape x G x D_max``;
  ``lengthscale``: ``batch_shape x V x D_max``.
- ``group_outputscale``: ``batch_shape x G_os``; ``outputscale``,
  ``vertex_offset``: ``batch_shape x V``.
- ``slot_outputscale``: ``batch_shape x S``.

Vertices in one sharing group share a lengthscale vector (or an output scale): each
group holds one parameter, and vertices read theirs by a gather
([`sharing_groups()`][treebo.add_tree.hyperparameters.sharing_groups]).

Example:
    >>> from treebo.add_tree import AddTreeKernel
    >>> k = AddTreeKernel(3, {0: {0: [1], 1: [2]}}, share_outputscales="all")
    >>> k.outputscale = 0.5
    >>> k.outputscale.shape, round(k.group_outputscale.item(), 12)
    (torch.Size([3]), 0.5)
"""

from __future__ import annotations

import math

import torch
from gpytorch.constraints import GreaterThan, Interval
from gpytorch.priors import Prior
from torch import Tensor

from treebo.add_tree.options import validate_sharing
from treebo.add_tree.priors import LogNormalPrior
from treebo.space.structure import TreeStructure


def sharing_groups(tree: TreeStructure, share: str, name: str) -> Tensor:
    """``V`` group index per vertex for a sharing mode (groups numbered from 0)."""
    validate_sharing(share, name)
    if share == "none":
        group = torch.arange(tree.num_vertices)
    elif share == "depth":
        group = torch.tensor([v.depth for v in tree.vertices])
    else:
        group = torch.zeros(tree.num_vertices, dtype=torch.long)
    return torch.unique(group, return_inverse=True)[1]


def first_of_groups(group: Tensor) -> Tensor:
    """``G``: the first vertex of each group."""
    V = group.numel()
    first = torch.full((int(group.max()) + 1,), V, device=group.device)
    return first.scatter_reduce(
        0, group, torch.arange(V, device=group.device), reduce="amin"
    )


def fold_prior_sample(sample: Tensor, shape: torch.Size) -> Tensor:
    """Fold a prior draw of ``sample_shape x prior_batch`` into ``shape``.

    BoTorch's ``sample_all_priors`` (used when ``fit_gpytorch_mll`` retries)
    draws ``prior.sample(param.shape)``, which appends the prior's own batch
    shape (``G x D_max`` for the default lengthscale prior). Each of the
    ``prod(shape)`` leading draws is a full draw of the prior; the first
    ``prod(shape) / prior_numel`` of them fill ``shape``.
    """
    if sample.shape == shape:
        return sample
    extra = sample.dim() - len(shape)
    if extra <= 0:
        return sample.expand(shape)
    prior_shape = sample.shape[len(shape) :]
    draws = sample.reshape(-1, *prior_shape)  # shape.numel() independent draws
    count = shape.numel() // max(1, prior_shape.numel())
    if count * prior_shape.numel() == shape.numel():
        return draws[:count].reshape(shape)
    return draws[0].expand(shape)


def log_normal_prior(loc: float, scale: float) -> LogNormalPrior:
    """A scalar ``LogNormalPrior`` (``loc`` and ``scale`` of the logarithm)."""
    return LogNormalPrior(loc=torch.tensor(loc), scale=torch.tensor(scale))


class VertexHyperparameters:
    """Per-vertex views of the Add-Tree kernel's grouped hyper-parameters.

    A mixin for [`AddTreeKernel`][treebo.add_tree.kernel.AddTreeKernel]: it expects the
    buffers ``lengthscale_group``, ``outputscale_group``, ``vertex_slots``,
    ``vertex_has_params``, the attributes ``vertex_bias``, ``shared_component`` and
    ``tree``; `_register_hyperparameters()` registers the raw parameters, constraints
    and priors.
    """

    def _register_hyperparameters(
        self,
        vertex_dims: Tensor,
        batch_shape: torch.Size,
        lengthscale_prior: Prior | None | bool,
        outputscale_prior: Prior | None | bool,
    ) -> None:
        """Register the raw parameters, their constraints and priors, and set
        the initial values (arguments as the kernel's; ``vertex_dims``: the
        lengthscale slots each vertex uses)."""
        tree, group, os_group = (
            self.tree,
            self.lengthscale_group,
            self.outputscale_group,
        )
        G, G_os = int(group.max()) + 1, int(os_group.max()) + 1
        V, d_max = tree.num_vertices, max(1, int(vertex_dims.max()))
        vertex_bias, contributes = self.vertex_bias, self.vertex_contributes
        shared_component = self.shared_component
        group_dims = torch.zeros(G, dtype=torch.long).scatter_reduce(
            0, group, vertex_dims, reduce="amax"
        )

        self.register_parameter(
            "raw_lengthscale",
            torch.nn.Parameter(torch.zeros(*batch_shape, G, d_max)),
        )
        self.register_parameter(
            "raw_outputscale", torch.nn.Parameter(torch.zeros(*batch_shape, G_os))
        )
        if vertex_bias != "none":
            self.register_parameter(
                "raw_vertex_offset",
                torch.nn.Parameter(torch.zeros(*batch_shape, G_os)),
            )
            self.register_constraint("raw_vertex_offset", GreaterThan(1e-8))
        if shared_component:
            self.register_parameter(
                "raw_slot_outputscale",
                torch.nn.Parameter(torch.zeros(*batch_shape, tree.num_slots)),
            )
            self.register_constraint("raw_slot_outputscale", GreaterThan(1e-8))
        self.register_constraint(
            "raw_lengthscale", Interval(2.5e-3, 1e3, initial_value=1.0)
        )
        self.register_constraint("raw_outputscale", GreaterThan(1e-8))

        init_ls = torch.ones(G, d_max)
        if lengthscale_prior is None:
            dims = group_dims.clamp_min(1).to(torch.float64)
            loc = (math.sqrt(2.0) + 0.5 * dims.log()).unsqueeze(-1).expand(G, d_max)
            lengthscale_prior = LogNormalPrior(
                loc=loc.clone(), scale=torch.full((G, d_max), math.sqrt(3.0))
            )
            init_ls = torch.exp(lengthscale_prior.loc - lengthscale_prior.scale**2)
        if lengthscale_prior is not False:
            self.register_prior(
                "lengthscale_prior",
                lengthscale_prior,
                self._lengthscale_param,
                self._lengthscale_closure,
            )
        path_len = max(1, tree.max_active_vertices(contributes))
        if outputscale_prior is None:
            outputscale_prior = log_normal_prior(-math.log(path_len), 1.0)
        if outputscale_prior is not False:
            self.register_prior(
                "outputscale_prior",
                outputscale_prior,
                self._outputscale_param,
                self._outputscale_closure,
            )
        if vertex_bias != "none":
            # Offsets: a tenth of an output scale a priori and initially.
            self.register_prior(
                "vertex_offset_prior",
                log_normal_prior(-math.log(10.0 * path_len), 1.5),
                self._offset_param,
                self._offset_closure,
            )
            self.vertex_offset = torch.full((*batch_shape, V), 0.1 / path_len)
        if shared_component:
            self.register_prior(
                "slot_outputscale_prior",
                log_normal_prior(-math.log(2.0 * path_len), 1.0),
                self._slot_outputscale_param,
                self._slot_outputscale_closure,
            )
            self.slot_outputscale = torch.full(
                (*batch_shape, tree.num_slots), 0.5 / path_len
            )
        # Initial values: the default prior's mode for lengthscales, and output
        # scales that sum to 1 along the longest path.
        self._set_group_lengthscale(init_ls.expand(*batch_shape, G, d_max))
        self.outputscale = torch.full((*batch_shape, V), 1.0 / path_len)

    @staticmethod
    def _lengthscale_param(m: VertexHyperparameters) -> Tensor:
        return m.group_lengthscale

    @staticmethod
    def _lengthscale_closure(m: VertexHyperparameters, v: Tensor) -> None:
        m._set_group_lengthscale(fold_prior_sample(v, m.raw_lengthscale.shape))

    @staticmethod
    def _outputscale_param(m: VertexHyperparameters) -> Tensor:
        return m.group_outputscale

    @staticmethod
    def _outputscale_closure(m: VertexHyperparameters, v: Tensor) -> None:
        m._set_group_outputscale(fold_prior_sample(v, m.raw_outputscale.shape))

    @staticmethod
    def _offset_param(m: VertexHyperparameters) -> Tensor:
        return m.raw_vertex_offset_constraint.transform(m.raw_vertex_offset)

    @staticmethod
    def _offset_closure(m: VertexHyperparameters, v: Tensor) -> None:
        m._set_group_offset(fold_prior_sample(v, m.raw_vertex_offset.shape))

    @staticmethod
    def _slot_outputscale_param(m: VertexHyperparameters) -> Tensor:
        return m.slot_outputscale

    @staticmethod
    def _slot_outputscale_closure(m: VertexHyperparameters, v: Tensor) -> None:
        m.slot_outputscale = fold_prior_sample(v, m.raw_slot_outputscale.shape)

    @property
    def slot_outputscale(self) -> Tensor:
        """``batch_shape x S`` output scales of the slots' shared components
        (zeros without ``shared_component``)."""
        if not self.shared_component:
            return torch.zeros_like(self.raw_outputscale[..., :1]).expand(
                *self.raw_outputscale.shape[:-1], self.tree.num_slots
            )
        return self.raw_slot_outputscale_constraint.transform(self.raw_slot_outputscale)

    @slot_outputscale.setter
    def slot_outputscale(self, value: Tensor | float) -> None:
        if not self.shared_component:
            raise AttributeError("slot_outputscale needs shared_component=True.")
        self._set_constrained("raw_slot_outputscale", value)

    def _vertex_shared_scale(self) -> Tensor:
        """``batch_shape x V``: each vertex's slot output scale (zero for
        vertices without continuous columns)."""
        scale = self.slot_outputscale[..., self.vertex_slots]
        return scale * self.vertex_has_params.to(scale)

    @property
    def group_lengthscale(self) -> Tensor:
        """``batch_shape x G x D_max`` lengthscales of the sharing groups."""
        return self.raw_lengthscale_constraint.transform(self.raw_lengthscale)

    def _set_constrained(self, name: str, value: Tensor | float) -> None:
        """Set the raw parameter ``name`` so that its constrained value is
        ``value`` (broadcast to the parameter's shape)."""
        raw = getattr(self, name)
        value = torch.as_tensor(value).to(raw)
        constraint = getattr(self, f"{name}_constraint")
        self.initialize(**{name: constraint.inverse_transform(value.expand_as(raw))})

    def _set_group_lengthscale(self, value: Tensor | float) -> None:
        self._set_constrained("raw_lengthscale", value)

    @property
    def lengthscale(self) -> Tensor:
        """``batch_shape x V x D_max`` per-vertex lengthscales (padding unused)."""
        return self.group_lengthscale[..., self.lengthscale_group, :]

    @lengthscale.setter
    def lengthscale(self, value: Tensor | float) -> None:
        """Set per-vertex lengthscales (``V x D_max``, or a scalar).

        With shared lengthscales, each group takes the value of its first vertex.
        """
        value = torch.as_tensor(value).to(self.raw_lengthscale)
        if value.dim() >= 2 and value.shape[-2] == self.lengthscale_group.numel():
            first = first_of_groups(self.lengthscale_group.to(value.device))
            value = value[..., first, :]
        self._set_group_lengthscale(value)

    @property
    def group_outputscale(self) -> Tensor:
        """``batch_shape x G_os`` output scales of the sharing groups."""
        return self.raw_outputscale_constraint.transform(self.raw_outputscale)

    @property
    def outputscale(self) -> Tensor:
        """``batch_shape x V`` per-vertex output scales."""
        return self.group_outputscale[..., self.outputscale_group]

    @outputscale.setter
    def outputscale(self, value: Tensor | float) -> None:
        """Set per-vertex output scales (``V``, or a scalar).

        With shared output scales, each group takes the value of its first vertex.
        """
        self._set_group_outputscale(self._per_group(value))

    def _per_group(self, value: Tensor | float) -> Tensor:
        """Per-vertex values (``... x V``) -> values of the output-scale groups
        (each group takes its first vertex's); scalars pass through."""
        value = torch.as_tensor(value).to(self.raw_outputscale)
        if value.dim() >= 1 and value.shape[-1] == self.outputscale_group.numel():
            value = value[..., first_of_groups(self.outputscale_group)]
        return value

    def _set_group_outputscale(self, value: Tensor | float) -> None:
        self._set_constrained("raw_outputscale", value)

    @property
    def vertex_offset(self) -> Tensor:
        """``batch_shape x V`` per-vertex constants (zeros if ``vertex_bias`` is
        ``"none"``; only vertices that carry one use theirs)."""
        if self.vertex_bias == "none":
            return torch.zeros_like(self.outputscale)
        offset = self.raw_vertex_offset_constraint.transform(self.raw_vertex_offset)
        return offset[..., self.outputscale_group]

    @vertex_offset.setter
    def vertex_offset(self, value: Tensor | float) -> None:
        """Set per-vertex constants (``V``, or a scalar); see ``outputscale``."""
        if self.vertex_bias == "none":
            raise AttributeError("vertex_offset needs vertex_bias 'empty' or 'all'.")
        self._set_group_offset(self._per_group(value))

    def _set_group_offset(self, value: Tensor | float) -> None:
        self._set_constrained("raw_vertex_offset", value)

    def effective_outputscale(self) -> Tensor:
        """Output scales, zero for vertices without continuous columns."""
        return self.outputscale * self.vertex_has_params.to(self.outputscale)

    def effective_offset(self) -> Tensor:
        """Per-vertex constants, zero for vertices that carry none."""
        offset = self.vertex_offset
        return offset * self.vertex_has_offset.to(offset)
