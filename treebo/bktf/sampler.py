r"""The Gibbs sampler of BKTF (Lei & Sun, 2023, Algorithm 2's inner loop).

A sweep visits each mode $d$ in turn: it slice-samples the mode's $R$ log
length-scales jointly from their posterior with all of the mode's factors
integrated out ([`mode_log_marginal()`][treebo.bktf.conditionals.mode_log_marginal]),
then draws the factors $g_d^{1:R}$ from their Gaussian conditional
([`sample_mode_factors()`][treebo.bktf.conditionals.sample_mode_factors]). It then
draws the weights $\lambda$ and the noise precision $\tau$. ``C`` chains run as one
batch. The first ``burn_in`` sweeps are discarded and every ``thin``-th later one is
kept.

The slice sampler is Neal's (2003, Sec. 5.1) hyper-rectangle version, shrinking
towards the current point: exact for any number of ranks, with no tuning beyond
the initial box width.

Example:
    >>> import torch
    >>> from treebo.bktf.grid import Grid
    >>> grid = Grid([torch.linspace(0, 1, 5), torch.linspace(0, 1, 4)])
    >>> data = BKTFData(grid, torch.tensor([[0, 1], [4, 3], [2, 2]]),
    ...                 torch.tensor([0.5, -1.0, 0.3], dtype=torch.float64))
    >>> samples = run_gibbs(data, rank=2, num_sweeps=20, burn_in=10, seed=0)
    >>> samples.weights.shape, samples.factors[0].shape
    (torch.Size([10, 2]), torch.Size([10, 2, 5]))
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from treebo.bktf.conditionals import (
    BKTFData,
    BKTFPrior,
    BKTFState,
    log_lengthscale_prior,
    mode_log_marginal,
    mode_weights,
    sample_mode_factors,
    sample_precision,
    sample_weights,
)

#: Shrinking steps after which a chain's slice update keeps its current point.
MAX_SLICE_STEPS = 100


@dataclass
class BKTFSamples:
    """Kept states of every chain, chains and sweeps merged into ``K`` samples.

    Attributes:
        factors: Per mode, ``K x R x S_d``.
        log_lengthscale: ``K x R x D``.
        weights: ``K x R``.
        precision: ``K``.
    """

    factors: list[Tensor]
    log_lengthscale: Tensor
    weights: Tensor
    precision: Tensor

    @property
    def num_samples(self) -> int:
        return self.weights.shape[0]

    def values(self, index: Tensor) -> Tensor:
        r"""$f$ of every sample at multi-indices ``index`` (``... x D``):
        ``K x ...``."""
        flat = index.reshape(-1, index.shape[-1])
        prod = self.weights.unsqueeze(-1)
        for d, factor in enumerate(self.factors):
            prod = prod * factor[..., flat[:, d]]
        return prod.sum(-2).reshape(-1, *index.shape[:-1])


def slice_sample_box(
    log_density: Callable[[Tensor], Tensor],
    x: Tensor,
    log_density_x: Tensor,
    width: float,
) -> Tensor:
    """One hyper-rectangle slice-sampling update of ``C`` independent chains.

    Args:
        log_density: Maps ``C x k`` points to their ``C`` log densities.
        x: ``C x k`` current points.
        log_density_x: ``C`` log densities at ``x``.
        width: Edge of the initial box, placed at random around ``x``.

    Returns:
        ``C x k`` new points (a chain that has not accepted after
        ``MAX_SLICE_STEPS`` shrinkings keeps its point).
    """
    level = log_density_x - torch.empty_like(log_density_x).exponential_()
    lower = x - width * torch.rand_like(x)
    upper = lower + width
    out = x.clone()
    pending = torch.ones_like(log_density_x, dtype=torch.bool)
    for _ in range(MAX_SLICE_STEPS):
        proposal = lower + (upper - lower) * torch.rand_like(x)
        accept = pending & (log_density(proposal) > level)
        out = torch.where(accept.unsqueeze(-1), proposal, out)
        pending = pending & ~accept
        if not bool(pending.any()):
            break
        below = proposal < x
        shrink = pending.unsqueeze(-1)
        lower = torch.where(shrink & below, proposal, lower)
        upper = torch.where(shrink & ~below, proposal, upper)
    return out


def initial_state(
    data: BKTFData, rank: int, chains: int, prior: BKTFPrior
) -> BKTFState:
    """Prior draws of the factors and weights, length-scales at the prior's
    median and unit noise precision (draws from the global generator)."""
    y = data.y
    log_l = torch.full(
        (chains, rank, data.grid.dim),
        prior.lengthscale_loc,
        dtype=y.dtype,
        device=y.device,
    )
    factors = []
    for d, unit in enumerate(data.unit):
        K = data.grid_kernel(d, log_l[..., d])
        z = torch.randn(chains, rank, unit.numel(), 1, dtype=y.dtype, device=y.device)
        factors.append((torch.linalg.cholesky(K) @ z).squeeze(-1))
    return BKTFState(
        factors=factors,
        log_lengthscale=log_l,
        weights=torch.randn(chains, rank, dtype=y.dtype, device=y.device),
        precision=torch.ones(chains, dtype=y.dtype, device=y.device),
    )


def gibbs_sweep(
    state: BKTFState, data: BKTFData, prior: BKTFPrior, slice_width: float = 2.0
) -> BKTFState:
    """One sweep over every mode, then the weights and the noise precision
    (updates ``state`` in place and returns it)."""
    C, R = state.weights.shape
    for d in range(data.grid.dim):
        w = mode_weights(state, data, d)
        if not data.grid.categorical[d]:

            def log_density(log_l: Tensor, d: int = d, w: Tensor = w) -> Tensor:
                return mode_log_marginal(
                    state, data, d, log_l, w
                ) + log_lengthscale_prior(log_l, prior)

            current = state.log_lengthscale[..., d]
            new = slice_sample_box(
                log_density, current, log_density(current), slice_width
            )
            state.log_lengthscale = state.log_lengthscale.clone()
            state.log_lengthscale[..., d] = new
        z = torch.randn_like(state.factors[d])
        eps = torch.randn(C, data.n, dtype=data.y.dtype, device=data.y.device)
        state.factors[d] = sample_mode_factors(state, data, d, z, eps, w)
    state.weights = sample_weights(state, data, torch.randn_like(state.weights))
    state.precision = sample_precision(state, data, prior)
    return state


def run_gibbs(
    data: BKTFData,
    rank: int,
    num_sweeps: int,
    burn_in: int,
    *,
    chains: int = 1,
    thin: int = 1,
    prior: BKTFPrior | None = None,
    seed: int = 0,
) -> BKTFSamples:
    """Run ``chains`` chains for ``num_sweeps`` sweeps and keep every ``thin``-th
    sweep after ``burn_in``.

    The draws come from torch's global generators (CPU, and the data's CUDA
    device), seeded with ``seed`` inside ``torch.random.fork_rng``, which puts
    their states back afterwards: the same seed gives the same samples and the
    caller's random stream is left as it was.

    Raises:
        ValueError: If ``burn_in >= num_sweeps`` or a count is not positive.
    """
    for name, value in (("rank", rank), ("chains", chains), ("thin", thin)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}.")
    if not 0 <= burn_in < num_sweeps:
        raise ValueError(
            f"need 0 <= burn_in < num_sweeps, got burn_in={burn_in}, "
            f"num_sweeps={num_sweeps}."
        )
    prior = BKTFPrior() if prior is None else prior
    device = data.y.device
    devices = [device] if device.type == "cuda" else []
    kept: list[BKTFState] = []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        state = initial_state(data, rank, chains, prior)
        for sweep in range(num_sweeps):
            state = gibbs_sweep(state, data, prior)
            if sweep >= burn_in and (sweep - burn_in) % thin == 0:
                kept.append(
                    BKTFState(
                        list(state.factors),
                        state.log_lengthscale,
                        state.weights,
                        state.precision,
                    )
                )
    return BKTFSamples(
        factors=[torch.cat([s.factors[d] for s in kept]) for d in range(data.grid.dim)],
        log_lengthscale=torch.cat([s.log_lengthscale for s in kept]),
        weights=torch.cat([s.weights for s in kept]),
        precision=torch.cat([s.precision for s in kept]),
    )
