"""Seconds of one BKTF iteration: the Gibbs sampler with paper 004's counts (1000
sweeps, 600 discarded) and the acquisition over the whole grid.

A 4-D grid of ``--resolution`` values per dimension (50^4 = 6.25 million points
by default), ``--points`` observations of Griewank at random grid points, rank 2,
one chain; the acquisition is Algorithm 2's UCB (mean and variance as two matrix
products) and, for comparison, the sample-based EI. Appends one record per
``(points, acquisition)`` to ``benchmarks/perf/records/bktf_iteration.jsonl``.

Usage::

    python -m benchmarks.perf.bktf_iteration --threads 2
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import torch
from botorch.test_functions.synthetic import Griewank

from treebo.bktf import BKTF, Grid, SampleEI, SampleUCB, maximize_over_grid

RECORDS = Path(__file__).parent / "records" / "bktf_iteration.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--resolution", type=int, default=50)
    parser.add_argument("--points", default="20,50")
    parser.add_argument("--rank", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RECORDS)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    dim = 4
    grid = Grid([torch.linspace(-10, 10, args.resolution, dtype=torch.float64)] * dim)
    function = Griewank(dim=dim, bounds=[(-10.0, 10.0)] * dim)
    for n in (int(v) for v in args.points.split(",")):
        gen = torch.Generator().manual_seed(n)
        index = torch.stack(
            [torch.randint(0, s, (n,), generator=gen) for s in grid.sizes], -1
        )
        X = grid.points(index)
        model = BKTF(X, -function.evaluate_true(X).unsqueeze(-1), grid, rank=args.rank)
        t0 = time.perf_counter()
        cpu0 = time.process_time()
        samples = model.fit(num_sweeps=1000, burn_in=600, seed=0)
        mcmc, mcmc_cpu = time.perf_counter() - t0, time.process_time() - cpu0
        visited = grid.flat(index)
        best = float(model.data.y.max())
        for acquisition in (SampleUCB(), SampleEI()):
            t1 = time.perf_counter()
            maximize_over_grid(samples, grid, acquisition, best, visited)
            seconds = time.perf_counter() - t1
            record = {
                "grid": f"{args.resolution}^{dim}",
                "grid_points": grid.numel,
                "n": n,
                "rank": args.rank,
                "samples": samples.num_samples,
                "acquisition": type(acquisition).__name__,
                "mcmc_seconds": mcmc,
                "mcmc_cpu_seconds": mcmc_cpu,
                "acquisition_seconds": seconds,
                "total_seconds": mcmc + seconds,
                "machine": f"{platform.machine()} {torch.get_num_threads()}t",
                "date": time.strftime("%Y-%m-%d"),
                "torch": torch.__version__,
            }
            print(json.dumps(record), flush=True)
            args.out.parent.mkdir(parents=True, exist_ok=True)
            with open(args.out, "a") as fh:
                fh.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
