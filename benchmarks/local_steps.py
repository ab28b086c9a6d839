"""Local refinement steps alone: which acquisition and noise floor converge fastest.

Each seed's history comes from the loop of session 7 (LogEI on ``AddTreeGP``
with vertex offsets, LogEI local steps, local noise floor 1e-6), run for
``--n`` evaluations. From that history, ``--steps`` local steps are taken in a
row with each variant, and the running best regret is recorded.

A variant is ``ACQ[:noise_floor=F][:beta=B]``, where ``ACQ`` is ``ucb``,
``log_ei`` or ``alt`` (UCB on even steps, LogEI on odd ones, as the loop's
default cycles them); options left out take
:func:`~treebo.optim.local_refinement_candidate`'s defaults::

    python -m benchmarks.local_steps --problem p1a --n 16 --steps 24 \\
        log_ei:noise_floor=1e-6 ucb:noise_floor=1e-6 log_ei:noise_floor=1e-8 \\
        ucb:noise_floor=1e-8 alt:noise_floor=1e-8

Prints, per variant, the median log10 regret after half of the steps and after
all of them, and every seed's final value (``-16`` stands for an exact optimum).
"""

from __future__ import annotations

import argparse
import math
import statistics
import warnings

import torch

from treebo import TreeOptimizer
from treebo.add_tree.local_refinement import local_refinement_candidate

if __package__:
    from .bo_benchmark import PROBLEMS, treebo_options
else:  # run as a script
    from bo_benchmark import PROBLEMS, treebo_options

#: The loop whose histories the local steps start from: LogEI-only local steps
#: with a local noise floor of 1e-6, no shared components, a constant mean.
HISTORY_LOOP = treebo_options("treebo_logei_offsets")


def history(problem, seed: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Encoded inputs and targets of ``n`` evaluations of ``HISTORY_LOOP``."""
    opt = TreeOptimizer(
        problem.space,
        seed=seed,
        model=HISTORY_LOOP["model"],
        options=HISTORY_LOOP["options"],
    )
    for _ in range(n):
        params = opt.ask()
        opt.tell(params, problem.objective(params))
    return opt.training_data()


def parse_variant(spec: str) -> tuple[str, dict]:
    name, *options = spec.split(":")
    if name not in ("ucb", "log_ei", "alt"):
        raise ValueError(f"unknown acquisition {name!r} in variant {spec!r}")
    kwargs = {}
    for option in options:
        key, _, value = option.partition("=")
        if key not in ("noise_floor", "beta"):
            raise ValueError(f"unknown option {key!r} in variant {spec!r}")
        kwargs[key] = float(value)
    return name, kwargs


def local_run(problem, X, y, steps: int, name: str, kwargs: dict) -> list[float]:
    """log10 regret of the best point after each of ``steps`` local steps."""
    space, out = problem.space, []

    def log10_regret() -> float:
        regret = -float(y.max()) - problem.optimal_value
        return math.log10(regret) if regret > 0 else -16.0

    for step in range(steps):
        acquisition = name if name != "alt" else ("ucb", "log_ei")[step % 2]
        cand = local_refinement_candidate(
            space, X, y, seed=step, acquisition=acquisition, **kwargs
        )
        if cand is None:  # no local model: the loop would take a global step
            out.extend([log10_regret()] * (steps - step))
            break
        value = problem.objective(space.to_dict(cand[0]))
        X = torch.cat([X, cand])
        y = torch.cat([y, torch.tensor([[-value]], dtype=y.dtype)])
        out.append(log10_regret())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", default="p1a", choices=sorted(PROBLEMS))
    parser.add_argument("--n", type=int, default=16, help="evaluations before")
    parser.add_argument("--steps", type=int, default=24)
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("variants", nargs="+")
    args = parser.parse_args()
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    problem = PROBLEMS[args.problem]()
    variants = [(spec, *parse_variant(spec)) for spec in args.variants]
    histories = [history(problem, s, args.n) for s in range(args.seeds)]
    for spec, name, kwargs in variants:
        runs = [
            local_run(problem, X, y, args.steps, name, kwargs) for X, y in histories
        ]
        final = sorted(r[-1] for r in runs)
        print(
            f"{spec:28s} median after {args.steps // 2}: "
            f"{statistics.median(r[args.steps // 2 - 1] for r in runs):7.2f}  "
            f"after {args.steps}: {statistics.median(final):7.2f}  "
            f"finals: {' '.join(f'{v:.1f}' for v in final)}",
            flush=True,
        )


if __name__ == "__main__":
    main()
