"""Statistics of regret curves: quartiles, paired counts and sign tests.

Regret is ``best value so far - f*``; an exactly reached optimum has regret 0,
whose log10 is ``-inf`` (kept by medians and quartiles). Where a problem's
optimum is unknown (``optimal_value`` None: a cross-validated error) the best
value so far stands in for the regret. Medians and quartiles are midpoint
order statistics. Every method starts from the same design per seed, so
methods are compared seed by seed: lower / equal / higher counts and the
two-sided sign-test p-value of that split (ties left out).
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

CHECKPOINTS = (10, 25, 50, 100)


def log10_regret_curve(record: dict) -> np.ndarray:
    """log10 regret after each evaluation; the best value so far where the
    optimum is unknown (``optimal_value`` None, e.g. a CV error). Where the
    record has noise-free ``true_values`` (noisy problems), the regret is that
    of the best noise-free value evaluated so far."""
    values = record.get("true_values", record["values"])
    best = np.minimum.accumulate(np.asarray(values, dtype=float))
    if record["optimal_value"] is None:
        return best
    regret = np.maximum(best - record["optimal_value"], 0.0)
    with np.errstate(divide="ignore"):
        return np.log10(regret)


def on_wrong_branch(record: dict, n: int) -> bool:
    """Whether the best noise-free point among the first ``n`` lies on a
    branch of the root choice other than the optimum's (records with
    ``branches``)."""
    values = record["true_values"][:n]
    best = min(range(len(values)), key=values.__getitem__)
    return record["branches"][best] != record["best_branch"]


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
    """Two-sided exact sign-test p-value of ``wins`` against ``losses`` (SciPy's
    binomial test at one half)."""
    from scipy.stats import binomtest

    n = wins + losses
    return 1.0 if n == 0 else float(binomtest(wins, n, 0.5).pvalue)


#: Log10 regrets closer than this count as equal in the paired counts (a
#: factor of 1.0023): runs that follow the same trajectory differ by float
#: round-off (1e-11 in the objective was seen between machines), which must
#: not count as a win.
TIE_LOG10 = 1e-3


#: Log10 regrets are clipped here for the signed-rank test: below it they are
#: round-off of the optimum (1e-16 of f* ~ 0.1), and -inf has no rank.
WILCOXON_FLOOR = -16.0


def paired_wilcoxon(
    base: dict[int, np.ndarray], other: dict[int, np.ndarray], checkpoint: int
) -> float:
    """Two-sided Wilcoxon signed-rank p-value of ``other`` against ``base``
    after ``checkpoint`` evaluations, over the seeds both reached it on (log10
    regrets clipped at ``WILCOXON_FLOOR``; ties within ``TIE_LOG10`` count as
    zero differences, split between the signs)."""
    from scipy.stats import wilcoxon

    seeds = [
        s
        for s in sorted(base.keys() & other.keys())
        if len(base[s]) >= checkpoint and len(other[s]) >= checkpoint
    ]
    if not seeds:
        return 1.0
    a = np.array([base[s][checkpoint - 1] for s in seeds]).clip(min=WILCOXON_FLOOR)
    b = np.array([other[s][checkpoint - 1] for s in seeds]).clip(min=WILCOXON_FLOOR)
    d = np.where(np.abs(b - a) <= TIE_LOG10, 0.0, b - a)
    if not d.any():
        return 1.0
    return float(wilcoxon(d, zero_method="zsplit").pvalue)


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


def group_runs(
    records: list[dict], seeds: set[int] | None = None
) -> dict[tuple[str, str], list[dict]]:
    """Records by ``(problem, method)``; a seed found twice keeps its longest run.

    Args:
        records: Records of the harness (:mod:`benchmarks.harness`).
        seeds: Only these seeds (default: all).
    """
    runs: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in records:
        if seeds is not None and r["seed"] not in seeds:
            continue
        key = (r["problem"], r["method"])
        same = [i for i, o in enumerate(runs[key]) if o["seed"] == r["seed"]]
        if not same:
            runs[key].append(r)
        elif len(r["values"]) > len(runs[key][same[0]]["values"]):
            runs[key][same[0]] = r
    return runs


def task_scores(
    runs: dict[tuple[str, str], list[dict]], problem: str, methods: list[str], c: int
) -> dict[str, dict[int, float]]:
    """``{method: {seed: value}}`` after ``c`` evaluations on ``problem``
    (log10 regret, or the best value where the optimum is unknown), over the runs
    that reached ``c``."""
    scores = {
        m: {
            r["seed"]: log10_regret_curve(r)[c - 1]
            for r in runs.get((problem, m), [])
            if len(r["values"]) >= c
        }
        for m in methods
    }
    return {m: by_seed for m, by_seed in scores.items() if by_seed}


def mean_ranks(
    runs: dict[tuple[str, str], list[dict]],
    problems: list[str],
    methods: list[str],
    c: int,
) -> dict[str, float]:
    """Each method's rank by median after ``c`` evaluations (1 = lowest, ties
    share their mean rank), averaged over the problems every method ran; the
    medians are over the seeds every method reached ``c`` on (a method with fewer
    seeds is compared on its own seeds, not on its peers' others)."""
    from scipy.stats import rankdata

    ranks: dict[str, list[float]] = defaultdict(list)
    for problem in problems:
        scores = task_scores(runs, problem, methods, c)
        if len(scores) < len(methods):
            continue
        seeds = set.intersection(*(set(scores[m]) for m in methods))
        if not seeds:
            continue
        medians = [float(np.median([scores[m][s] for s in seeds])) for m in methods]
        for m, rank in zip(methods, rankdata(medians), strict=True):
            ranks[m].append(float(rank))
    return {m: float(np.mean(v)) for m, v in ranks.items()}


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjustment of ``p_values`` (same order)."""
    order = np.argsort(p_values)
    adjusted = np.empty(len(p_values))
    running = 0.0
    for i, j in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - i) * p_values[j]))
        adjusted[j] = running
    return adjusted.tolist()


def pooled_wilcoxon(
    runs: dict[tuple[str, str], list[dict]],
    problems: list[str],
    first: str,
    peer: str,
    c: int,
) -> tuple[int, int, float]:
    """Wins, losses and the two-sided Wilcoxon signed-rank p-value of
    ``first`` against ``peer`` after ``c`` evaluations, pooled over the
    ``(problem, seed)`` pairs; each problem's differences are divided by the
    interquartile range of both methods' values on it, so that no task's
    units dominate."""
    from scipy.stats import wilcoxon

    diffs = []
    for problem in problems:
        scores = task_scores(runs, problem, [first, peer], c)
        if len(scores) < 2:
            continue
        seeds = sorted(set(scores[first]) & set(scores[peer]))
        ours = np.array([scores[first][s] for s in seeds])
        theirs = np.array([scores[peer][s] for s in seeds])
        both = np.concatenate([ours, theirs])
        finite = both[np.isfinite(both)]
        q1, q3 = np.percentile(finite, [25, 75]) if finite.size else (0.0, 1.0)
        scale = q3 - q1 if q3 > q1 else 1.0
        diffs += ((ours - theirs) / scale).tolist()
    d = np.array(diffs)
    d = d[np.isfinite(d)]
    wins, losses = int((d < 0).sum()), int((d > 0).sum())
    if wins + losses == 0:
        return wins, losses, 1.0
    return wins, losses, float(wilcoxon(d, zero_method="zsplit").pvalue)
