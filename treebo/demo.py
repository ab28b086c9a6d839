"""Demo: treebo on the Jenatton et al. tree-structured problem vs random search.

Run with ``python -m treebo.demo`` (options: ``--budget``, ``--seed``,
``--strategy``).
"""

from __future__ import annotations

import argparse
import math
import os
import time

# A GP on a few dozen points is many small operations, which run fastest on one
# thread; the thread pools read these when they load (docs/loop.md, "Speed").
if __name__ == "__main__":
    for _pool in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_pool, "1")

from treebo import minimize  # noqa: E402
from treebo.test_functions import Jenatton  # noqa: E402


def main(argv: list[str] | None = None, prog: str = "python -m treebo.demo") -> None:
    """Run the demo with command-line arguments ``argv`` (``prog`` names the command
    in ``--help``)."""
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--strategy",
        "--model",  # its deprecated spelling
        dest="strategy",
        default="add_tree",
        choices=["add_tree", "add_tree_ucb"],
    )
    args = parser.parse_args(argv)

    problem = Jenatton("paper")
    print(
        f"Jenatton (9-D, 4 paths, f* = {problem.optimal_value}); "
        f"budget {args.budget}, seed {args.seed}"
    )
    print(f"search space: {problem.space}")
    t0 = time.perf_counter()
    result = minimize(
        problem.objective,
        problem.space,
        budget=args.budget,
        seed=args.seed,
        strategy=args.strategy,
        noise="deterministic",  # Jenatton's function is exact: say so
    )
    treebo_seconds = time.perf_counter() - t0

    configs = problem.space.to_dicts(problem.space.sample(args.budget, seed=args.seed))
    random_values = [problem.objective(c) for c in configs]
    random_best = min(random_values)
    random_params = configs[random_values.index(random_best)]

    def regret(v: float) -> str:
        r = v - problem.optimal_value
        return "0 (exact)" if r <= 0 else f"{math.log10(r):.2f}"

    rows = [
        (
            f"treebo ({args.strategy})",
            result.best_value,
            treebo_seconds,
            result.best_params,
        ),
        ("random search", random_best, 0.0, random_params),
    ]
    print()
    print(f"{'method':<22} {'best f':>12} {'log10 regret':>13} {'seconds':>8}  best")
    for name, value, seconds, params in rows:
        shown = {
            k: round(v, 6) if isinstance(v, float) else v for k, v in params.items()
        }
        print(f"{name:<22} {value:>12.8f} {regret(value):>13} {seconds:>8.1f}  {shown}")


if __name__ == "__main__":
    main()
