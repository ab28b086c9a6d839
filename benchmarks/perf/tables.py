"""Markdown tables of the timing and robustness records in ``perf/records/``.

Each function takes the records of one script and returns its table; ratios
compare numbers of one record (one run, one machine).
"""

from __future__ import annotations

from collections import defaultdict


def flag_scaling(records: list[dict]) -> str:
    """Seconds per proposal against the number of flags (2^k paths)."""
    lines = [
        "| flags k | paths | flags activate parameters | treebo s | flat GP s "
        "| flat / treebo | machine, date |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in sorted(records, key=lambda r: (r["activating"], r["k"])):
        lines.append(
            f"| {r['k']} | {r['paths']:,} | {'yes' if r['activating'] else 'no'} "
            f"| {r['treebo']:.2f} | {r['flat_alt']:.2f} "
            f"| {r['flat_alt'] / r['treebo']:.2f}x | {r['machine']}, {r['date']} |"
        )
    return "\n".join(lines)


def tree_additive_scaling(records: list[dict]) -> str:
    """Seconds per iteration of the tree-additive strategy and vanilla BoTorch."""
    lines = [
        "| d | n | refit every | tree_additive s/iteration | vanilla BoTorch s "
        "| vanilla / tree_additive | machine, date |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in sorted(records, key=lambda r: (r["refit_interval"], r["d"])):
        if "d" not in r or "per_iteration" not in r:
            continue
        vanilla = r.get("vanilla")
        cells = (
            ("-", "-")
            if vanilla is None
            else (f"{vanilla:.2f}", f"{vanilla / r['per_iteration']:.1f}x")
        )
        lines.append(
            f"| {r['d']} | {r['n']} | {r['refit_interval']} "
            f"| {r['per_iteration']:.2f} | {cells[0]} | {cells[1]} "
            f"| {r['machine']}, {r['date']} |"
        )
    return "\n".join(lines)


def scaling(records: list[dict]) -> str:
    """Seconds and peak memory of one proposal against ``n`` and the tree's size."""

    def cell(entry: dict | None, key: str = "cold") -> str:
        if entry is None:
            return "-"
        if "timeout" in entry:
            return f"> {entry['timeout']:.0f}"
        if "error" in entry:
            return "failed"
        return f"{entry[key]:.1f} ({entry['peak_growth_mib']:.0f} MiB)"

    lines = [
        "| problem | n | treebo cold | treebo warm | flat GP | HCK "
        "| flat / treebo cold | machine, torch, date |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        treebo, flat = r.get("treebo"), r.get("flat")
        ratio = "-"
        if treebo and flat and "cold" in treebo and "cold" in flat:
            ratio = f"{flat['cold'] / treebo['cold']:.2f}x"
        warm = "-" if not treebo or "warm" not in treebo else f"{treebo['warm']:.1f}"
        lines.append(
            f"| {r['problem']} | {r['n']:,} | {cell(treebo)} | {warm} "
            f"| {cell(flat)} | {cell(r.get('hck'))} | {ratio} "
            f"| {r['machine']}, {r['torch']}, {r['date']} |"
        )
    return "\n".join(lines)


def block_likelihood(records: list[dict]) -> str:
    """Marginal likelihood and gradient, block by block against dense."""
    lines = [
        "| n | branches | block sizes | GPyTorch dense s | treebo dense s "
        "| blocks s | dense / blocks | largest difference (value, gradient) "
        "| posterior's factor, dense / blocks s (difference) "
        "| machine, torch, date |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        sizes = r["block_sizes"]
        posterior = "not measured"
        if "posterior_blocks" in r:
            posterior = (
                f"{r['posterior_dense']:.3f} / {r['posterior_blocks']:.3f} "
                f"({r['posterior_difference']:.1e})"
            )
        lines.append(
            f"| {r['n']:,} | {r['branches']} | {min(sizes)}-{max(sizes)} "
            f"| {r['gpytorch_dense']:.2f} | {r['dense']:.2f} | {r['blocks']:.3f} "
            f"| {r['dense'] / r['blocks']:.1f}x "
            f"({r['gpytorch_dense'] / r['blocks']:.0f}x GPyTorch's) "
            f"| {r['value_difference']:.1e}, {r['gradient_difference']:.1e} "
            f"| {posterior} | {r['machine']}, {r['torch']}, {r['date']} |"
        )
    return "\n".join(lines)


def fault_injection(records: list[dict]) -> str:
    """Killed runs: evaluations lost or repeated on resumption."""
    by = defaultdict(list)
    for r in records:
        by[r["mode"]].append(r)
    lines = [
        "| kill moment | runs | kills | evaluations told | lost | repeated | date |",
        "|---|---|---|---|---|---|---|",
    ]
    for mode, rs in sorted(by.items()):
        dates = sorted({r["date"] for r in rs})
        lines.append(
            f"| {mode} | {len(rs)} | {sum(r['kills'] for r in rs)} "
            f"| {sum(r['told'] for r in rs)} | {sum(r['lost'] for r in rs)} "
            f"| {sum(r['repeated'] for r in rs)} | {', '.join(dates)} |"
        )
    return "\n".join(lines)


def pool_scaling(records: list[dict]) -> str:
    """Seconds of one proposal from a pool, and memory, against its size."""
    lines = [
        "| pool | n | treebo s | flat GP s | treebo / flat | peak memory growth "
        "| machine, date |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in sorted(records, key=lambda r: (r["n"], r["pool"])):
        lines.append(
            f"| {r['pool']:,} | {r['n']} | {r['treebo']:.2f} | {r['flat_gp']:.2f} "
            f"| {r['treebo'] / r['flat_gp']:.2f}x | {r['peak_growth_mib']:.0f} MiB "
            f"| {r['machine']}, {r['date']} |"
        )
    return "\n".join(lines)


def bktf_iteration(records: list[dict]) -> str:
    """Seconds of one BKTF iteration: MCMC plus the acquisition over the grid."""
    lines = [
        "| grid | points | n | rank | samples | acquisition | MCMC s | grid "
        "acquisition s | total s | machine, date |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in sorted(
        records, key=lambda r: (r["grid_points"], r["n"], r["acquisition"])
    ):
        lines.append(
            f"| {r['grid']} | {r['grid_points']:,} | {r['n']} | {r['rank']} "
            f"| {r['samples']} | {r['acquisition']} | {r['mcmc_seconds']:.1f} "
            f"| {r['acquisition_seconds']:.1f} | {r['total_seconds']:.1f} "
            f"| {r['machine']}, {r['date']} |"
        )
    return "\n".join(lines)


def cold_ask(records: list[dict]) -> str:
    """One cold ``ask()`` against the flat GP's proposal, in one process."""
    lines = [
        "| n | threads | treebo s (fit / optimize) | flat GP s | ratio "
        "| marginal-likelihood evaluations | machine, torch |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in records:
        stages = r["stages"]
        lines.append(
            f"| {r['n']} | {r['threads']} | {r['treebo_seconds']:.1f} "
            f"({stages.get('fit', 0):.1f} / {stages.get('optimize', 0):.1f}) "
            f"| {r['flat_seconds']:.1f} | {r['ratio']:.2f} | {r['mll_evaluations']} "
            f"| {r['machine']}, {r['torch']} |"
        )
    return "\n".join(lines)


def best_values(record: dict) -> str:
    """Where rows differ, how the runs' best values compare (P1(a) records)."""
    if "lockstep_best" not in record:
        return ""
    pairs = zip(record["lockstep_best"], record["alone_best"], strict=True)
    equal = sum(abs(a - b) <= 1e-12 for a, b in pairs)
    return f" (best values within 1e-12 on {equal})"


def lockstep(records: list[dict]) -> str:
    """Runs in lockstep against one by one (fits and, where recorded, the
    acquisitions' evaluations batched)."""
    lines = [
        "| space | runs x budget | lockstep s | one by one s | speed-up | same rows "
        "| rounds | batched fit evaluations (mean batch) "
        "| batched acquisition evaluations (mean batch) | fallbacks "
        "| machine, torch, date |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        alone = r.get("alone_s")
        lines.append(
            f"| {r['space']} | {r['runs']} x {r['budget']} | {r['lockstep_s']:.0f} "
            + (
                f"| {alone:.0f} | {alone / r['lockstep_s']:.1f}x "
                f"| {r['same_rows']} of {r['runs']}{best_values(r)} "
                if alone is not None
                else "| | | "
            )
            + f"| {r['rounds']:,} | {r['evaluations']:,} ({r['mean_batch']:.1f}) "
            + (
                f"| {r['acquisition_evaluations']:,} "
                f"({r['acquisition_mean_batch']:.1f}) "
                if "acquisition_evaluations" in r
                else "| not batched "
            )
            + f"| {r['fallbacks'] + r.get('acquisition_fallbacks', 0)} "
            f"| {r['machine']}, {r['versions']['torch']}, "
            f"{r['date']} |"
        )
    return "\n".join(lines)
