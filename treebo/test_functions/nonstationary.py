r"""Non-stationary test functions (Assael et al.'s (2014) synthetic problems).

**RKHS** (P6; Assael et al., after Wang et al. 2014): on $[0, 1]$,

$$
f(x) = \sum_{i} a_i e^{-(x - s_i)^2 / (2 \cdot 0.1^2)}
    + \sum_{j} b_j e^{-(x - t_j)^2 / (2 \cdot 0.01^2)},
$$

smooth on the left (five wide bumps), jagged on the right (fourteen narrow ones). Paper
003 maximizes it; here it is minimized as $-f$, with minimum $-5.73839$ at
$x \approx 0.89235$.

**2-D Exp** (P7; Gramacy, 2005): $f(x) = x_1 e^{-x_1^2 - x_2^2}$ on $[-2, 6]^2$, flat
over most of the box with one small dip of depth $-e^{-1/2}/\sqrt 2 \approx -0.428882$
at $(-1/\sqrt 2, 0)$.

Example:
    >>> import torch
    >>> f = RKHS()
    >>> round(float(f(torch.tensor([[0.89235]], dtype=torch.float64))), 4)
    -5.7384
"""

from __future__ import annotations

import math
from typing import Any

import torch
from botorch.test_functions.synthetic import SyntheticTestFunction
from torch import Tensor

_WIDE_CENTRES = (0.1, 0.15, 0.08, 0.3, 0.4)
_WIDE_WEIGHTS = (4.0, -1.0, 2.0, -2.0, 1.0)
_NARROW_CENTRES = (
    0.8, 0.85, 0.9, 0.95, 0.92, 0.74, 0.91, 0.89, 0.79, 0.88, 0.86, 0.96, 0.99, 0.82
)  # fmt: skip
_NARROW_WEIGHTS = (3, 4, 2, 1, -1, 2, 2, 3, 3, 2, -1, -2, 4, -3)


class RKHS(SyntheticTestFunction):
    """Paper 003's RKHS function on ``[0, 1]``, negated (minimized)."""

    dim = 1
    continuous_inds = [0]
    _optimal_value = -5.738393747098736
    _optimizers = [(0.892359750808664,)]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(bounds=[(0.0, 1.0)], **kwargs)
        for name, values in (
            ("wide_centres", _WIDE_CENTRES),
            ("wide_weights", _WIDE_WEIGHTS),
            ("narrow_centres", _NARROW_CENTRES),
            ("narrow_weights", _NARROW_WEIGHTS),
        ):
            self.register_buffer(name, torch.tensor(values, dtype=torch.float64))

    def _evaluate_true(self, X: Tensor) -> Tensor:
        x = X[..., :1]
        wide = self.wide_weights.to(X) * torch.exp(
            -(x - self.wide_centres.to(X)).square() / (2 * 0.1**2)
        )
        narrow = self.narrow_weights.to(X) * torch.exp(
            -(x - self.narrow_centres.to(X)).square() / (2 * 0.01**2)
        )
        return -(wide.sum(-1) + narrow.sum(-1))


class Exp2D(SyntheticTestFunction):
    r"""Gramacy's 2-D exponential function on ``[-2, 6]^2`` (minimized)."""

    dim = 2
    continuous_inds = [0, 1]
    _optimal_value = -math.exp(-0.5) / math.sqrt(2)
    _optimizers = [(-1 / math.sqrt(2), 0.0)]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(bounds=[(-2.0, 6.0), (-2.0, 6.0)], **kwargs)

    def _evaluate_true(self, X: Tensor) -> Tensor:
        x1, x2 = X[..., 0], X[..., 1]
        return x1 * torch.exp(-x1.square() - x2.square())
