"""epsilon-greedy Add-Tree BO: a random proposal with probability epsilon.

De Ath et al. (2021, "Greed is good: exploration and exploitation
trade-offs in Bayesian optimisation", ACM TELO) found that replacing a
fraction :math:`\\epsilon` of the proposals of a greedy GP loop by uniformly
random ones holds up where the model is confidently wrong. Here it measures
how much of treebo's loss on HPO-B comes from such traps (a plateau that the
model takes for the whole surface); it is an experiment, not a package
option.

Example:
    >>> strategy = EpsilonGreedy(epsilon=0.1)
    >>> strategy.epsilon
    0.1
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from treebo.add_tree import AddTreeStrategy
from treebo.strategies.base import Observations, Proposal


class EpsilonGreedy(AddTreeStrategy):
    """The Add-Tree loop whose proposal is, with probability ``epsilon``, a
    uniformly random configuration (a random row of a pool).

    The coin and the random proposal are drawn from the proposal's seed
    (``Observations.seed``), so a run replays exactly.

    Args:
        options: As for :class:`~treebo.add_tree.AddTreeStrategy`.
        epsilon: The probability of a random proposal, in ``[0, 1]``.
        **parts: The strategy's parts (``fit=`` ...).
    """

    name = "add_tree_epsilon_greedy"

    def __init__(self, options: Any = None, epsilon: float = 0.1, **parts: Any) -> None:
        if not 0.0 <= epsilon <= 1.0:
            raise ValueError(f"epsilon must be in [0, 1], got {epsilon!r}.")
        super().__init__(options, **parts)
        self.epsilon = epsilon

    def _coin(self, observations: Observations) -> torch.Generator | None:
        """A generator for a random proposal, or ``None`` for a greedy one."""
        generator = torch.Generator().manual_seed(observations.seed + 7_777_777)
        heads = float(torch.rand((), generator=generator)) < self.epsilon
        return generator if heads else None

    def propose(self, observations: Observations) -> Proposal:
        generator = self._coin(observations)
        if generator is None:
            return super().propose(observations)
        seed = int(torch.randint(2**31 - 1, (), generator=generator))
        x = observations.space.sample(1, seed=seed)[0].to(observations.X)
        return Proposal(x, "random")

    def propose_from(self, observations: Observations, candidates: Tensor) -> Proposal:
        generator = self._coin(observations)
        if generator is None:
            return super().propose_from(observations, candidates)
        index = int(torch.randint(candidates.shape[0], (), generator=generator))
        return Proposal(candidates[index], "random")
