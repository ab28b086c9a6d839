"""Tables and regret curves from bo_benchmark.py output.

Usage::

    python benchmarks/summarize.py benchmarks/out/bo.jsonl [more.jsonl ...] \\
        --png benchmarks/regret_curves.png [--suffix benchmarks/out/bo.jsonl=_v1] \\
        [--plot-methods treebo_logei,hck_logei] [--seeds 0-9] [--paired treebo_logei] \\
        [--checkpoints 30,60]

Where a problem's optimum is unknown (``optimal_value`` None: P9's
cross-validated error), the tables show the best value so far instead of the
regret. Regret is ``best value so far - f*``; an exactly reached optimum has regret 0,
whose log10 is ``-inf`` (shown as such; medians and quartiles keep it). Medians
and quartiles are midpoint order statistics (the usual median for an even
number of seeds). A seed that appears in several files (e.g. a 50- and a
100-evaluation run) counts once, with its longest run; a checkpoint only uses
the runs that reached it (the cell names the count when it is smaller).

Records with ``f1`` (high_dim_benchmark.py: F1 score of the learned edges
after each structure update) also get the median final F1 per method.

Every method starts from the same initial design per seed, so methods can be
compared seed by seed: ``--paired BASE`` adds, per problem, how many common
seeds each method ends a checkpoint with lower / equal / higher regret than
``BASE``, and the two-sided sign-test p-value of that split (ties left out).
Medians of 10 seeds at one checkpoint move by more than an order of magnitude
between seed sets on these problems; the paired counts are steadier.
"""

from __future__ import annotations

import argparse
import json
import math
from collections import defaultdict

import numpy as np

CHECKPOINTS = (10, 25, 50, 100)


def log10_regret_curve(record: dict) -> np.ndarray:
    """log10 regret after each evaluation; the best value so far where the
    optimum is unknown (``optimal_value`` None, e.g. P9's CV error)."""
    best = np.minimum.accumulate(np.asarray(record["values"], dtype=float))
    if record["optimal_value"] is None:
        return best
    regret = np.maximum(best - record["optimal_value"], 0.0)
    with np.errstate(divide="ignore"):
        return np.log10(regret)


def quartiles(values: np.ndarray) -> np.ndarray:
    """Midpoint 25/50/75 % order statistics of values that may hold ``-inf``."""
    finite = np.where(np.isneginf(values), -1e300, values)  # keeps the order
    q = np.percentile(finite, [25, 50, 75], axis=0, method="midpoint")
    return np.where(q < -1e299, -np.inf, q)


def fmt(v: float, digits: int = 2) -> str:
    return "-inf" if v == -math.inf else f"{v:.{digits}f}"


def parse_seeds(text: str) -> set[int]:
    """``"0-9"`` or ``"0,3,5"`` (or a mix, ``"0-4,9"``) as a set of seeds."""
    seeds: set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        seeds.update(range(int(lo), int(hi or lo) + 1))
    return seeds


def sign_test(wins: int, losses: int) -> float:
    """Two-sided exact sign-test p-value of ``wins`` against ``losses``."""
    n = wins + losses
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(wins, losses) + 1)) / 2**n
    return min(1.0, 2 * tail)


#: Log10 regrets closer than this count as equal in the paired counts (a
#: factor of 1.0023): runs that follow the same trajectory differ by float
#: round-off (1e-11 in the objective was seen between machines), which must
#: not count as a win.
TIE_LOG10 = 1e-3


def paired_counts(
    base: dict[int, np.ndarray],
    other: dict[int, np.ndarray],
    checkpoint: int,
    tie: float = TIE_LOG10,
) -> tuple[int, int, int]:
    """Seeds where ``other`` ends ``checkpoint`` with lower, equal and higher
    log10 regret than ``base`` (seeds both reached it on); log10 regrets
    within ``tie`` of each other (or both ``-inf``) are equal."""
    lower = equal = higher = 0
    for seed in sorted(base.keys() & other.keys()):
        a, b = base[seed], other[seed]
        if len(a) < checkpoint or len(b) < checkpoint:
            continue
        x, y = b[checkpoint - 1], a[checkpoint - 1]
        if x == y or abs(x - y) <= tie:
            equal += 1
        elif x < y:
            lower += 1
        else:
            higher += 1
    return lower, equal, higher


def checkpoint_values(records: list[dict], c: int) -> np.ndarray:
    """Log10 regret (or best value) after ``c`` evaluations of each run that
    reached ``c``."""
    curves = [log10_regret_curve(r) for r in records]
    return np.array([cv[c - 1] for cv in curves if len(cv) >= c])


def load_runs(
    files: list[str],
    seeds: set[int] | None = None,
    suffixes: dict[str, str] | None = None,
) -> dict[tuple[str, str], list[dict]]:
    """Records by ``(problem, method)``; a seed found twice keeps its longest run.

    Args:
        files: JSON-lines files of ``bo_benchmark.py``.
        seeds: Only these seeds (default: all).
        suffixes: ``{file: suffix}`` appended to the ``treebo*`` methods read
            from that file.
    """
    suffixes = suffixes or {}
    runs: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for path in files:
        with open(path) as fh:
            for line in fh:
                r = json.loads(line)
                if seeds is not None and r["seed"] not in seeds:
                    continue
                if r["method"].startswith("treebo") and path in suffixes:
                    r["method"] += suffixes[path]
                key = (r["problem"], r["method"])
                same = [i for i, o in enumerate(runs[key]) if o["seed"] == r["seed"]]
                if not same:
                    runs[key].append(r)
                elif len(r["values"]) > len(runs[key][same[0]]["values"]):
                    runs[key][same[0]] = r
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--png", default=None)
    parser.add_argument(
        "--suffix",
        action="append",
        default=[],
        metavar="FILE=SUFFIX",
        help="append SUFFIX to the treebo_* method names read from FILE "
        "(to show runs of an earlier treebo version side by side)",
    )
    parser.add_argument(
        "--plot-methods",
        default=None,
        help="comma-separated methods to draw in the PNG (default: all)",
    )
    parser.add_argument(
        "--seeds", default=None, help="only these seeds, e.g. 0-9 or 0-4,7"
    )
    parser.add_argument(
        "--checkpoints", default=None, help="evaluation counts, e.g. 30,60"
    )
    parser.add_argument(
        "--paired",
        default=None,
        metavar="BASE",
        help="also count, seed by seed, where each method beats BASE",
    )
    args = parser.parse_args()
    checkpoints = (
        CHECKPOINTS
        if args.checkpoints is None
        else tuple(int(c) for c in args.checkpoints.split(","))
    )
    keep = None if args.seeds is None else parse_seeds(args.seeds)
    suffixes = dict(item.split("=", 1) for item in args.suffix)
    runs = load_runs(args.files, keep, suffixes)
    problems = sorted({p for p, _ in runs})
    for problem in problems:
        methods = sorted(m for p, m in runs if p == problem)
        budget = max(r["budget"] for m in methods for r in runs[(problem, m)])
        cps = [c for c in checkpoints if c <= budget]
        known = all(
            r["optimal_value"] is not None for m in methods for r in runs[(problem, m)]
        )
        label, digits = ("log10 regret", 2) if known else ("best value", 4)
        print(f"\n### {problem}\n")
        print(
            "| method | seeds | "
            + " | ".join(f"{label} @{c}: median [IQR]" for c in cps)
            + " | s/proposal (median) |"
        )
        print("|---|---|" + "---|" * len(cps) + "---|")
        for m in methods:
            rs = runs[(problem, m)]
            cells = []
            for c in cps:
                col = checkpoint_values(rs, c)
                if col.size == 0:
                    cells.append("-")
                    continue
                q1, med, q3 = quartiles(col)
                count = "" if col.size == len(rs) else f" (n={col.size})"
                q = [fmt(v, digits) for v in (q1, med, q3)]
                cells.append(f"{q[1]} [{q[0]}, {q[2]}]{count}")
            secs = [s for r in rs for s in r["proposal_seconds"]]
            sec = f"{np.median(secs):.2f}" if secs else "-"
            print(f"| {m} | {len(rs)} | " + " | ".join(cells) + f" | {sec} |")
        learned = {
            m: [r["f1"][-1] for r in runs[(problem, m)] if r.get("f1")] for m in methods
        }
        learned = {m: v for m, v in learned.items() if v}
        if learned:
            print("\nF1 of the learned edges at the end: median [IQR] (seeds)\n")
            for m, v in learned.items():
                q1, med, q3 = np.percentile(v, [25, 50, 75], method="midpoint")
                print(f"- {m}: {med:.2f} [{q1:.2f}, {q3:.2f}] ({len(v)})")
        if args.paired is not None and (problem, args.paired) in runs:
            base = {
                r["seed"]: log10_regret_curve(r) for r in runs[(problem, args.paired)]
            }
            print(
                f"\nSeed by seed against {args.paired}: lower / equal / higher "
                "regret (sign-test p)\n"
            )
            print("| method | " + " | ".join(f"@{c}" for c in cps) + " |")
            print("|---|" + "---|" * len(cps))
            for m in methods:
                if m == args.paired:
                    continue
                other = {r["seed"]: log10_regret_curve(r) for r in runs[(problem, m)]}
                cells = []
                for c in cps:
                    lo, eq, hi = paired_counts(base, other, c)
                    if lo + eq + hi == 0:
                        cells.append("-")
                        continue
                    cells.append(f"{lo} / {eq} / {hi} ({sign_test(lo, hi):.2g})")
                print(f"| {m} | " + " | ".join(cells) + " |")
    if args.png:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(
            1, len(problems), figsize=(5 * len(problems), 4), squeeze=False
        )
        shown = None if args.plot_methods is None else args.plot_methods.split(",")
        all_methods = sorted({m for _, m in runs if shown is None or m in shown})
        colors = {m: plt.cm.tab10(i % 10) for i, m in enumerate(all_methods)}
        for ax, problem in zip(axes[0], problems, strict=False):
            for (p, m), rs in sorted(runs.items()):
                if p != problem or m not in colors:
                    continue
                length = min(len(r["values"]) for r in rs)
                curves = np.stack([log10_regret_curve(r)[:length] for r in rs])
                curves = np.maximum(curves, -16.0)  # plot floor for exact hits
                q1, med, q3 = quartiles(curves)
                x = np.arange(1, curves.shape[1] + 1)
                ax.plot(x, med, label=f"{m} ({len(rs)})", color=colors[m])
                ax.fill_between(x, q1, q3, alpha=0.12, color=colors[m])
            ax.set_title(problem)
            ax.set_xlabel("evaluations")
            ax.set_ylabel("log10 regret (median, IQR; floor -16)")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(args.png, dpi=110)
        print(f"\nwrote {args.png}")


if __name__ == "__main__":
    main()
