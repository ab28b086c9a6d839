"""The honesty report and the q-batch table read what the records say."""

from __future__ import annotations

import math

from benchmarks.honest_noise import report
from benchmarks.perf.parallel_workers import batch_table


def row(seed, budget, error, covered, below, ratio, method="treebo"):
    return {"method": method, "seed": seed, "budget": budget,
            "error_in_noise_sd": error, "covered": covered, "below_minimum": below,
            "noise_ratio": ratio, "regret": 0.1 * seed}  # fmt: skip


def test_the_honesty_report_counts_per_method_and_budget():
    rows = [row(0, 20, 0.2, True, False, 0.5), row(1, 20, 0.6, False, True, 0.2),
            row(2, 20, 1.0, True, False, 4.0), row(0, 50, 0.1, True, False, 1.0),
            row(0, 20, 0.3, True, False, 1.0, method="variant")]  # fmt: skip
    lines = report(rows).splitlines()
    assert lines[2].startswith("| treebo | 20 | 3 | 0.60 | 1 | 2 of 3 | 1 of 3 | 0.50")
    assert lines[3].startswith("| treebo | 50 | 1 | 0.10 | 0 | 1 of 1 | 1 of 1")
    assert lines[4].startswith("| variant | 20 | 1 | 0.30 |")


def test_the_batch_table_pairs_batches_with_sequential_and_asynchronous_runs():
    def record(method, seed, regret):
        return {"method": method, "seed": seed, "budget": 4, "optimal_value": 0.0,
                "values": [1.0, 1.0, 1.0, regret]}  # fmt: skip

    records = [record(m, s, r) for m, s, r in [
        ("batch1", 0, 1e-6), ("batch1", 1, 1e-8), ("batch4", 0, 1e-4),
        ("batch4", 1, 1e-9), ("sim4", 0, 1e-5), ("sim4", 1, 1e-5)]]  # fmt: skip
    text = batch_table(records)
    assert "| batch4 | -4.00 | -9.00 | -6.50 |" in text
    assert "batch4 against batch1: lower / equal / higher 1 / 0 / 1" in text
    assert "batch4 against sim4: lower / equal / higher 1 / 0 / 1" in text
    assert math.isclose(float(text.split("| batch1 | ")[1].split(" |")[0]), -6.0)
