r"""Offsets for combinations of sibling choices.

Where one vertex :math:`u` holds several choices (a preprocessing step and a
model family, both at the root of a pipeline), the Add-Tree kernel is additive
across them: the effect of one choice's option is the same whatever the other
choice picks. Real pipelines are not like that (scaling matters for an SVM or
k-NN, not for a forest). This kernel adds, for every pair of choices
:math:`(j, k)` of every such vertex, a learned offset per combination of their
options:

.. math::

    k(x, x') = \sum_{(u, j, k)} c_{ujk}\, a_u(x)\, a_u(x')\,
        \mathbb{1}[x_j = x'_j]\, \mathbb{1}[x_k = x'_k],

with :math:`a_u(x) = 1` iff :math:`u` is active at :math:`x` and
:math:`c_{ujk} \ge 0`. Each summand is a product of delta kernels, hence PSD;
a pair of points on the same two options shares a random level that the
additive terms do not explain. The cost is :math:`O(n m P)` for :math:`P`
pairs of choices.
"""

from __future__ import annotations

import math
from itertools import combinations

import torch
from gpytorch.constraints import GreaterThan
from gpytorch.kernels import Kernel
from torch import Tensor

from treebo.kernels.hyperparameters import log_normal_prior
from treebo.kernels.sharing import fold_prior_sample
from treebo.structure import TreeStructure


def choice_pairs(tree: TreeStructure) -> Tensor:
    """``P x 3`` rows ``(vertex, column j, column k)``: every pair of choice
    columns owned by one vertex (``j < k``)."""
    rows = [
        (v.index, j, k)
        for v in tree.vertices
        for j, k in combinations(v.choice_columns, 2)
    ]
    return torch.tensor(rows, dtype=torch.long).reshape(-1, 3)


class ChoiceInteractionKernel(Kernel):
    r"""A learned offset per combination of the options of two sibling choices.

    See the module docstring for the definition. The offsets have the prior of
    :class:`~treebo.kernels.AddTreeKernel`'s vertex offsets,
    ``LogNormal(-log(10 h), 1.5)`` for ``h`` contributing vertices on a path
    (a tenth of a vertex's output scale), and start at its median.

    Args:
        tree: The space's :class:`~treebo.structure.TreeStructure`; it must
            have a vertex with two or more choices.
        path_len: ``h`` above (default 1).
        batch_shape: Batch shape of the offsets.

    Shapes:
        ``forward(x1: *b x n x d, x2: *b x m x d) -> *b x n x m``, or
        ``*b x n`` with ``diag=True``.

    Example:
        >>> from treebo.structure import TreeStructure
        >>> deps = {0: {0: [2], 1: []}, 1: {0: [], 1: [3]}}  # two root choices
        >>> kernel = ChoiceInteractionKernel(TreeStructure(4, deps))
        >>> x = torch.tensor([[0.0, 0.0, 0.5, 0.0], [0.0, 1.0, 0.5, 0.5]],
        ...                  dtype=torch.float64)
        >>> (kernel(x, x).to_dense() > 0).tolist()  # same options on both
        [[True, False], [False, True]]
    """

    has_lengthscale = False

    def __init__(
        self,
        tree: TreeStructure,
        path_len: int = 1,
        batch_shape: torch.Size | None = None,
    ) -> None:
        batch_shape = torch.Size() if batch_shape is None else batch_shape
        super().__init__(batch_shape=batch_shape)
        pairs = choice_pairs(tree)
        if pairs.shape[0] == 0:
            raise ValueError(
                "ChoiceInteractionKernel needs a vertex with two or more choices; "
                "this tree has none."
            )
        self.tree = tree
        self.register_buffer("pair_vertices", pairs[:, 0].clone())
        self.register_buffer("pair_columns", pairs[:, 1:].clone())
        P = pairs.shape[0]
        self.register_parameter(
            "raw_offset", torch.nn.Parameter(torch.zeros(*batch_shape, P))
        )
        self.register_constraint("raw_offset", GreaterThan(1e-8))
        self.register_prior(
            "offset_prior",
            log_normal_prior(-math.log(10.0 * path_len), 1.5),
            self._offset_param,
            self._offset_closure,
        )
        self._set_offset(torch.full((*batch_shape, P), 0.1 / path_len))

    @staticmethod
    def _offset_param(m: ChoiceInteractionKernel) -> Tensor:
        return m.offset

    @staticmethod
    def _offset_closure(m: ChoiceInteractionKernel, v: Tensor) -> None:
        m._set_offset(fold_prior_sample(v, m.raw_offset.shape))

    @property
    def offset(self) -> Tensor:
        """``batch_shape x P`` offsets :math:`c_{ujk}`."""
        return self.raw_offset_constraint.transform(self.raw_offset)

    @offset.setter
    def offset(self, value: Tensor | float) -> None:
        self._set_offset(value)

    def _set_offset(self, value: Tensor | float) -> None:
        value = torch.as_tensor(value).to(self.raw_offset)
        value = value.expand(self.raw_offset.shape)
        self.initialize(raw_offset=self.raw_offset_constraint.inverse_transform(value))

    def _options(self, x: Tensor) -> Tensor:
        """``*b x n x P x 2``: each point's options of each pair of choices
        (NaN where the pair's vertex is inactive, so that they match nothing)."""
        active = self.tree.vertex_activity(x)[..., self.pair_vertices]
        values = x[..., self.pair_columns]
        return torch.where(active.unsqueeze(-1), values, math.nan)

    def forward(
        self,
        x1: Tensor,
        x2: Tensor,
        diag: bool = False,
        last_dim_is_batch: bool = False,
        **params,
    ) -> Tensor:
        if last_dim_is_batch:
            raise NotImplementedError(
                "ChoiceInteractionKernel does not support last_dim_is_batch."
            )
        o1 = self._options(x1)
        c = self.offset
        if diag:
            return ((~o1[..., 0].isnan()).to(c) * c.unsqueeze(-2)).sum(-1)
        o2 = self._options(x2)
        a, b = o1.unsqueeze(-3), o2.unsqueeze(-4)  # *b x n x 1 x P x 2
        same = ((a[..., 0] == b[..., 0]) & (a[..., 1] == b[..., 1])).to(c)
        return (same * c.unsqueeze(-2).unsqueeze(-2)).sum(-1)
