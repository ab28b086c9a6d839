"""Far-out scores: the rows the loop raised to Tukey's outer fence."""

from __future__ import annotations

import torch

from treebo.loop.outcomes import raise_far_out
from treebo.strategies.far_out import far_out_rows


def test_far_out_rows_are_the_rows_the_loop_raised_to_the_fence():
    values = torch.tensor([0.3, 0.1, -0.2, 0.4, 0.0, 0.2, -1e300, -50.0])
    raised = raise_far_out(values)
    y = ((raised - raised.mean()) / raised.std()).unsqueeze(-1)
    rows = far_out_rows(y, torch.zeros(8, dtype=torch.bool))
    assert rows.tolist() == (raised != values).tolist()
    failed = torch.tensor([False] * 6 + [True, False])
    assert far_out_rows(y, failed).tolist() == [False] * 7 + [True]
    assert not far_out_rows(y[:3], failed[:3]).any()  # too few to tell
    assert not far_out_rows(torch.ones(6, 1), torch.zeros(6, dtype=torch.bool)).any()
