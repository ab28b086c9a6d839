r"""Acquisition over the whole grid from BKTF's posterior samples (Lei & Sun, 2023,
Algorithm 2).

An acquisition here reduces the $K$ posterior samples $F^{(k)}(x)$ at each point to
a score to maximize:

- [`SampleUCB`][treebo.bktf.acquisition.SampleUCB]: Algorithm 2's Bayesian UCB,
  $U(x) + \beta \sqrt{V(x)}$ from the samples' mean $U$ and variance $V$;
- [`SampleQuantile`][treebo.bktf.acquisition.SampleQuantile]: the samples' upper
  quantile (Bayes-UCB);
- [`SampleEI`][treebo.bktf.acquisition.SampleEI]: expected improvement,
  $\frac1K \sum_k \max(F^{(k)}(x) - y^*, 0)$.

[`maximize_over_grid()`][treebo.bktf.acquisition.maximize_over_grid] scores every
point of the grid, streamed in chunks of at most ``max_elements`` sample values, so
memory stays bounded whatever the grid's size. The modes are split into a *tail*
whose rank-wise products $\prod_{d \in \mathrm{tail}} g_d^r$ are formed once
(``K x R x T``) and a *head* enumerated in chunks; each chunk's samples are then one
batched matrix product over the ranks. Cost: $O(K R |S|)$ multiply-adds and
$O(K |S|)$ reductions for $|S|$ grid points.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass

import torch
from torch import Tensor

from treebo.bktf.grid import Grid
from treebo.bktf.sampler import BKTFSamples

#: Default bound on the sample values held at once (128 MiB in float64).
MAX_ELEMENTS = 2**24


class SampleAcquisition(ABC):
    """Reduces posterior samples to scores to maximize."""

    @abstractmethod
    def __call__(self, values: Tensor, best: float) -> Tensor:
        """Scores (``m``) of sample values ``values`` (``K x m``), given the best
        observed value ``best`` on the same scale."""


class MomentAcquisition(SampleAcquisition):
    """An acquisition of the samples' mean and variance only, which the grid
    search then computes without forming the samples."""

    @abstractmethod
    def from_moments(self, mean: Tensor, variance: Tensor, best: float) -> Tensor:
        """Scores (``m``) from the samples' mean and unbiased variance (``m``)."""

    def __call__(self, values: Tensor, best: float) -> Tensor:
        correction = 1 if values.shape[0] > 1 else 0
        variance, mean = torch.var_mean(values, dim=0, correction=correction)
        return self.from_moments(mean, variance, best)


@dataclass(frozen=True)
class SampleUCB(MomentAcquisition):
    r"""$U(x) + \beta \sqrt{V(x)}$ (Algorithm 2 of Lei & Sun (2023)).

    Attributes:
        beta: Weight of the standard deviation ($\ge 0$).

    Example:
        >>> SampleUCB(beta=1.0)(torch.tensor([[0.0, 1.0], [2.0, 1.0]]), best=0.0)
        tensor([2.4142, 1.0000])
    """

    beta: float = 2.0

    def __post_init__(self) -> None:
        if not (isinstance(self.beta, (int, float)) and 0 <= self.beta < math.inf):
            raise ValueError(f"beta must be a finite number >= 0, got {self.beta!r}.")

    def from_moments(self, mean: Tensor, variance: Tensor, best: float) -> Tensor:
        return mean + self.beta * variance.clamp_min(0).sqrt()


@dataclass(frozen=True)
class SampleQuantile(SampleAcquisition):
    """The ``quantile``-th sample quantile (the ``ceil(quantile * K)``-th
    smallest sample): Bayes-UCB.

    Attributes:
        quantile: In ``(0, 1]``.

    Example:
        >>> SampleQuantile(0.75)(torch.arange(8.0).reshape(4, 2), best=0.0)
        tensor([4., 5.])
    """

    quantile: float = 0.9

    def __post_init__(self) -> None:
        q = self.quantile
        if not (isinstance(q, (int, float)) and 0 < q <= 1):
            raise ValueError(f"quantile must be in (0, 1], got {q!r}.")

    def __call__(self, values: Tensor, best: float) -> Tensor:
        k = max(1, math.ceil(self.quantile * values.shape[0]))
        return values.kthvalue(k, dim=0).values


@dataclass(frozen=True)
class SampleEI(SampleAcquisition):
    r"""Expected improvement over the best observed value $y^*$:
    $\frac1K \sum_k \max(F^{(k)}(x) - y^*, 0)$.

    Example:
        >>> SampleEI()(torch.tensor([[0.0, 3.0], [2.0, 1.0]]), best=1.0)
        tensor([0.5000, 1.0000])
    """

    def __call__(self, values: Tensor, best: float) -> Tensor:
        return (values - best).clamp_min(0).mean(0)


def grid_scores(
    samples: BKTFSamples,
    grid: Grid,
    acquisition: SampleAcquisition,
    best: float,
    max_elements: int = MAX_ELEMENTS,
) -> Iterator[tuple[int, Tensor]]:
    r"""Yield ``(start, scores)``: the scores of consecutive flat grid indices
    ``start, start + 1, ...``, chunk by chunk (module docstring).

    A [`MomentAcquisition`][treebo.bktf.acquisition.MomentAcquisition] gets the
    samples' mean and variance as two matrix products over samples and ranks
    ($\sum_k F^{(k)}$ and $\sum_k (F^{(k)})^2$, the latter of rank $K R^2$), never
    the ``K`` sample values themselves.
    """
    if isinstance(max_elements, bool) or not isinstance(max_elements, int):
        raise ValueError(f"max_elements must be an integer >= 1, got {max_elements!r}.")
    if max_elements < 1:
        raise ValueError(f"max_elements must be an integer >= 1, got {max_elements}.")
    K, R = samples.weights.shape
    moments = isinstance(acquisition, MomentAcquisition)
    width = K * R * R if moments else K  # tail values held per tail point
    sizes = grid.sizes
    split = grid.dim
    while split > 0 and width * math.prod(sizes[split - 1 :]) <= max_elements:
        split -= 1
    T = math.prod(sizes[split:])
    tail = samples.weights.unsqueeze(-1)  # K x R x 1, then K x R x T
    for d in range(split, grid.dim):
        tail = (tail.unsqueeze(-1) * samples.factors[d].unsqueeze(-2)).flatten(-2)
    if moments:
        tail_1 = tail.reshape(K * R, T)
        tail_2 = (tail.unsqueeze(1) * tail.unsqueeze(2)).reshape(K * R * R, T)
        rows = max(1, max_elements // (K * R * R + T))
    else:
        rows = max(1, max_elements // (K * T))
    head_sizes = sizes[:split]
    device = samples.weights.device
    for h0 in range(0, math.prod(head_sizes), rows):
        flat = torch.arange(h0, min(h0 + rows, math.prod(head_sizes)), device=device)
        head = torch.ones(K, R, flat.numel(), dtype=tail.dtype, device=device)
        for d, index in enumerate(_unflatten(flat, head_sizes)):
            head = head * samples.factors[d][..., index]  # K x R x m
        if moments:
            m = flat.numel()
            mean = head.permute(2, 0, 1).reshape(m, K * R) @ tail_1 / K
            square = (head.unsqueeze(1) * head.unsqueeze(2)).permute(3, 0, 1, 2)
            second = square.reshape(m, K * R * R) @ tail_2 / K
            variance = (second - mean.square()) * (K / max(K - 1, 1))
            scores = acquisition.from_moments(mean.flatten(), variance.flatten(), best)
        else:
            scores = acquisition((head.transpose(-1, -2) @ tail).flatten(-2), best)
        yield h0 * T, scores


def _unflatten(flat: Tensor, sizes: tuple[int, ...]) -> list[Tensor]:
    """Per-mode indices of row-major flat indices over ``sizes``."""
    out = []
    for d in range(len(sizes)):
        stride = math.prod(sizes[d + 1 :])
        out.append(flat.div(stride, rounding_mode="floor") % sizes[d])
    return out


def maximize_over_grid(
    samples: BKTFSamples,
    grid: Grid,
    acquisition: SampleAcquisition,
    best: float,
    exclude: Tensor | None = None,
    max_elements: int = MAX_ELEMENTS,
) -> tuple[int, float]:
    """The flat index and score of the grid point of highest score, leaving out
    the flat indices ``exclude`` (evaluated or pending points).

    Args:
        samples: BKTF's posterior samples.
        grid: Their grid.
        acquisition: How samples become scores.
        best: The best observed value, on the samples' scale.
        exclude: Flat indices to leave out.
        max_elements: Most sample values (or moment terms) held at once.

    Ties go to the lowest flat index.

    Raises:
        ValueError: If every grid point is excluded.

    Example:
        >>> from treebo.bktf.sampler import BKTFSamples
        >>> grid = Grid([torch.arange(3.0), torch.arange(2.0)])
        >>> samples = BKTFSamples([torch.tensor([[[0.0, 1.0, 2.0]]]),
        ...                        torch.tensor([[[1.0, 1.0]]])],
        ...                       torch.zeros(1, 1, 2), torch.ones(1, 1),
        ...                       torch.ones(1))
        >>> maximize_over_grid(samples, grid, SampleUCB(), best=0.0,
        ...                    exclude=torch.tensor([4]))
        (5, 2.0)
    """
    device = samples.weights.device
    exclude = (
        torch.empty(0, dtype=torch.long, device=device)
        if exclude is None
        else exclude.to(device=device, dtype=torch.long)
    )
    best_index, best_score = -1, -math.inf
    for start, scores in grid_scores(samples, grid, acquisition, best, max_elements):
        local = exclude[(exclude >= start) & (exclude < start + scores.numel())]
        scores = scores.index_fill(0, local - start, -math.inf)
        score, i = scores.max(0)
        if float(score) > best_score:
            best_index, best_score = start + int(i), float(score)
    if best_index < 0:
        raise ValueError("every grid point is excluded (evaluated or pending).")
    return best_index, best_score
