"""The P8 section of ``RESULTS.md``: performance profiles over grids (records of
:mod:`benchmarks.grid_bo`, problems in :mod:`benchmarks.problems.grid`).

Two targets, each counted in evaluations (the initial design included; a run that
misses it counts its budget + 100): the grid's optimum itself (paper 004's measure),
and a regret within 1% of the function's range over the grid. A profile is computed
over the runs (``(problem, seed)`` pairs) every method completed; its AUC is its
mean over the ratios ``1, 2, ..., N_max + 1``.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np

from .grid_bo import BKTF_VARIANTS, METHODS, performance_profiles
from .harness import load_records
from .problems.grid import GRID_PROBLEMS, grid_problem
from .stats import fmt, paired_wilcoxon, quartiles, sign_test

#: The second target: regret within this fraction of the grid's range.
RANGE_FRACTION = 0.01


@cache
def grid_range(problem: str) -> tuple[float, float]:
    """(min, max) of the problem's function over its grid."""
    values = grid_problem(problem).grid_values()
    return float(values.min()), float(values.max())


def with_target(record: dict, fraction: float) -> dict:
    """The record with its target raised to ``fraction`` of the grid's range
    above the optimum (``fraction = 0``: unchanged)."""
    lo, hi = grid_range(record["problem"])
    return {**record, "optimal_value": record["optimal_value"] + fraction * (hi - lo)}


def complete(records: list[dict], methods: list[str]) -> list[dict]:
    """The records of the ``(problem, seed)`` pairs every method ran."""
    have: dict[tuple, set] = {}
    for r in records:
        have.setdefault((r["problem"], r["seed"]), set()).add(r["method"])
    keep = {k for k, v in have.items() if set(methods) <= v}
    return [r for r in records if (r["problem"], r["seed"]) in keep]


def auc_table(records: list[dict], methods: list[str], fraction: float) -> list[str]:
    """AUC of each method's profile per problem and over all of them."""
    targeted = [with_target(r, fraction) for r in records]
    problems = sorted({r["problem"] for r in records}, key=_order)
    lines = [
        "| problem | " + " | ".join(methods) + " |",
        "|---|" + "---|" * len(methods),
    ]
    for name in [*problems, "overall"]:
        subset = [r for r in targeted if name in ("overall", r["problem"])]
        _, profiles = performance_profiles(subset, methods)
        auc = {m: float(profiles[m].mean()) for m in methods}
        top = max(auc.values())
        cells = [
            f"**{auc[m]:.3f}**" if auc[m] == top else f"{auc[m]:.3f}" for m in methods
        ]
        label = "**overall**" if name == "overall" else name
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def final_regret(record: dict) -> float:
    """log10 of the best value's regret to the grid optimum (``-inf`` at 0)."""
    gap = min(record["values"]) - record["optimal_value"]
    return float(np.log10(gap)) if gap > 0 else -np.inf


def regret_table(records: list[dict], methods: list[str]) -> list[str]:
    """Median [IQR] final log10 regret per problem and method."""
    problems = sorted({r["problem"] for r in records}, key=_order)
    lines = [
        "| problem | grid | n0 / budget | " + " | ".join(methods) + " |",
        "|---|---|---|" + "---|" * len(methods),
    ]
    for name in problems:
        rs = [r for r in records if r["problem"] == name]
        grid = grid_problem(name).grid
        cells = []
        for m in methods:
            q = quartiles(np.array([final_regret(r) for r in rs if r["method"] == m]))
            cells.append(f"{fmt(q[1])} [{fmt(q[0])}, {fmt(q[2])}]")
        sizes = " x ".join(map(str, grid.sizes))
        lines.append(
            f"| {name} | {sizes} | {rs[0]['n_initial']} / {rs[0]['budget']} | "
            + " | ".join(cells)
            + " |"
        )
    return lines


def paired_lines(records: list[dict], methods: list[str]) -> list[str]:
    """BKTF against each other method over every run: final log10 regret."""
    by = {(r["problem"], r["seed"], r["method"]): final_regret(r) for r in records}
    runs = sorted({(p, s) for p, s, _ in by})
    lines = [
        "| BKTF against | lower | equal | higher | sign p | Wilcoxon p |",
        "|---|---|---|---|---|---|",
    ]
    base = {i: np.array([by[(p, s, "bktf")]]) for i, (p, s) in enumerate(runs)}
    for m in methods:
        if m == "bktf":
            continue
        other = {i: np.array([by[(p, s, m)]]) for i, (p, s) in enumerate(runs)}
        lower = int(sum(base[i][0] < other[i][0] for i in base))
        higher = int(sum(base[i][0] > other[i][0] for i in base))
        equal = len(base) - lower - higher
        p = sign_test(lower, higher)
        w = paired_wilcoxon(other, base, 1)
        lines.append(f"| {m} | {lower} | {equal} | {higher} | {p:.3g} | {w:.3g} |")
    return lines


def seconds_line(records: list[dict], methods: list[str]) -> str:
    """Median seconds per proposal of each method."""
    parts = []
    for m in methods:
        s = [x for r in records if r["method"] == m for x in r["proposal_seconds"]]
        parts.append(f"{m} {np.median(s):.2f} s" if s else f"{m} -")
    return "Median seconds per proposal (one thread per run): " + ", ".join(parts) + "."


def plot_profiles(records: list[dict], methods: list[str], path: Path) -> bool:
    """Overall performance profiles for both targets, as a PNG."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    for ax, fraction, title in (
        (axes[0], 0.0, "grid optimum"),
        (axes[1], RANGE_FRACTION, "within 1% of the range"),
    ):
        ratios, profiles = performance_profiles(
            [with_target(r, fraction) for r in records], methods
        )
        for m in methods:
            ax.step(ratios, profiles[m], where="post", label=m)
        ax.set_xscale("log")
        ax.set_xlabel("ratio to the best method (evaluations)")
        ax.set_title(f"Target: {title}")
    axes[0].set_ylabel("fraction of runs")
    axes[1].legend(loc="lower right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def variant_lines(records: list[dict], methods: list[str]) -> list[str]:
    """BKTF's variants, each on the runs where it and every method ran: the
    overall AUC of both targets and the paired final regret against BKTF."""
    lines = []
    for variant in BKTF_VARIANTS:
        if variant == "bktf" or not any(r["method"] == variant for r in records):
            continue
        runs = complete(records, [*methods, variant])
        if not runs:
            continue
        cells = []
        for fraction in (0.0, RANGE_FRACTION):
            targeted = [with_target(r, fraction) for r in runs]
            _, profiles = performance_profiles(targeted, [*methods, variant])
            cells.append(
                ", ".join(
                    f"{m} {profiles[m].mean():.3f}" for m in ("bktf", variant, "gp_ei")
                )
            )
        by = {(r["problem"], r["seed"], r["method"]): final_regret(r) for r in runs}
        keys = sorted({(p, s) for p, s, _ in by})
        a = np.array([by[(p, s, variant)] for p, s in keys])
        b = np.array([by[(p, s, "bktf")] for p, s in keys])
        lower, higher = int((a < b).sum()), int((a > b).sum())
        lines.append(
            f"| {variant} | {len(keys)} | {cells[0]} | {cells[1]} | "
            f"{lower} / {len(keys) - lower - higher} / {higher} "
            f"(p = {sign_test(lower, higher):.3g}) |"
        )
    if not lines:
        return []
    return [
        "BKTF variants (ablations), on the runs where they ran: overall AUC "
        "(grid optimum; within 1%) and final regret lower / equal / higher "
        "than BKTF's default:",
        "",
        "| variant | runs | AUC, grid optimum | AUC, within 1% | against bktf |",
        "|---|---|---|---|---|",
        *lines,
        "",
    ]


def grid_section(path: Path, plots_dir: Path | None) -> list[str]:
    """The P8 section (empty without records)."""
    records = load_records([path])
    if not records:
        return []
    methods = [m for m in METHODS if any(r["method"] == m for r in records)]
    everything = records
    records = complete(records, methods)
    if not records:
        return []
    seeds = sorted({r["seed"] for r in records})
    dates = sorted({r["date"] for r in records})
    versions = records[0]["versions"]
    lines = [
        "## Optimization over grids: BKTF (P8)",
        "",
        "`python -m benchmarks.run grid` (records: "
        "`benchmarks/records/grid.jsonl`); "
        f"seeds {seeds[0]}-{seeds[-1]} ({len(seeds)} per problem), "
        f"{dates[0]} to {dates[-1]}, {records[0]['machine']} per run, torch "
        f"{versions['torch']}, botorch {versions['botorch']}. Every method "
        "starts from the same grid points per seed (treebo's initial design moved "
        "onto the grid). BKTF: rank 2, 1000 Gibbs sweeps with 600 discarded per "
        "proposal, UCB (mean + 2 sd of the samples). GP peers: BoTorch "
        "`SingleTaskGP` (Matern-3/2, ARD; `MixedSingleTaskGP` with categorical "
        "modes), LogEI or mean + 2 sd at every grid point. `treebo`: the default "
        "loop on the continuous space. `svc_cancer`: 3-fold CV error of an SVC "
        "on breast_cancer (kernel, scaler, C, gamma).",
        "",
        "AUC of the Dolan-More performance profiles, target **the grid's "
        "optimum** (paper 004's measure; higher is better):",
        "",
        *auc_table(records, methods, 0.0),
        "",
        "AUC with target **regret within 1% of the function's range over the grid**:",
        "",
        *auc_table(records, methods, RANGE_FRACTION),
        "",
        "Final log10 regret to the grid's optimum, median [IQR] (`-inf`: reached):",
        "",
        *regret_table(records, methods),
        "",
        "Paired over every run (final log10 regret; lower is better for BKTF):",
        "",
        *paired_lines(records, methods),
        "",
        seconds_line(records, methods),
        "",
        *variant_lines(everything, methods),
    ]
    if plots_dir is not None and plot_profiles(
        records, methods, plots_dir / "grid_profiles.png"
    ):
        lines += ["![Performance profiles](plots/grid_profiles.png)", ""]
    return lines


def _order(problem: str) -> int:
    if problem in GRID_PROBLEMS:
        return GRID_PROBLEMS.index(problem)
    return len(GRID_PROBLEMS)
