"""Seconds of one BKTF iteration: the Gibbs sampler with paper 004's counts (1000
sweeps, 600 discarded) and the acquisition over the whole grid.

A 4-D grid of ``--resolution`` values per dimension (50^4 = 6.25 million points
by default), ``--points`` observations of Griewank at random grid points, rank 2,
one chain; the acquisition is Algorithm 2's UCB (mean and variance as two matrix
products) and, for comparison, the sample-based EI. Appends one record per
``(points, acquisition)`` to ``benchmarks/perf/records/bktf_iteration.jsonl``.

Usage::

    python -m benchmarks.perf.bktf_iteration --threads 2
    python -m benchmarks.perf.bktf_iteration --device cuda
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

import torch
from botorch.test_functions.synthetic import Griewank

from benchmarks.perf import append_record
from treebo.bktf import BKTF, Grid, SampleEI, SampleUCB, maximize_over_grid

RECORDS = Path(__file__).parent / "records" / "bktf_iteration.jsonl"


def synchronize(device: torch.device) -> None:
    """Wait for the device's queued work (timings of CUDA runs)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def machine(device: torch.device) -> str:
    """The machine a record was timed on: the GPU's name, or the CPU's
    architecture and torch's thread count."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"{platform.machine()} {torch.get_num_threads()}t"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--resolution", type=int, default=50)
    parser.add_argument("--points", default="20,50")
    parser.add_argument("--rank", type=int, default=2)
    parser.add_argument("--device", default="cpu", help="torch device, e.g. cuda")
    parser.add_argument("--out", type=Path, default=RECORDS)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    dim = 4
    values = torch.linspace(-10, 10, args.resolution, dtype=torch.float64)
    grid = Grid([values.to(device)] * dim)
    function = Griewank(dim=dim, bounds=[(-10.0, 10.0)] * dim).to(device)
    for n in (int(v) for v in args.points.split(",")):
        gen = torch.Generator().manual_seed(n)
        index = torch.stack(
            [torch.randint(0, s, (n,), generator=gen) for s in grid.sizes], -1
        )
        X = grid.points(index.to(device))
        model = BKTF(X, -function.evaluate_true(X).unsqueeze(-1), grid, rank=args.rank)
        t0 = time.perf_counter()
        cpu0 = time.process_time()
        samples = model.fit(num_sweeps=1000, burn_in=600, seed=0)
        synchronize(device)
        mcmc, mcmc_cpu = time.perf_counter() - t0, time.process_time() - cpu0
        visited = grid.flat(index.to(device))
        best = float(model.data.y.max())
        for acquisition in (SampleUCB(), SampleEI()):
            t1 = time.perf_counter()
            maximize_over_grid(samples, grid, acquisition, best, visited)
            synchronize(device)
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
                "machine": machine(device),
                "date": time.strftime("%Y-%m-%d"),
                "torch": torch.__version__,
            }
            append_record(args.out, record)


if __name__ == "__main__":
    main()
