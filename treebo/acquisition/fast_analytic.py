r"""Analytic acquisition functions on :class:`~treebo.models.AddTreeGP`'s fast path.

BoTorch's analytic acquisition functions read the posterior through GPyTorch's
prediction strategy; for small data sets its per-call overhead dominates
acquisition optimization. These subclasses compute the same moments with
:meth:`AddTreeGP.posterior_mean_variance` (one cached Cholesky factor), and are
otherwise BoTorch's own.
"""

from __future__ import annotations

from botorch.acquisition import LogExpectedImprovement
from torch import Tensor

from treebo.models.add_tree_gp import AddTreeGP


class AddTreeLogEI(LogExpectedImprovement):
    r"""``LogExpectedImprovement`` for an :class:`AddTreeGP`, same values, faster.

    Args:
        model: A fitted single-outcome :class:`AddTreeGP` in eval mode.
        best_f: The incumbent (scalar or ``b`` tensor), on the outcome scale.
        maximize: Whether the problem is a maximization.
    """

    def __init__(
        self, model: AddTreeGP, best_f: float | Tensor, maximize: bool = True
    ) -> None:
        if not isinstance(model, AddTreeGP):
            raise TypeError(
                f"AddTreeLogEI needs an AddTreeGP, got {type(model).__name__}."
            )
        super().__init__(model=model, best_f=best_f, maximize=maximize)

    def _mean_and_sigma(
        self, X: Tensor, compute_sigma: bool = True, min_var: float = 1e-12
    ) -> tuple[Tensor, Tensor | None]:
        mean, var = self.model.posterior_mean_variance(X)  # b x 1
        if not compute_sigma:
            return mean, None
        return mean, var.clamp_min(min_var).sqrt()
