r"""[`BKTF`][treebo.bktf.model.BKTF]: Bayesian kernelized tensor factorization as a
BoTorch model (Lei & Sun, 2023).

The model holds observations on a [`Grid`][treebo.bktf.grid.Grid]; ``fit()`` runs the
Gibbs sampler ([`run_gibbs()`][treebo.bktf.sampler.run_gibbs]) on the standardized
outcomes and keeps its samples; ``posterior(X)`` is then the ensemble of the kept
samples' $f$ at the grid points ``X``
(`botorch.posteriors.ensemble.EnsemblePosterior`), on the outcomes' scale. The model
is defined on its grid only: a point off the grid is refused with the nearest grid
value named (``model.grid.snap(X)`` moves points onto it).
"""

from __future__ import annotations

from typing import Any

import torch
from botorch.acquisition.objective import PosteriorTransform
from botorch.models.model import Model
from botorch.posteriors.ensemble import EnsemblePosterior
from torch import Tensor

from treebo.bktf.conditionals import BKTFData, BKTFPrior
from treebo.bktf.grid import Grid
from treebo.bktf.sampler import BKTFSamples, run_gibbs


class BKTFPosterior(EnsemblePosterior):
    """The ensemble of BKTF's posterior samples, with their empirical
    quantiles.

    Example:
        >>> post = BKTFPosterior(torch.arange(5.0).reshape(5, 1, 1))
        >>> post.quantile(torch.tensor([0.5, 1.0])).flatten()
        tensor([2., 4.])
    """

    def quantile(self, value: Tensor) -> Tensor:
        """Sample quantiles at levels ``value`` (``k``), linearly interpolated:
        ``k x (batch) x q x 1``."""
        return torch.quantile(self.values, value.to(self.values), dim=-3)


class BKTF(Model):
    r"""Bayesian kernelized tensor factorization on a grid.

    $f(x) = \sum_{r=1}^R \lambda_r \prod_{d=1}^D g_d^r(x_d)$ with GP priors on the
    factors $g_d^r$, Gaussian noise, and every parameter sampled by MCMC
    ([`treebo.bktf.conditionals`][treebo.bktf.conditionals]).

    Args:
        train_X: ``n x D`` observed points, each on ``grid``.
        train_Y: ``n x 1`` observed values.
        grid: The grid.
        rank: $R$.
        prior: Hyper-priors (default:
            [`BKTFPrior()`][treebo.bktf.conditionals.BKTFPrior]).

    Raises:
        ValueError: On shapes that do not match, values that are not finite, or a
            point off the grid.

    Example:
        >>> import torch
        >>> grid = Grid([torch.linspace(0, 1, 6, dtype=torch.float64)] * 2)
        >>> X = grid.points(torch.tensor([[0, 0], [5, 2], [2, 4], [3, 1]]))
        >>> model = BKTF(X, (X.sum(-1, keepdim=True) - 1).sin(), grid, rank=2)
        >>> samples = model.fit(num_sweeps=40, burn_in=20, seed=0)
        >>> model.posterior(grid.points(torch.tensor([[1, 1]]))).mean.shape
        torch.Size([1, 1])
    """

    num_outputs = 1

    def __init__(
        self,
        train_X: Tensor,
        train_Y: Tensor,
        grid: Grid,
        rank: int = 2,
        prior: BKTFPrior | None = None,
    ) -> None:
        super().__init__()
        if train_X.dim() != 2 or train_Y.shape != (train_X.shape[0], 1):
            raise ValueError(
                "train_X must be n x D and train_Y n x 1, got shapes "
                f"{tuple(train_X.shape)} and {tuple(train_Y.shape)}."
            )
        if train_X.shape[0] == 0:
            raise ValueError("train_X holds no observation.")
        if not bool(train_Y.isfinite().all()):
            raise ValueError("train_Y holds values that are not finite.")
        if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
            raise ValueError(f"rank must be an integer >= 1, got {rank!r}.")
        self.grid = grid
        self.rank = rank
        self.prior = BKTFPrior() if prior is None else prior
        self.train_inputs = (train_X,)
        self.train_targets = train_Y.squeeze(-1)
        y = self.train_targets
        self.y_mean = y.mean()
        self.y_std = y.std() if y.numel() > 1 else torch.ones_like(self.y_mean)
        if float(self.y_std) <= 0:
            self.y_std = torch.ones_like(self.y_mean)
        self.data = BKTFData(
            grid, grid.indices(train_X), (y - self.y_mean) / self.y_std
        )
        self.samples: BKTFSamples | None = None

    def fit(
        self,
        num_sweeps: int = 1000,
        burn_in: int = 600,
        chains: int = 1,
        thin: int = 1,
        seed: int = 0,
    ) -> BKTFSamples:
        """Run the Gibbs sampler and keep its samples (Lei & Sun, 2023, Sec. 7.3.2's
        counts by default: 1000 sweeps, the first 600 discarded).

        Returns:
            The kept samples, on the standardized scale (also stored as
            ``self.samples``).
        """
        self.samples = run_gibbs(
            self.data,
            self.rank,
            num_sweeps,
            burn_in,
            chains=chains,
            thin=thin,
            prior=self.prior,
            seed=seed,
        )
        return self.samples

    @property
    def fitted_samples(self) -> BKTFSamples:
        """The kept samples.

        Raises:
            RuntimeError: Before ``fit()``.
        """
        if self.samples is None:
            raise RuntimeError("BKTF has no samples yet: call fit() first.")
        return self.samples

    def sample_values(self, X: Tensor) -> Tensor:
        """``K x ...``: every sample's $f$ at grid points ``X`` (``... x D``), on
        the outcomes' scale."""
        samples = self.fitted_samples
        values = samples.values(self.grid.indices(X))
        return self.y_mean + self.y_std * values

    def posterior(
        self,
        X: Tensor,
        output_indices: list[int] | None = None,
        observation_noise: bool | Tensor = False,
        posterior_transform: PosteriorTransform | None = None,
        **kwargs: Any,
    ) -> BKTFPosterior:
        """The ensemble of the kept samples at grid points ``X``
        (``(batch) x q x D``): values ``(batch) x K x q x 1``, with their mean,
        variance and quantiles.

        With ``observation_noise=True`` each sample adds its own Gaussian noise
        (variance $1 / \\tau$), drawn from the global torch generator.

        Raises:
            ValueError: If a point of ``X`` is off the grid.
            RuntimeError: Before ``fit()``.
        """
        if output_indices not in (None, [0]):
            raise ValueError(
                f"BKTF has one output, got output_indices={output_indices}."
            )
        values = self.sample_values(X)  # K x (batch) x q
        if observation_noise is True:
            tau = self.fitted_samples.precision
            sd = (self.y_std / tau.sqrt()).reshape(-1, *[1] * (values.dim() - 1))
            values = values + sd * torch.randn_like(values)
        elif observation_noise is not False:
            raise ValueError("BKTF takes observation_noise as a bool.")
        posterior = BKTFPosterior(values.movedim(0, -2).unsqueeze(-1))
        if posterior_transform is not None:
            return posterior_transform(posterior)
        return posterior
