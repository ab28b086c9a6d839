"""The discrete-continuous optimizer on spaces with many paths."""

from __future__ import annotations

import time

import pytest
import torch
from botorch.acquisition import AcquisitionFunction

from treebo import Categorical, Choice, Integer, Real, TreeSpace, Vertex
from treebo.optim import NeighbourTable, optimize_acqf_mixed_tree
from treebo.optim.mixed import lists_paths


class FlagAcquisition(AcquisitionFunction):
    """A test acquisition with a unique best setting of every flag.

    Flag ``i`` on (when ``target[i]``) earns ``1 - (w_i - 0.6)^2`` through the
    real ``w_i`` it activates; on when it should be off costs 1; off when it
    should be off earns 0.5. Plus ``-(x - 0.3)^2 - (n - 7)^2 / 10`` at the root.
    """

    def __init__(self, space: TreeSpace, target: list[int]) -> None:
        super().__init__(model=None)
        self.space, self.target = space, torch.tensor(target, dtype=torch.bool)
        k = len(target)
        self.f = [space.columns[f"f{i}"].column for i in range(k)]
        self.w = [space.columns[f"w{i}"].column for i in range(k)]
        self.x, self.n = space.columns["x"].column, space.columns["n"].column

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        x = X.squeeze(-2)
        on = x[..., self.f] == 1
        w = x[..., self.w]
        earn = torch.where(
            self.target,
            torch.where(on, 1.0 - (w - 0.6) ** 2, torch.zeros_like(w)),
            torch.where(on, -torch.ones_like(w), torch.full_like(w, 0.5)),
        )
        root = -((x[..., self.x] - 0.3) ** 2) - (x[..., self.n] - 7) ** 2 / 10
        return earn.sum(-1) + root


def flag_space(k: int) -> TreeSpace:
    return TreeSpace(
        Vertex(
            [Real("x", 0, 1), Integer("n", 1, 20)],
            [
                Choice(f"f{i}", {0: Vertex(), 1: Vertex([Real(f"w{i}", 0, 1)])})
                for i in range(k)
            ],
        )
    )


@pytest.mark.parametrize("seed", [0, 1])
def test_finds_the_unique_maximizer_over_two_to_the_fourteen_paths(seed):
    k = 14
    space = flag_space(k)
    assert space.num_paths == 2**k and not lists_paths(space)
    target = [
        int(b)
        for b in torch.randint(2, (k,), generator=torch.Generator().manual_seed(seed))
    ]
    acqf = FlagAcquisition(space, target)
    t0 = time.perf_counter()
    result = optimize_acqf_mixed_tree(acqf, space, seed=seed)
    elapsed = time.perf_counter() - t0
    config = space.to_dict(result.candidate[0])
    assert [config[f"f{i}"] for i in range(k)] == target
    assert config["n"] == 7 and abs(config["x"] - 0.3) < 1e-4
    for i in range(k):
        assert (f"w{i}" in config) == bool(target[i])
        if target[i]:
            assert abs(config[f"w{i}"] - 0.6) < 1e-4
    best = sum(1.0 if t else 0.5 for t in target)
    assert float(result.value) == pytest.approx(best, abs=1e-6)
    assert result.path is None and elapsed < 30


def test_neighbours_change_one_active_discrete_column():
    space = TreeSpace(
        Vertex(
            [Integer("n", 1, 100, log_scale=True), Categorical("c", ["a", "b", "c"])],
            [Choice("b", {"on": Vertex([Integer("m", 0, 3)]), "off": Vertex()})],
        )
    )
    table = NeighbourTable(space)
    # 3 labels of c, 2 of b, and +-1 for each of the two integers.
    assert table.size == 3 + 2 + 4
    x = space.to_tensor({"n": 10, "c": "b", "b": "off"}).unsqueeze(0)
    N, valid = table.neighbours(space, x)
    moved = [space.to_dict(row) for row in N[0][valid[0]]]
    expected = [
        {"n": 10, "c": "a", "b": "off"},
        {"n": 10, "c": "c", "b": "off"},
        {"n": 10, "c": "b", "b": "on", "m": 0},
        {"n": 11, "c": "b", "b": "off"},
        {"n": 9, "c": "b", "b": "off"},
    ]
    assert moved == expected  # m is inactive: no +-1 moves for it


def test_bad_arguments_are_named():
    space = flag_space(2)
    acqf = FlagAcquisition(space, [1, 0])
    with pytest.raises(ValueError, match="max_rounds"):
        optimize_acqf_mixed_tree(acqf, space, max_rounds=0)
    with pytest.raises(ValueError, match="num_restarts"):
        optimize_acqf_mixed_tree(acqf, space, num_restarts=8, raw_samples=4)
