"""One cold ``ask()`` at large n, measured as a user meets it, against a flat GP in the
same process.

A fresh ``TreeOptimizer(space, seed=0)`` on the Jenatton space is told ``n`` random
configurations (``space.sample(n, seed=1)``) and their values, then asks once: nothing
is warmed up first (the first proposal's imports and first calls count, as they do for a
user). Then, in the same process, BoTorch's flat ``SingleTaskGP`` is fitted to the same
data and LogEI maximized over the paths (``benchmarks.methods.botorch_peers``). Printed
and appended to ``records/cold_ask.jsonl``: seconds of each, treebo's ``"fit"`` and
``"optimize"`` stages, and the marginal-likelihood evaluations of its fits.

Usage::

    python -m benchmarks.perf.cold_ask --n 1000 --threads 1
"""

from __future__ import annotations

import argparse
import logging
import platform
import time
import warnings
from pathlib import Path

import torch

from benchmarks.perf import append_record

RECORDS = Path(__file__).parent / "records" / "cold_ask.jsonl"


def count_evaluations() -> list[int]:
    """A one-item counter of marginal-likelihood evaluations by ``fit_model``."""
    from treebo.gp import fit as fit_module

    count = [0]
    original = fit_module.fit_gpytorch_mll

    def counted(mll, **kwargs):
        closure = kwargs.get("closure")
        if closure is None:
            from botorch.optim.closures import get_loss_closure_with_grads
            from botorch.optim.utils import get_parameters

            parameters = get_parameters(mll, requires_grad=True)
            closure = get_loss_closure_with_grads(mll, parameters=parameters)

        def counting(**kw):
            count[0] += 1
            return closure(**kw)

        return original(mll, **{**kwargs, "closure": counting})

    fit_module.fit_gpytorch_mll = counted
    return count


def measure(n: int) -> dict:
    """Seconds of treebo's cold ``ask()`` and of the flat GP's proposal."""
    from benchmarks.methods.botorch_peers import botorch_proposal
    from treebo import TreeOptimizer
    from treebo.test_functions import Jenatton

    problem = Jenatton()
    space = problem.space
    X = space.sample(n, seed=1)
    configs = space.to_dicts(X)
    values = [problem.objective(c) for c in configs]
    opt = TreeOptimizer(space, seed=0)
    for config, value in zip(configs, values, strict=True):
        opt.tell(config, value)
    evaluations = count_evaluations()
    t0 = time.perf_counter()
    opt.ask()
    treebo = time.perf_counter() - t0
    y = -torch.tensor(values, dtype=torch.float64).unsqueeze(-1)
    t0 = time.perf_counter()
    botorch_proposal("flat_logei", space, space.to_tensor(configs), y, seed=0)
    flat = time.perf_counter() - t0
    return {
        "treebo_seconds": treebo,
        "flat_seconds": flat,
        "ratio": treebo / flat,
        "stages": dict(opt.last_timings),
        "mll_evaluations": evaluations[0],
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=RECORDS)
    args = parser.parse_args(argv)
    logging.getLogger("treebo").setLevel(logging.WARNING)
    warnings.simplefilter("ignore")
    torch.set_num_threads(args.threads)
    record = {
        "n": args.n,
        "threads": args.threads,
        **measure(args.n),
        "machine": platform.processor() or platform.machine(),
        "torch": torch.__version__,
    }
    append_record(args.out, record)


if __name__ == "__main__":
    main()
