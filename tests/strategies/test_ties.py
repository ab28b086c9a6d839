"""The exploring step after a tie with the best score."""

from __future__ import annotations

import torch

from treebo import TreeOptimizer
from treebo.add_tree import AddTreeOptions, AddTreeStrategy, LogEISearch
from treebo.space import Choice, Real, TreeSpace, Vertex
from treebo.strategies.ties import ties_the_best


def test_a_tie_is_an_exact_repeat_of_the_best_earlier_score():
    failed = torch.zeros(4, dtype=torch.bool)
    y = torch.tensor([[0.1], [0.9], [0.3], [0.9]], dtype=torch.float64)
    assert ties_the_best(y, failed)
    assert not ties_the_best(y[:3], failed[:3])  # below the best
    near = torch.tensor([[0.1], [0.9], [0.9 + 1e-12]], dtype=torch.float64)
    assert not ties_the_best(near, failed[:3])
    assert not ties_the_best(y, torch.tensor([False, False, False, True]))
    assert not ties_the_best(y, torch.tensor([False, True, False, False]))
    assert not ties_the_best(y[:1], failed[:1])


def plateau_pool() -> tuple[TreeSpace, torch.Tensor, torch.Tensor]:
    """A pool whose scores tie on two levels except for a few rows: 0.86 on most of
    branch "a", 0.66 elsewhere, 1.0 on 1 % of the rows in a corner of branch "b"."""
    space = TreeSpace(
        Vertex(
            [Real("x", 0.0, 1.0)],
            [
                Choice(
                    "branch",
                    {"a": Vertex([Real("u", 0, 1)]), "b": Vertex([Real("v", 0, 1)])},
                )
            ],
        )
    )
    pool = space.sample(400, seed=0)
    configs = space.to_dicts(pool)
    values = []
    for c in configs:
        if c["branch"] == "a":
            values.append(0.86 if c["x"] > 0.2 else 0.66)
        else:
            values.append(1.0 if c["x"] > 0.9 and c["v"] > 0.8 else 0.66)
    return space, pool, torch.tensor(values, dtype=torch.float64)


def tied_share(strategy: AddTreeStrategy, seed: int = 0, budget: int = 20) -> float:
    """The share of model-based trials whose value ties the best so far."""
    space, pool, values = plateau_pool()
    opt = TreeOptimizer(space, strategy=strategy, maximize=True, n_initial=5, seed=seed)
    best, ties, proposals = -1.0, 0, 0
    for _ in range(budget):
        params = opt.ask(candidates=pool)
        row = int((pool - space.to_tensor([params])).abs().amax(-1).argmin())
        value = float(values[row])
        if len(opt.history) >= 5:
            proposals += 1
            ties += value == best
        best = max(best, value)
        opt.tell(params, value)
    return ties / proposals


#: One kernel, few optimizer starts: the test is about the proposals' kinds.
FAST = AddTreeOptions(alternative_kernels=(), num_restarts=2, raw_samples=32)


def never(observations) -> bool:
    return False


def test_the_loop_spends_a_bounded_share_of_its_trials_on_ties():
    # Plain LogEI stays on the 0.86 plateau; the exploring steps leave it.
    plain = AddTreeStrategy(FAST, search=LogEISearch(2, 32), explore=never)
    assert tied_share(plain) > 0.8
    assert tied_share(AddTreeStrategy(FAST)) <= 0.6


def test_the_per_leaf_families_explore_after_a_tie_too():
    space, pool, values = plateau_pool()
    opt = TreeOptimizer(
        space, strategy="independent", maximize=True, n_initial=4, seed=0
    )
    configs = space.to_dicts(pool[:4])
    for config, value in zip(configs, [0.66, 0.86, 0.66, 0.86], strict=True):
        opt.tell(config, value)  # the last one ties the best
    opt.ask()
    assert opt.pending and opt.strategy.last_model is not None
    params = opt.pending[0]
    assert opt.tell(params, 0.5).kind == "explore"
    opt.tell(opt.ask(), 0.1)  # no tie before this proposal: expected improvement
    assert opt.history[-1].kind == "bo"
