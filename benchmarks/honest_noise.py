"""How honest the reported result is under noise: the recommendation's reported value
and standard deviation against the true value, and the fitted noise against the true.

On a noisy problem of ``benchmarks/problems/noisy.py`` (noise sd 10 % of the range),
each seed runs the default loop to the largest budget; at every budget the run's
[`result()`][treebo.loop.optimizer.TreeOptimizer.result] is taken (a scratch fit: the
run goes on as it would have) and scored:

- ``|reported - true|``: ``best_value`` against the noise-free value at
  ``best_params``, in units of the noise sd;
- below the minimum: ``best_value`` below the function's minimum;
- covered: the true value within ``best_value`` ± 2 ``best_value_sd`` (a
  recommendation of the best observation counts the noise sd as its sd);
- noise ratio: the last model's fitted noise variance over the true one;
- regret: the true value at ``best_params`` minus the minimum.

Usage::

    python -m benchmarks.honest_noise --problem p1a_noisy --budgets 20,50 --seeds 0-9
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import torch

from benchmarks.problems.noisy import NOISY_PROBLEMS
from benchmarks.stats import parse_seeds
from treebo import TreeOptimizer
from treebo.loop.outcomes import score_scale


def fitted_noise_variance(opt: TreeOptimizer) -> float | None:
    """The last model's noise variance in the objective's units (the loop's
    scores are standardized to unit variance)."""
    model = opt.last_model
    if not hasattr(getattr(model, "likelihood", None), "noise"):
        return None
    scale = score_scale(-opt.history.values)
    noise = float(model.likelihood.noise.detach().mean())
    return noise * (scale.peak * scale.spread) ** 2


def run(
    problem_name: str, seed: int, budgets: list[int], method: str = "treebo"
) -> list[dict]:
    """One run of ``method`` (``"treebo"``, the package's default, or a preset of
    ``benchmarks/methods``) to ``max(budgets)``, scored at each budget."""
    from benchmarks.methods.treebo import PRESETS

    problem = NOISY_PROBLEMS[problem_name]()
    problem.reseed(seed)
    strategy = None if method == "treebo" else PRESETS[method]()
    opt = TreeOptimizer(problem.space, seed=seed, strategy=strategy)
    rows = []
    while len(opt.history) < max(budgets):
        params = opt.ask()
        opt.tell(params, problem.objective(params))
        if len(opt.history) in budgets:
            result = opt.result()
            true = problem.true_value(result.best_params)
            sd = result.best_value_sd
            sd = problem.noise_sd if sd is None else sd
            fitted = fitted_noise_variance(opt)
            rows.append(
                {
                    "problem": problem_name,
                    "method": method,
                    "seed": seed,
                    "budget": len(opt.history),
                    "reported": result.best_value,
                    "reported_sd": result.best_value_sd,
                    "recommended_by": result.recommended_by,
                    "true": true,
                    "noise_sd": problem.noise_sd,
                    "minimum": problem.optimal_value,
                    "error_in_noise_sd": abs(result.best_value - true)
                    / problem.noise_sd,
                    "covered": abs(result.best_value - true) <= 2 * sd,
                    "below_minimum": result.best_value < problem.optimal_value,
                    "noise_ratio": None
                    if fitted is None
                    else fitted / problem.noise_variance,
                    "regret": true - problem.optimal_value,
                }
            )
    return rows


def report(rows: list[dict]) -> str:
    """A markdown table per budget: the issue's figures."""
    lines = [
        "| method | budget | seeds | median abs(reported - true) / noise sd "
        "| below the minimum | true value within ± 2 reported sd "
        "| fitted noise within 3x of the truth | median fitted / true noise "
        "| median true regret |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    groups = sorted({(r.get("method", "treebo"), r["budget"]) for r in rows})
    for method, budget in groups:
        group = [
            r
            for r in rows
            if r.get("method", "treebo") == method and r["budget"] == budget
        ]
        ratios = [r["noise_ratio"] for r in group if r["noise_ratio"] is not None]
        within = sum(1 / 3 <= x <= 3 for x in ratios)
        lines.append(
            f"| {method} | {budget} | {len(group)} | "
            f"{statistics.median(r['error_in_noise_sd'] for r in group):.2f} | "
            f"{sum(r['below_minimum'] for r in group)} | "
            f"{sum(r['covered'] for r in group)} of {len(group)} | "
            f"{within} of {len(ratios)} | "
            f"{statistics.median(ratios) if ratios else float('nan'):.2f} | "
            f"{statistics.median(r['regret'] for r in group):.3g} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", default="p1a_noisy", choices=NOISY_PROBLEMS)
    parser.add_argument("--budgets", default="20,50")
    parser.add_argument("--seeds", default="0-9")
    parser.add_argument(
        "--method", default="treebo", help="treebo (the default) or a preset"
    )
    parser.add_argument("--out", default="benchmarks/perf/records/honest_noise.jsonl")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    budgets = sorted(int(b) for b in args.budgets.split(","))
    out = Path(args.out)
    done = set()
    if out.exists():
        done = {
            (r["problem"], r.get("method", "treebo"), r["seed"])
            for r in map(json.loads, out.open())
        }
    for seed in parse_seeds(args.seeds):
        if (args.problem, args.method, seed) in done:
            continue
        rows = run(args.problem, seed, budgets, args.method)
        with out.open("a") as fh:
            fh.writelines(json.dumps(r) + "\n" for r in rows)
        print(f"{args.problem} seed={seed}: " + ", ".join(
            f"@{r['budget']} err {r['error_in_noise_sd']:.2f} sd, noise x"
            f"{r['noise_ratio'] or float('nan'):.2f}" for r in rows))  # fmt: skip
    rows = [r for r in map(json.loads, out.open()) if r["problem"] == args.problem]
    print(report(rows))


if __name__ == "__main__":
    main()
