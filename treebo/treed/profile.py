r"""The autograd pieces of a treed GP's profiled weighted pseudo-likelihood.

[`fit_treed_gp()`][treebo.treed.fit.fit_treed_gp] evaluates its objective many times on
small matrices, where the overhead of each autograd graph node dominates. The two
functions here replace those graphs with written-out backward passes:
[`MaternGaussianQuadratics`][treebo.treed.profile.MaternGaussianQuadratics] (each
factor's Gaussian quadratic forms and log-determinant) and
[`ProfiledLeafObjective`][treebo.treed.profile.ProfiledLeafObjective] (the factors
summed into their leaves, with each leaf's mean and output scale profiled out; the math
is in `treebo.treed.fit`). [`profile_leaves()`][treebo.treed.profile.profile_leaves] is
that profile without gradients and with leading batch dimensions, which scores many
candidate hyper-parameters at once.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from linear_operator.utils.cholesky import psd_safe_cholesky
from torch import Tensor

from treebo.gp.correlation import matern52_parts, pairwise_sq_dist
from treebo.treed.kernel import MIN_OUTPUTSCALE

#: Newton steps for the profiled log output scale (strictly concave, started
#: at the maximizer without priors, so it converges in a few steps).
NEWTON_STEPS = 4


class MaternGaussianQuadratics(torch.autograd.Function):
    r"""Gaussian quadratic forms and log-determinants of Matern-5/2 factors.

    For scaled inputs ``Z`` (``B x m x d``: inputs over lengthscales), a
    membership mask ``w`` (``B x m``, 1 on members, 0 on padding), a
    diagonal ``diag`` (``B x m``) and right-hand sides ``r`` (``B x m x k``,
    constant), builds

    $$
    C = \kappa(\lVert Z_i - Z_j \rVert^2) \odot w w^\top
        + \operatorname{diag}(\mathrm{diag})
    $$

    ($\kappa$ the Matern-5/2 correlation) and returns ``G = r^T C^{-1} r`` (``B x k x
    k``) and $\tfrac12 \log |C|$ (``B``). The backward pass is written out: with
    $\bar C = -C^{-1} r\, \bar G\, r^\top C^{-1} + \tfrac12 \bar h\,
    C^{-1}$ (symmetrized), the diagonal's gradient is that of $\bar C$ and, for
    $S = \bar C \odot w w^\top \odot \kappa'$,
    $\bar Z = 4 (\operatorname{diag}(S 1) Z - S Z)$, so one Cholesky inverse and two
    batched products replace an autograd graph over every ``B x m x m`` intermediate
    (the fit evaluates this many times on small matrices, where each graph node's
    overhead dominates).
    """

    @staticmethod
    def forward(
        ctx, Z: Tensor, diag: Tensor, w: Tensor, r: Tensor
    ) -> tuple[Tensor, Tensor]:
        sq = pairwise_sq_dist(Z, Z)
        k, t = matern52_parts(sq)
        ww = w.unsqueeze(-1) * w.unsqueeze(-2)
        C = k.mul_(ww)
        C.diagonal(dim1=-2, dim2=-1).add_(diag)
        chol = psd_safe_cholesky(C)
        A = torch.cholesky_solve(r, chol)  # C^{-1} r
        half_logdet = chol.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        ctx.save_for_backward(Z, chol, A, t.mul_(ww))
        return r.transpose(-1, -2) @ A, half_logdet

    @staticmethod
    def backward(ctx, grad_gram: Tensor, grad_half_logdet: Tensor):
        Z, chol, A, tww = ctx.saved_tensors
        sym = 0.5 * (grad_gram + grad_gram.transpose(-1, -2))
        grad_C = torch.cholesky_inverse(chol).mul_(
            0.5 * grad_half_logdet[..., None, None]
        )
        grad_C = grad_C.sub_(A @ sym @ A.transpose(-1, -2))
        grad_diag = grad_C.diagonal(dim1=-2, dim2=-1).clone()
        S = grad_C.mul_(tww)  # d kappa / d(r^2) = -5/6 t, applied below
        grad_Z = (Z * S.sum(-1, keepdim=True) - S @ Z).mul_(-10.0 / 3.0)
        return grad_Z, grad_diag, None, None


class LeafProfile(NamedTuple):
    r"""Each leaf's profiled objective and its pieces (``... x L`` each).

    Attributes:
        value: The leaf's weighted pseudo-likelihood plus the log priors of its output
            scale and noise, at $(\mu^*, t^*)$.
        mean: $\mu^*$, the generalized least-squares mean.
        log_scale: $t^*$, the profiled log output scale.
        decay: $e^{-t^*}$.
        Q: The weighted quadratic form $Q_l$ at $\mu^*$.
        N: The weighted count $N_l$.
        z_s: The output scale's standardized log, $(t^* - m_\sigma) / s_\sigma$.
        z_n: The noise's standardized log.
        binds: Where the noise floor binds.
    """

    value: Tensor
    mean: Tensor
    log_scale: Tensor
    decay: Tensor
    Q: Tensor
    N: Tensor
    z_s: Tensor
    z_n: Tensor
    binds: Tensor


def profile_leaves(
    gram: Tensor,
    half_logdet: Tensor,
    log_ratio: Tensor,
    leaf: Tensor,
    weight: Tensor,
    count: Tensor,
    priors: tuple[float, float, float, float],
    noise_floor: float,
) -> LeafProfile:
    r"""Sum factors into their leaves and profile out the means and scales.

    Args:
        gram: ``... x F x 2 x 2``: each factor's $y^\top C^{-1} y$, $y^\top C^{-1} 1$,
            $1^\top C^{-1} 1$.
        half_logdet: ``... x F``: $\tfrac12 \log |C|$.
        log_ratio: ``... x L``: each leaf's $\log \lambda_l$.
        leaf: ``F`` long: the leaf owning each factor.
        weight: ``F``: the factors' weights.
        count: ``F``: the factors' weighted sizes.
        priors: ``(loc, scale)`` of the output scale's and of the noise's
            log-normal priors.
        noise_floor: The lower bound on each leaf's noise variance.

    Returns:
        The [`LeafProfile`][treebo.treed.profile.LeafProfile] (module docstring for the
        math).
    """
    loc_s, scale_s, loc_n, scale_n = priors
    zeros = log_ratio.new_zeros(log_ratio.shape)
    num = zeros.index_add(-1, leaf, weight * gram[..., 0, 1])
    den = zeros.index_add(-1, leaf, weight * gram[..., 1, 1])
    mean = num / den
    m = mean[..., leaf]
    quad = gram[..., 0, 0] - 2 * m * gram[..., 0, 1] + m.square() * gram[..., 1, 1]
    Q = zeros.index_add(-1, leaf, weight * quad)
    N = zeros.index_add(-1, leaf, count.expand_as(quad))
    D = zeros.index_add(-1, leaf, weight * half_logdet)
    # Newton's method on g(t) (module docstring); g'' < 0 everywhere.
    # g'(t) = a e^-t - b - k t, with a, b, k constant in t.
    a = 0.5 * Q
    k = 1 / scale_s**2 + 1 / scale_n**2
    b = (0.5 * N + 2.0 - loc_s / scale_s**2).add_(
        log_ratio - loc_n, alpha=1 / scale_n**2
    )
    t = (Q / N).clamp(min=MIN_OUTPUTSCALE).log()
    for _ in range(NEWTON_STEPS):
        decay = torch.exp(-t).mul_(a)
        t = torch.addcdiv(t, decay - torch.add(b, t, alpha=k), decay + k)
    t = t.clamp(min=math.log(MIN_OUTPUTSCALE))
    # Where the noise floor binds, t follows the ratio: s^2 = lambda e^t.
    bound = math.log(noise_floor) - log_ratio
    binds = bound > t
    t = torch.where(binds, bound, t)
    log_noise = log_ratio + t
    decay = torch.exp(-t)
    z_s, z_n = (t - loc_s) / scale_s, (log_noise - loc_n) / scale_n
    value = -0.5 * Q * decay - 0.5 * N * (t + math.log(2 * math.pi)) - D
    value = value - (t + 0.5 * z_s.square()) - (log_noise + 0.5 * z_n.square())
    # Normalizers of the two log-normal densities.
    value = value - math.log(2 * math.pi * scale_s * scale_n)
    return LeafProfile(value, mean, t, decay, Q, N, z_s, z_n, binds)


class ProfiledLeafObjective(torch.autograd.Function):
    r"""The profiled objective of every leaf from its factors' quadratic forms.

    For ``F`` factors with Gram matrices ``gram`` (``F x 2 x 2``: $y^\top C^{-1}
    y$, $y^\top C^{-1} 1$, $1^\top C^{-1} 1$) and $\tfrac12 \log |C|$ (``half_logdet``,
    ``F``), and the leaves' log noise-to-signal ratios (``log_ratio``, ``L``), sums the
    factors into their leaves, profiles out each leaf's mean $\mu^*$ (generalized least
    squares) and log output scale $t^*$ (Newton's method; module docstring), and returns
    the weighted pseudo-likelihood plus the two profiled log priors (0-dimensional),
    with $\mu^*$ and $t^*$ (``L`` each, not differentiable).

    The backward pass is written out. $\mu^*$ and an interior $t^*$ are stationary
    points, so the value's gradient holds them
    fixed: $\partial / \partial\, \mathrm{gram}_f = -\tfrac12 w_f
    e^{-t_l} (1, -\mu_l)^\top (1, -\mu_l)$ and $\partial / \partial\,
    \mathrm{half\_logdet}_f = -w_f$; where the noise floor binds, $t^* =
    \log s^2_{\min} - \log \lambda_l$ moves with the ratio and is
    differentiated as written. This replaces an autograd graph of some
    sixty small nodes per evaluation.
    """

    @staticmethod
    def forward(
        ctx,
        gram: Tensor,
        half_logdet: Tensor,
        log_ratio: Tensor,
        leaf: Tensor,
        weight: Tensor,
        count: Tensor,
        priors: tuple[float, float, float, float],
        noise_floor: float,
    ) -> tuple[Tensor, Tensor, Tensor]:
        profile = profile_leaves(
            gram, half_logdet, log_ratio, leaf, weight, count, priors, noise_floor
        )
        value = profile.value.sum()
        _, scale_s, _, scale_n = priors
        mean, t, decay = profile.mean, profile.log_scale, profile.decay
        # d value / d log_ratio: the noise prior at fixed t; where the floor
        # binds, log_noise is fixed and t = bound moves by -1 per unit ratio.
        dt = 0.5 * profile.Q * decay - 0.5 * profile.N - 1 - profile.z_s / scale_s
        grad_ratio = torch.where(profile.binds, -dt, -(1 + profile.z_n / scale_n))
        ctx.save_for_backward(leaf, weight, mean, decay, grad_ratio)
        ctx.mark_non_differentiable(mean, t)
        return value, mean, t

    @staticmethod
    def backward(ctx, grad_value: Tensor, grad_mean: Tensor, grad_t: Tensor):
        del grad_mean, grad_t  # not differentiable outputs
        leaf, weight, mean, decay, grad_ratio = ctx.saved_tensors
        m = mean[leaf]
        scale = -0.5 * grad_value * weight * decay[leaf]  # F
        grad_gram = torch.stack([torch.ones_like(m), -m, -m, m.square()], dim=-1).mul_(
            scale.unsqueeze(-1)
        )
        grad_half_logdet = -grad_value * weight
        return (
            grad_gram.view(-1, 2, 2),
            grad_half_logdet,
            grad_value * grad_ratio,
            None,
            None,
            None,
            None,
            None,
        )
