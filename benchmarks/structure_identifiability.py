"""Does the data of a BO run identify the additive structure? (P4, Star-25)

Structure learning (:func:`treebo.models.learn_tree_structure`) looks for the
forest of highest marginal likelihood. Whether that forest is the true one
depends on the data. This script compares two data sets of the same size per
seed:

    loop      the points the ``tree_additive`` loop evaluated (the run of
              ``high_dim_benchmark.py``: same initial design, same noise)
    uniform   as many uniform random points, observed with the same noise

On each, it fits the model under the true forest (L-BFGS-B, as the loop
fits) and runs ``--rounds`` rounds of structure learning (500 candidate
structures, then a refit) started from the true forest, reporting the F1
score and the log marginal likelihood after each. If the data identify the
truth, the rounds stay near F1 = 1; where they move to other forests of
equal or higher likelihood, no search for the likelihood's maximum recovers
it. For the loop's points it also reports the F1 and likelihood of the
forest the loop learned, and the spread of the graph's centre variable over
their second half.

    python benchmarks/structure_identifiability.py --problem star25 \\
        --seeds 0-9 --out benchmarks/out/identifiability.jsonl
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import torch

from treebo.gp.fit import noise_floor_likelihood
from treebo.models import TreeAdditiveGP, learn_tree_structure
from treebo.strategies.fitting import WarmStartFit

try:  # run as a module or as a script
    from .bo_benchmark import parse_seeds
    from .high_dim_benchmark import edge_f1, seeded_problem, tree_additive_run
except ImportError:
    from bo_benchmark import parse_seeds
    from high_dim_benchmark import edge_f1, seeded_problem, tree_additive_run

NOISE_FLOOR = 1e-4  # TreeAdditiveOptions' default
FIT_MAXITER = 100


def fitted(
    X: torch.Tensor, y: torch.Tensor, edges: torch.Tensor, fitter: WarmStartFit
) -> tuple[TreeAdditiveGP, float]:
    """The model fitted under ``edges`` and its exact log marginal likelihood."""

    def build(floor: float) -> TreeAdditiveGP:
        likelihood = noise_floor_likelihood(floor)
        return TreeAdditiveGP(X, y, edges=edges, likelihood=likelihood).to(X)

    model = fitter.fit(build, NOISE_FLOOR)
    model.train()
    with torch.no_grad():
        output = model.likelihood(model(*model.train_inputs))
        value = float(output.log_prob(model.train_targets))
    model.eval()
    return model, value


def study(X: torch.Tensor, y: torch.Tensor, truth: torch.Tensor, rounds: int) -> dict:
    """Likelihood of the truth, and structure learning started from it."""
    fitter = WarmStartFit(optimizer_kwargs={"options": {"maxiter": FIT_MAXITER}})
    model, ll_true = fitted(X, y, truth, fitter)
    f1s, lls, sizes = [], [], []
    for r in range(rounds):
        edges = learn_tree_structure(model, seed=r)
        model, value = fitted(X, y, edges, fitter)
        f1s.append(edge_f1(edges, truth))
        lls.append(value)
        sizes.append(int(edges.shape[0]))
    return {"ll_true": ll_true, "f1": f1s, "ll": lls, "edges": sizes}


def run(problem_name: str, seed: int, budget: int, rounds: int) -> list[dict]:
    """One seed's records: the loop's points, then as many uniform ones."""
    problem, design, _ = seeded_problem(problem_name, seed)
    if problem.edges is None:
        raise ValueError(f"{problem_name} has no true graph")
    low, width = problem.bounds[0], problem.bounds[1] - problem.bounds[0]
    observed = problem.observe(design).tolist()
    X, observed, _, _, opt = tree_additive_run(
        problem, "tree_additive", seed, budget, design, observed
    )
    U = (X - low) / width  # the loop models the unit cube, scores = -f
    y = -torch.tensor(observed, dtype=torch.float64).unsqueeze(-1)
    learned = opt.strategy.edges
    loop = study(U, y, problem.edges, rounds)
    fitter = WarmStartFit(optimizer_kwargs={"options": {"maxiter": FIT_MAXITER}})
    loop["ll_learned"] = fitted(U, y, learned, fitter)[1]
    loop["f1_learned"] = edge_f1(learned, problem.edges)
    centre = int(torch.bincount(problem.edges.reshape(-1)).argmax())
    loop["centre_spread"] = float(U[budget // 2 :, centre].std())
    g = torch.Generator().manual_seed(30_000 + seed)
    U_uniform = torch.rand(budget, problem.dim, generator=g, dtype=torch.float64)
    y_uniform = -problem.observe(low + width * U_uniform).unsqueeze(-1)
    uniform = study(U_uniform, y_uniform, problem.edges, rounds)
    base = {"problem": problem_name, "seed": seed, "n": budget}
    return [{**base, "data": "loop", **loop}, {**base, "data": "uniform", **uniform}]


def summarize(path: Path) -> None:
    """Print the table of RESULTS from the records in ``path``."""
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    print("| data | seeds | F1 after each round (median) | last round above truth |")
    print("|---|---|---|---|")
    for data in ("loop", "uniform"):
        sel = [r for r in rows if r["data"] == data]
        if not sel:
            continue
        rounds = len(sel[0]["f1"])
        medians = [statistics.median(r["f1"][i] for r in sel) for i in range(rounds)]
        below = sum(r["ll"][-1] > r["ll_true"] for r in sel)
        f1 = ", ".join(f"{m:.2f}" for m in medians)
        print(f"| {data} | {len(sel)} | {f1} | {below} of {len(sel)} |")
    loop = [r for r in rows if r["data"] == "loop"]
    if loop:
        f1 = statistics.median(r["f1_learned"] for r in loop)
        above = sum(r["ll_learned"] > r["ll_true"] for r in loop)
        spread = sorted(round(r["centre_spread"], 3) for r in loop)
        print(
            f"\nThe loop's own forests: median F1 {f1:.2f}; likelihood above the "
            f"truth's on {above} of {len(loop)} seeds.\nStandard deviation of the "
            f"centre variable over the loop's second half: {spread}."
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", default="star25")
    parser.add_argument("--seeds", default="0-9")
    parser.add_argument("--budget", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default="benchmarks/out/identifiability.jsonl")
    parser.add_argument("--summarize", action="store_true", help="only the table")
    args = parser.parse_args()
    out = Path(args.out)
    if not args.summarize:
        torch.set_num_threads(args.threads)
        done = set()
        if out.exists():
            done = {json.loads(line)["seed"] for line in out.read_text().splitlines()}
        out.parent.mkdir(parents=True, exist_ok=True)
        for seed in sorted(parse_seeds(args.seeds) - done):
            rows = run(args.problem, seed, args.budget, args.rounds)
            with out.open("a") as f:
                f.writelines(json.dumps(r) + "\n" for r in rows)
            print(f"seed {seed} done", flush=True)
    summarize(out)


if __name__ == "__main__":
    main()
