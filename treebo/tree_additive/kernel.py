r"""The tree-structured additive kernel of Han, Arora & Scarlett (2021).

For ``d`` variables and a forest with edges $\mathcal{E}$, the components $G$ are the
edges (two variables) and the isolated variables (one variable each), and

$$
k(x, x') = \sum_{G} \sigma^G \exp\Big(-\frac12 \sum_{i \in G}
    \frac{(x_i - x'_i)^2}{\ell_i^2}\Big), \qquad
\sigma^G = \sqrt{\textstyle\sum_{i \in G} \sigma_i^2}
$$

(Han et al., 2021, eq. 7). Lengthscales $\ell_i$ and scales $\sigma_i$ belong to the
variables, not to the components, so they survive a change of structure:
[`TreeAdditiveKernel.set_edges()`][treebo.tree_additive.kernel.TreeAdditiveKernel.set_edges]
swaps the forest in place.

The Gram matrix is a sum over ``C`` components of ``n x m`` matrices. It is computed by
[`_ComponentGram`][treebo.tree_additive.kernel._ComponentGram], an autograd function
that walks the components in chunks and recomputes them in the backward pass, so memory
stays $O(nm)$ instead of $O(nmC)$ while time is $O(nmC)$.
"""

from __future__ import annotations

import math

import torch
from gpytorch.constraints import GreaterThan, Interval
from gpytorch.kernels import Kernel
from gpytorch.priors import LogNormalPrior, Prior
from torch import Tensor

from treebo.tree_additive.forest import check_forest

# Elements of one chunk's batch x components x n x m temporaries.
_CHUNK_ELEMENTS = 1 << 22
# Largest batch x components x n x m of exponentials kept for the backward pass.
_SAVED_ELEMENTS = 1 << 25


def _component_exponent(A: Tensor, B: Tensor, first: Tensor, second: Tensor) -> Tensor:
    """``b x c x n x m`` exponents $-\\frac12 \\sum_{i \\in G} (a_i - b_i)^2$.

    ``second`` (``p <= c``) holds the second variable of the first ``p``
    components (the edges); the others have one variable.
    """
    sq = (A[:, first, :, None] - B[:, first, None, :]).square_()
    p = second.shape[0]
    if p:
        sq[:, :p] += (A[:, second, :, None] - B[:, second, None, :]).square_()
    return sq.mul_(-0.5)


def _grad_inputs(
    Q: Tensor, A: Tensor, B: Tensor, var: Tensor, gA: Tensor | None, gB: Tensor | None
) -> None:
    r"""Add the gradients of ``sum Q * exp(...)`` through variables ``var``.

    With $Q_c = s_c\,G \odot E_c$, $\partial/\partial a_{n} = -\sum_m Q_{nm}(a_n -
    b_m)$ and $\partial/\partial b_{m} = \sum_n Q_{nm}(a_n -
    b_m)$: row sums and matrix-vector products.
    """
    a, b = A[:, var], B[:, var]  # b x c x n, b x c x m
    if gA is not None:
        ga = (Q @ b.unsqueeze(-1)).squeeze(-1) - a * Q.sum(-1)
        gA.index_add_(1, var, ga)
    if gB is not None:
        gb = (a.unsqueeze(-2) @ Q).squeeze(-2) - b * Q.sum(-2)
        gB.index_add_(1, var, gb)


class _ComponentGram(torch.autograd.Function):
    r"""``K = sum_c s_c exp(-1/2 sum_{i in G_c} (A_i - B_i)^2)``, chunked.

    Inputs: scaled inputs ``A`` (``b x d x n``) and ``B`` (``b x d x m``), component
    scales ``s`` (``b x C``), each component's first variable (``C``), the second
    variable of the first ``P`` components (the edges, ``P``). Output ``b x n x m``. The
    exponentials are kept for the backward pass when they fit in
    [`_SAVED_ELEMENTS`][treebo.tree_additive.kernel._SAVED_ELEMENTS], and recomputed
    chunk by chunk otherwise; the backward pass reduces them with the incoming gradient
    to ``b x d x n`` and ``b x d x m`` gradients by row sums and matrix-vector products.
    """

    @staticmethod
    def forward(ctx, A, B, scales, first, second):
        b, _, n = A.shape
        m = B.shape[-1]
        C = first.shape[0]
        chunk = max(1, _CHUNK_ELEMENTS // max(1, b * n * m))
        keep = b * C * n * m <= _SAVED_ELEMENTS
        K = A.new_zeros(b, n, m)
        kept = []
        for start in range(0, C, chunk):
            sl = slice(start, start + chunk)
            E = _component_exponent(A, B, first[sl], second[sl]).exp_()
            K += torch.einsum("bc,bcnm->bnm", scales[:, sl], E)
            if keep:
                kept.append(E)
        ctx.kept = kept
        ctx.chunk = chunk
        ctx.save_for_backward(A, B, scales, first, second)
        return K

    @staticmethod
    def backward(ctx, grad):
        A, B, scales, first, second = ctx.saved_tensors
        need_a, need_b, need_s = ctx.needs_input_grad[:3]
        gA = torch.zeros_like(A) if need_a else None
        gB = torch.zeros_like(B) if need_b else None
        gS = torch.zeros_like(scales) if need_s else None
        P = second.shape[0]
        for k, start in enumerate(range(0, first.shape[0], ctx.chunk)):
            sl = slice(start, start + ctx.chunk)
            if ctx.kept:
                Q = ctx.kept[k] * grad[:, None]
            else:
                E = _component_exponent(A, B, first[sl], second[sl])
                Q = E.exp_().mul_(grad[:, None])  # G * E_c
            if need_s:
                gS[:, sl] = Q.sum((-1, -2))
            if not (need_a or need_b):
                continue
            Q.mul_(scales[:, sl, None, None])  # s_c G E_c
            _grad_inputs(Q, A, B, first[sl], gA, gB)
            p = max(0, min(start + ctx.chunk, P) - start)
            if p:
                _grad_inputs(Q[:, :p], A, B, second[sl][:p], gA, gB)
        ctx.kept = None
        return gA, gB, gS, None, None


class TreeAdditiveKernel(Kernel):
    r"""Sum of 2-D RBF kernels on the edges of a forest and 1-D ones elsewhere.

    Args:
        dim: ``d``, the number of input variables.
        edges: ``E x 2`` long tensor, a forest over the variables (``None`` or
            empty: fully additive, one 1-D component per variable).
        lengthscale_prior: Prior on each $\ell_i$. Default: BoTorch's dimension-scaled
            log-normal prior for two-dimensional components,
            $\mathrm{LogNormal}(\sqrt2 + \tfrac12\log 2, \sqrt3)$.
        lengthscale_constraint: Default: greater than 0.025, starting at the
            prior's mode (as BoTorch's ``SingleTaskGP``).
        scale_prior: Prior on each $\sigma_i$. Default
            $\mathrm{LogNormal}(-\log d, \sqrt3)$: a fully additive model with equal
            scales then has prior variance one, as standardized outcomes do, and no
            scale collapses to zero on few data.
        scale_constraint: Default: greater than ``1e-5``.
        batch_shape: Batch shape of the hyper-parameters.

    Shapes: ``x1`` is ``batch_shape x n x d``, ``x2`` is ``batch_shape x m x d``;
    the result is ``batch_shape x n x m`` (``batch_shape x n`` with
    ``diag=True``). Batch dimensions of inputs and hyper-parameters broadcast.

    Example:
        >>> kernel = TreeAdditiveKernel(dim=4, edges=torch.tensor([[0, 1], [1, 2]]))
        >>> kernel.num_components  # two edges and the isolated variable 3
        3
        >>> x = torch.rand(5, 4, dtype=torch.float64)
        >>> kernel.to(torch.float64)(x).to_dense().shape
        torch.Size([5, 5])
        >>> kernel.set_edges(None)  # fully additive; same parameters
        >>> kernel.num_components
        4
    """

    has_lengthscale = True

    def __init__(
        self,
        dim: int,
        edges: Tensor | None = None,
        lengthscale_prior: Prior | None = None,
        lengthscale_constraint: Interval | None = None,
        scale_prior: Prior | None = None,
        scale_constraint: Interval | None = None,
        batch_shape: torch.Size | None = None,
        **kwargs,
    ) -> None:
        if not isinstance(dim, int) or isinstance(dim, bool) or dim < 1:
            raise ValueError(f"dim must be a positive integer, got {dim!r}.")
        if lengthscale_prior is None:
            lengthscale_prior = LogNormalPrior(
                loc=math.sqrt(2.0) + 0.5 * math.log(2.0), scale=math.sqrt(3.0)
            )
        if lengthscale_constraint is None:
            lengthscale_constraint = GreaterThan(
                2.5e-2, transform=None, initial_value=lengthscale_prior.mode
            )
        if scale_prior is None:
            scale_prior = LogNormalPrior(loc=-math.log(dim), scale=math.sqrt(3.0))
        batch_shape = torch.Size([]) if batch_shape is None else batch_shape
        super().__init__(
            ard_num_dims=dim,
            batch_shape=batch_shape,
            lengthscale_prior=lengthscale_prior,
            lengthscale_constraint=lengthscale_constraint,
            **kwargs,
        )
        self.dim = dim
        self.register_parameter(
            "raw_scale", torch.nn.Parameter(torch.zeros(*batch_shape, dim))
        )
        self.register_constraint(
            "raw_scale",
            GreaterThan(1e-5) if scale_constraint is None else scale_constraint,
        )
        self.register_prior(
            "scale_prior",
            scale_prior,
            lambda m: m.scale,
            lambda m, v: m._set_scale(v),
        )
        # Equal scales whose component variances sum to one for a fully additive
        # structure (standardized outcomes), inside the constraint.
        lower = float(getattr(self.raw_scale_constraint, "lower_bound", 0.0))
        upper = float(getattr(self.raw_scale_constraint, "upper_bound", math.inf))
        initial = 1.0 / dim if lower < 1.0 / dim < upper else (lower + upper) / 2
        if not math.isfinite(initial):
            initial = 2.0 * lower
        self._set_scale(torch.full_like(self.raw_scale, initial))
        self.register_buffer("edges", torch.zeros(0, 2, dtype=torch.long))
        self.register_buffer("first", torch.zeros(0, dtype=torch.long))
        self.register_buffer("second", torch.zeros(0, dtype=torch.long))
        self.register_buffer("paired", torch.zeros(0))
        self.set_edges(edges)

    @property
    def scale(self) -> Tensor:
        r"""``batch_shape x d`` per-variable scales $\sigma_i$."""
        return self.raw_scale_constraint.transform(self.raw_scale)

    @scale.setter
    def scale(self, value: Tensor | float) -> None:
        self._set_scale(value)

    def _set_scale(self, value: Tensor | float) -> None:
        value = torch.as_tensor(value).to(self.raw_scale)
        self.initialize(raw_scale=self.raw_scale_constraint.inverse_transform(value))

    def set_edges(self, edges: Tensor | None) -> None:
        r"""Replace the forest in place (hyper-parameters are kept).

        Components are ordered edges first (in the given order), then the
        isolated variables in increasing order.

        Raises:
            ValueError: If ``edges`` is not a forest over ``dim`` variables.
        """
        edges = check_forest(edges, self.dim)
        isolated = torch.ones(self.dim, dtype=torch.bool)
        isolated[edges.reshape(-1)] = False
        lone = isolated.nonzero().squeeze(-1)
        device = self.raw_scale.device
        self.edges = edges.to(device)
        self.first = torch.cat([edges[:, 0], lone]).to(device)
        self.second = torch.cat([edges[:, 1], lone]).to(device)
        self.paired = torch.cat(
            [torch.ones(edges.shape[0]), torch.zeros(lone.shape[0])]
        ).to(self.raw_scale)

    @property
    def num_components(self) -> int:
        """``C``: the number of edges plus the number of isolated variables."""
        return int(self.first.shape[0])

    @property
    def isolated(self) -> Tensor:
        """``d`` booleans: variables on no edge (each is a 1-D component)."""
        mask = torch.ones(self.dim, dtype=torch.bool, device=self.first.device)
        mask[self.edges.reshape(-1)] = False
        return mask

    def component_scales(self) -> Tensor:
        r"""``batch_shape x C``: $\sigma^G$, each component's prior variance."""
        s2 = self.scale.square()
        return (s2[..., self.first] + self.paired.to(s2) * s2[..., self.second]).sqrt()

    def _scaled(self, x: Tensor) -> Tensor:
        return x.div(self.lengthscale)

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
                "TreeAdditiveKernel has no last_dim_is_batch mode."
            )
        a, b = self._scaled(x1), self._scaled(x2)
        scales = self.component_scales()
        if diag:
            sq = (a - b).square()
            expo = sq[..., self.first] + self.paired.to(sq) * sq[..., self.second]
            return (expo.mul(-0.5).exp() * scales.unsqueeze(-2)).sum(-1)
        batch = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2], scales.shape[:-1])
        n, m = a.shape[-2], b.shape[-2]
        A = a.expand(*batch, n, self.dim).reshape(-1, n, self.dim).transpose(-1, -2)
        B = b.expand(*batch, m, self.dim).reshape(-1, m, self.dim).transpose(-1, -2)
        S = scales.expand(*batch, scales.shape[-1]).reshape(-1, scales.shape[-1])
        K = _ComponentGram.apply(A, B, S, self.first, self.edges[:, 1])
        return K.reshape(*batch, n, m)

    def component_covariances(self, x1: Tensor, x2: Tensor) -> Tensor:
        r"""Every component's covariance, ``batch_shape x C x n x m``.

        ``component_covariances(x1, x2).sum(-3)`` equals ``forward(x1, x2)``;
        memory grows with ``C``, so use it for modest ``n x m``.
        """
        a, b = self._scaled(x1), self._scaled(x2)
        sq = (a.unsqueeze(-2) - b.unsqueeze(-3)).square()  # *b x n x m x d
        expo = sq[..., self.first] + self.paired.to(sq) * sq[..., self.second]
        K = expo.mul(-0.5).exp() * self.component_scales()[..., None, None, :]
        return K.movedim(-1, -3)

    def variable_correlations(self, grid: Tensor, x: Tensor) -> Tensor:
        r"""One-dimensional correlations of grid values with data, per variable.

        Args:
            grid: ``batch_shape x d x R`` candidate values of every variable.
            x: ``n x d`` data.

        Returns:
            ``batch_shape x d x R x n``:
            $\exp(-\tfrac12 (g_{ir} - x_{ji})^2 / \ell_i^2)$. An edge component's
            correlation is the product of its two variables' and a 1-D component's is
            its variable's.
        """
        ls = self.lengthscale.squeeze(-2).unsqueeze(-1)  # *b x d x 1
        g = grid.div(ls)
        xs = x.transpose(-1, -2).div(ls)  # d x n
        return (g.unsqueeze(-1) - xs.unsqueeze(-2)).square().mul(-0.5).exp()
