"""A strategy stub for the loop's tests."""

from __future__ import annotations

from treebo.strategies import Observations, Proposal, Strategy


class Greedy(Strategy):
    """Proposes the incumbent: no acquisition, no pending points."""

    name = "greedy"
    options_type = type(None)

    def propose(self, observations: Observations) -> Proposal:
        return Proposal(observations.incumbent, "bo")
