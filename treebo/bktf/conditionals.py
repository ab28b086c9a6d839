r"""BKTF's model and the conditionals of its Gibbs sampler (Lei & Sun, 2023, Sec. 7.1).

On a grid $S_1 \times \dots \times S_D$ the function is a CP decomposition of rank
$R$,

$$f(x) = \sum_{r=1}^R \lambda_r \prod_{d=1}^D g_d^r(x_d), \qquad
y_i = f(x_i) + \epsilon_i, \quad \epsilon_i \sim \mathcal N(0, \tau^{-1}),$$

with priors $g_d^r \sim \mathcal{GP}(0, k_d^r)$ over the values $S_d$ of mode $d$
(Matern-3/2 of length-scale $l_d^r$ on $[0, 1]$; the identity for a categorical
mode), $\lambda \sim \mathcal N(0, I_R)$, $\tau \sim \mathrm{Gamma}(a_0, b_0)$ and
$\log l_d^r \sim \mathcal N(\mu_l, \sigma_l^2)$.

Everything is computed element-wise over the $n$ observations, never through the
Kronecker product. Write $w_{ir} = \lambda_r \prod_{h \ne d} g_h^r(x_{ih})$ for mode
$d$. Given the other modes, $y = \sum_r \Phi_r g_d^r + \epsilon$ with
$(\Phi_r)_{is} = w_{ir} [x_{id} = s]$, so integrating out all $R$ factors of mode
$d$ at once gives

$$y \sim \mathcal N(0, \Sigma_d), \qquad \Sigma_d = \sum_r (w_r w_r^\top) \circ
K_d^r(X_d, X_d) + \tau^{-1} I_n,$$

an $n \times n$ matrix. This marginal is what the length-scales of mode $d$ are
slice-sampled from; the factors $g_d^{1:R}$ are then drawn jointly from their
Gaussian conditional by pathwise conditioning (Matheron's rule):

$$g^{\mathrm{post}} = g + K \Phi^\top \Sigma_d^{-1} (y - \Phi g - \epsilon'),
\qquad g \sim \mathcal N(0, K),\ \epsilon' \sim \mathcal N(0, \tau^{-1} I).$$

This is the paper's update of Eqs. (1)-(2) for all ranks of a mode together (one
block, so it mixes at least as well as rank by rank) with its $|S_d| \times |S_d|$
precision solved in the $n \times n$ form. The weights and the noise precision have
the conjugate conditionals of Secs. 7.1.3-7.1.4.

Shapes: ``C`` chains (a batch dimension throughout), ``R`` ranks, ``n``
observations, ``S`` values of the mode.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from treebo.bktf.grid import Grid

#: Added to each kernel's diagonal (its variance is 1).
KERNEL_JITTER = 1e-6


@dataclass(frozen=True)
class BKTFPrior:
    r"""Hyper-priors of BKTF.

    Attributes:
        lengthscale_loc: $\mu_l$, the mean of $\log l$ (inputs on ``[0, 1]``;
            Lei & Sun (2023), Sec. 7.5.1: $\log 0.5$).
        lengthscale_var: $\sigma_l^2$, the variance of $\log l$ (paper: 0.5).
        noise_shape: $a_0$ of the Gamma prior of the noise precision.
        noise_rate: $b_0$ of the Gamma prior of the noise precision.
        max_precision: Largest noise precision $\tau$ (standardized outputs):
            the noise variance stays above its inverse.

    Example:
        >>> BKTFPrior().lengthscale_var
        0.5
    """

    lengthscale_loc: float = math.log(0.5)
    lengthscale_var: float = 0.5
    noise_shape: float = 1e-6
    noise_rate: float = 1e-6
    max_precision: float = 1e6

    def __post_init__(self) -> None:
        if not math.isfinite(self.lengthscale_loc):
            raise ValueError(
                f"lengthscale_loc must be finite, got {self.lengthscale_loc!r}."
            )
        for name in ("lengthscale_var", "noise_shape", "noise_rate", "max_precision"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and 0 < value < math.inf):
                raise ValueError(f"{name} must be a finite number > 0, got {value!r}.")


@dataclass
class BKTFState:
    """One state of ``C`` chains.

    Attributes:
        factors: Per mode, ``C x R x S_d``: $g_d^r$ on the mode's values.
        log_lengthscale: ``C x R x D``: $\\log l_d^r$ (unused for categorical
            modes).
        weights: ``C x R``: $\\lambda$.
        precision: ``C``: $\\tau$.
    """

    factors: list[Tensor]
    log_lengthscale: Tensor
    weights: Tensor
    precision: Tensor


class BKTFData:
    """The observations on a grid, with the index structures the conditionals use.

    Args:
        grid: The grid.
        index: ``n x D`` multi-indices of the observations.
        y: ``n`` (standardized) observed values.
    """

    def __init__(self, grid: Grid, index: Tensor, y: Tensor) -> None:
        if index.dim() != 2 or index.shape[-1] != grid.dim:
            raise ValueError(
                f"index must be n x {grid.dim}, got shape {tuple(index.shape)}."
            )
        if y.shape != index.shape[:1]:
            raise ValueError(
                f"y must have shape ({index.shape[0]},), got {tuple(y.shape)}."
            )
        self.grid = grid
        self.index = index
        self.y = y
        #: Per mode, ``S_d``: the values mapped to [0, 1] (kernel inputs).
        self.unit = [grid.unit_values(d).to(y) for d in range(grid.dim)]
        #: Per mode, ``n``: each observation's value in [0, 1].
        self.observed = [self.unit[d][index[:, d]] for d in range(grid.dim)]
        # Per mode: (distances, where they are 0), over the values and over
        # the observations.
        self._grid_distance = [_distances(u) for u in self.unit]
        self._observed_distance = [_distances(u) for u in self.observed]
        self.eye = torch.eye(self.n, dtype=y.dtype, device=y.device)

    @property
    def n(self) -> int:
        return self.y.numel()

    def grid_kernel(self, d: int, log_lengthscale: Tensor) -> Tensor:
        """Mode ``d``'s prior covariance over its values for every chain and rank
        (``log_lengthscale``: ``C x R``): ``C x R x S x S``."""
        return self._kernel(d, self._grid_distance[d], log_lengthscale)

    def observed_kernel(self, d: int, log_lengthscale: Tensor) -> Tensor:
        """Mode ``d``'s prior covariance between the observations' values:
        ``C x R x n x n``."""
        return self._kernel(d, self._observed_distance[d], log_lengthscale)

    def _kernel(
        self, d: int, distances: tuple[Tensor, Tensor], log_lengthscale: Tensor
    ) -> Tensor:
        r"""Matern-3/2, $k(r) = (1 + \sqrt 3 r / l) e^{-\sqrt 3 r / l}$ of the unit
        distances ``dist``, or the identity for a categorical mode;
        ``KERNEL_JITTER`` is added where the two values are equal, so that every
        covariance the sampler builds is a block of one positive definite
        matrix."""
        dist, same = distances
        if self.grid.categorical[d]:
            cov = same.expand(*log_lengthscale.shape, *dist.shape)
        else:
            scaled = math.sqrt(3.0) * dist / log_lengthscale.exp()[..., None, None]
            cov = (1.0 + scaled) * torch.exp(-scaled)
        return cov + KERNEL_JITTER * same


def _distances(u: Tensor) -> tuple[Tensor, Tensor]:
    """Pairwise distances of ``u`` (``m``) and where they are 0 (as 0/1)."""
    dist = (u.unsqueeze(-1) - u).abs()
    return dist, (dist == 0).to(dist)


def rank_products(state: BKTFState, data: BKTFData, skip: int | None = None) -> Tensor:
    r"""``C x R x n``: $\prod_{d \ne \mathrm{skip}} g_d^r(x_{id})$."""
    out = None
    for d, factor in enumerate(state.factors):
        if d == skip:
            continue
        term = factor[..., data.index[:, d]]
        out = term if out is None else out * term
    if out is None:  # a one-mode grid without its mode
        shape = (*state.weights.shape, data.n)
        return torch.ones(shape, dtype=data.y.dtype, device=data.y.device)
    return out


def mode_weights(state: BKTFState, data: BKTFData, d: int) -> Tensor:
    r"""``C x R x n``: $w_{ir} = \lambda_r \prod_{h \ne d} g_h^r(x_{ih})$."""
    return state.weights.unsqueeze(-1) * rank_products(state, data, skip=d)


def _weighted_covariance(
    state: BKTFState, data: BKTFData, w: Tensor, K: Tensor
) -> Tensor:
    r"""$\sum_r (w_r w_r^\top) \circ K_r + \tau^{-1} I$ (``C x n x n``) from the
    weights ``w`` (``C x R x n``) and the kernel ``K`` (``C x R x n x n``)."""
    cov = (w.unsqueeze(-1) * w.unsqueeze(-2) * K).sum(-3)
    noise = state.precision.reciprocal()[..., None, None]
    return cov + noise * data.eye


def mode_marginal_covariance(
    state: BKTFState,
    data: BKTFData,
    d: int,
    log_lengthscale: Tensor,
    weights: Tensor | None = None,
) -> Tensor:
    r"""$\Sigma_d$ (``C x n x n``) with mode ``d``'s factors integrated out,
    at length-scales ``log_lengthscale`` (``C x R``) for that mode; ``weights``
    are [`mode_weights()`][treebo.bktf.conditionals.mode_weights] if known."""
    w = mode_weights(state, data, d) if weights is None else weights
    return _weighted_covariance(
        state, data, w, data.observed_kernel(d, log_lengthscale)
    )


def mode_log_marginal(
    state: BKTFState,
    data: BKTFData,
    d: int,
    log_lengthscale: Tensor,
    weights: Tensor | None = None,
) -> Tensor:
    r"""$\log \mathcal N(y; 0, \Sigma_d)$ for each chain (``C``)."""
    cov = mode_marginal_covariance(state, data, d, log_lengthscale, weights)
    L, info = torch.linalg.cholesky_ex(cov)
    alpha = torch.linalg.solve_triangular(L, data.y.unsqueeze(-1), upper=False)
    logdet = 2.0 * L.diagonal(dim1=-2, dim2=-1).log().sum(-1)
    value = -0.5 * (alpha.squeeze(-1).square().sum(-1) + logdet)
    value = value - 0.5 * data.n * math.log(2 * math.pi)
    return value.masked_fill(info > 0, -math.inf)


def sample_mode_factors(
    state: BKTFState,
    data: BKTFData,
    d: int,
    z: Tensor,
    eps: Tensor,
    weights: Tensor | None = None,
) -> Tensor:
    r"""A draw of mode ``d``'s factors $g_d^{1:R}$ (``C x R x S``) from their joint
    Gaussian conditional, by Matheron's rule (module docstring).

    The draw is affine in the standard normal inputs: ``z`` (``C x R x S``, the
    prior draw) and ``eps`` (``C x n``, the noise draw); zeros give the
    conditional mean. ``weights`` are
    [`mode_weights()`][treebo.bktf.conditionals.mode_weights] if known.
    """
    log_l = state.log_lengthscale[..., d]
    K = data.grid_kernel(d, log_l)  # C x R x S x S
    prior = (torch.linalg.cholesky(K) @ z.unsqueeze(-1)).squeeze(-1)
    w = mode_weights(state, data, d) if weights is None else weights  # C x R x n
    idx = data.index[:, d]
    fitted = (w * prior[..., idx]).sum(-2)  # C x n
    noise_sd = state.precision.rsqrt().unsqueeze(-1)
    residual = data.y - fitted - noise_sd * eps
    cross = K[..., idx]  # C x R x S x n: K(S_d, X_d)
    # Sigma_d from the same kernel matrix: K(X_d, X_d) = K[idx][:, idx].
    cov = _weighted_covariance(state, data, w, cross[..., idx, :])
    alpha = torch.cholesky_solve(residual.unsqueeze(-1), torch.linalg.cholesky(cov))
    return prior + (cross @ (w.unsqueeze(-1) * alpha.unsqueeze(-3))).squeeze(-1)


def weight_conditional(state: BKTFState, data: BKTFData) -> tuple[Tensor, Tensor]:
    r"""The Gaussian conditional of $\lambda$ (Sec. 7.1.3): its mean (``C x R``) and
    the Cholesky factor (``C x R x R``) of its precision
    $\tau P P^\top + I_R$, with $P_{ri} = \prod_d g_d^r(x_{id})$."""
    P = rank_products(state, data)
    tau = state.precision[..., None, None]
    eye = torch.eye(P.shape[-2], dtype=P.dtype, device=P.device)
    L = torch.linalg.cholesky(tau * P @ P.transpose(-1, -2) + eye)
    rhs = tau * (P @ data.y.unsqueeze(-1))
    return torch.cholesky_solve(rhs, L).squeeze(-1), L


def sample_weights(state: BKTFState, data: BKTFData, z: Tensor) -> Tensor:
    """A draw of $\\lambda$ (``C x R``) from standard normals ``z`` (``C x R``)."""
    mean, L = weight_conditional(state, data)
    offset = torch.linalg.solve_triangular(
        L.transpose(-1, -2), z.unsqueeze(-1), upper=True
    )
    return mean + offset.squeeze(-1)


def precision_conditional(
    state: BKTFState, data: BKTFData, prior: BKTFPrior
) -> tuple[float, Tensor]:
    r"""Shape $a^* = a_0 + n/2$ and rates (``C``)
    $b^* = b_0 + \tfrac12 \sum_i (y_i - f(x_i))^2$ of $\tau$'s Gamma conditional
    (Sec. 7.1.4)."""
    fitted = (state.weights.unsqueeze(-1) * rank_products(state, data)).sum(-2)
    rate = prior.noise_rate + 0.5 * (data.y - fitted).square().sum(-1)
    return prior.noise_shape + 0.5 * data.n, rate


def sample_precision(state: BKTFState, data: BKTFData, prior: BKTFPrior) -> Tensor:
    """A draw of $\\tau$ (``C``) from its Gamma conditional, capped at
    ``prior.max_precision`` (draws from the global torch generator)."""
    shape, rate = precision_conditional(state, data, prior)
    gamma = torch.distributions.Gamma(torch.full_like(rate, shape), rate)
    return gamma.sample().clamp(max=prior.max_precision)


def log_lengthscale_prior(log_lengthscale: Tensor, prior: BKTFPrior) -> Tensor:
    """Log density (up to a constant) of ``log_lengthscale`` (``C x R``), summed
    over ranks: ``C``."""
    z = log_lengthscale - prior.lengthscale_loc
    return -0.5 * (z.square() / prior.lengthscale_var).sum(-1)
