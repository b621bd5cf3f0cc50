#!/usr/bin/env python3
"""Turns bench/vw_compare's results.jsonl into the tables of
docs/performance_rpc.md ("Against Vowpal Wabbit's daemon").

Every cell is the median over the repetitions with (min-max); every ratio is
computed within a repetition (clickd and VW measured one right after the
other) before taking the median.

    python3 bench/vw_compare/summarize.py bench/out/vw_compare/results.jsonl
"""
import json
import statistics
import sys


def load(path):
    rows = {}
    with open(path) as f:
        for line in f:
            row = json.loads(line)
            rows[(row["case"], row["rep"])] = row
    return rows


def fmt(x):
    if x is None:
        return "-"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    if abs(x) >= 100:
        return f"{x:.1f}"
    return f"{x:.2f}"


def cell(values, suffix=""):
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    med = statistics.median(values)
    if len(values) == 1:
        return fmt(med) + suffix
    return f"{fmt(med)}{suffix} ({fmt(min(values))}-{fmt(max(values))})"


def measures():
    """(label, function of a row) for each line of a case's table."""
    return [
        ("candidates/s", lambda r: r["result"]["candidates_per_second"]),
        ("p50 latency of a request (us)", lambda r: r["result"]["p50_us"]),
        ("p99 latency of a request (us)", lambda r: r["result"]["p99_us"]),
        ("server CPU per candidate (us)", lambda r: r.get("server_cpu_us_per_candidate")),
        ("client CPU per request (us)", lambda r: r["result"]["client_cpu_us_per_call"]),
    ]


def case_table(rows, reps, case, title, wire=""):
    """wire: "" for clickd's Feature messages, "_packed" or "_keys" for the
    packed wire forms (clickctl loadgen --wire)."""
    have_vw = any((f"{case}_vw_c1", rep) in rows for rep in reps)
    if wire:
        title += f", clickd with --wire={wire[1:]}"
    print(f"#### {title}\n")
    print("| measure | in flight | clickd | VW daemon | clickd / VW |")
    print("|---|---|---|---|---|")
    for label, get in measures():
        for n in (1, 8):
            c = [get(rows[(f"{case}_clickd{wire}_c{n}", rep)]) for rep in reps
                 if (f"{case}_clickd{wire}_c{n}", rep) in rows]
            v = [get(rows[(f"{case}_vw_c{n}", rep)]) for rep in reps
                 if (f"{case}_vw_c{n}", rep) in rows]
            ratios = []
            for rep in reps:
                a = rows.get((f"{case}_clickd{wire}_c{n}", rep))
                b = rows.get((f"{case}_vw_c{n}", rep))
                if a and b and get(a) is not None and get(b):
                    ratios.append(get(a) / get(b))
            vw_cell = cell(v) if have_vw else "skipped (no VW_BIN)"
            print(f"| {label} | {n} | {cell(c)} | {vw_cell} | {cell(ratios, 'x')} |")
    print()


def health_table(rows, reps):
    print("#### The floor: clickd's health check, same run\n")
    print("| measure | 1 in flight | 8 in flight |")
    print("|---|---|---|")
    for label, get in [
        ("calls/s", lambda r: r["result"]["rate"]),
        ("p50 latency (us)", lambda r: r["result"]["p50_us"]),
        ("server CPU per call (us)", lambda r: r["server_cpu_us_per_call"]),
    ]:
        cells = [cell([get(rows[(f"health_c{n}", rep)]) for rep in reps
                       if (f"health_c{n}", rep) in rows]) for n in (1, 8)]
        print(f"| {label} | {cells[0]} | {cells[1]} |")
    print()


def main():
    rows = load(sys.argv[1])
    reps = sorted({rep for (_, rep) in rows})
    loads = [r["load1"] for r in rows.values()]
    errors = sum(r["result"]["errors"] for r in rows.values())
    print(f"{len(reps)} repetitions; 1-minute load before the measurements "
          f"{statistics.median(loads):.1f} ({min(loads):.1f}-{max(loads):.1f}); "
          f"errors: {errors}\n")
    for wire in ("", "_packed", "_keys"):
        if not any(c == f"a_clickd{wire}_c1" for (c, _) in rows):
            continue
        case_table(rows, reps, "a", "a. 100 candidates x 40 features, no context", wire)
        case_table(rows, reps, "b", "b. 20 context features + 100 candidates x 20 features", wire)
    health_table(rows, reps)
    shares = [r["result"].get("client_cpu_share") for r in rows.values()
              if r["server"] == "vw"]
    shares = [s for s in shares if s is not None]
    if shares:
        print(f"vw_loadgen's own CPU use, share of its core: median {statistics.median(shares):.2f}"
              f" (max {max(shares):.2f})")
    for case in ("a", "b"):
        for n in (1, 8):
            reads = [r["result"]["reads_per_request"] for (c, _), r in rows.items()
                     if c == f"{case}_vw_c{n}" and "reads_per_request" in r["result"]]
            if reads:
                print(f"\nvw_loadgen, case {case}, {n} in flight: the 100 answer lines arrive in "
                      f"{statistics.median(reads):.1f} reads per request (median)")


if __name__ == "__main__":
    main()
