#!/usr/bin/env python3
"""Summarizes bench/rpc/run.sh's results.jsonl as the markdown tables of
docs/performance_rpc.md.

Every figure is the median over repetitions with (min-max). A ratio to the
near-null RPC is computed within each repetition (Predict and health measured
back to back) and then summarized the same way, so a noisy minute shared by
both sides cancels out.

  python3 bench/rpc/summarize.py bench/out/rpc/results.jsonl
"""
import collections
import json
import statistics
import sys


def load(path):
    runs = collections.defaultdict(dict)  # case -> rep -> result
    loads = collections.defaultdict(dict)
    with open(path) as f:
        for line in f:
            if not line.strip():
                continue
            row = json.loads(line)
            result = dict(row["result"])
            result["server_cpu_us_per_call"] = row.get("server_cpu_us_per_call")
            runs[row["case"]][row["rep"]] = result
            loads[row["case"]][row["rep"]] = row["load1"]
    return runs, loads


def fmt(values, digits=0, suffix=""):
    values = [v for v in values if v is not None]
    if not values:
        return "n/a"
    med = statistics.median(values)
    f = f"{{:,.{digits}f}}"
    if len(values) == 1:
        return f.format(med) + suffix
    return f"{f.format(med)}{suffix} ({f.format(min(values))}-{f.format(max(values))})"


class Table:
    def __init__(self, runs):
        self.runs = runs

    def values(self, case, field):
        return [r.get(field) for _, r in sorted(self.runs.get(case, {}).items())]

    def ratios(self, num_case, num_field, den_case, den_field):
        num, den = self.runs.get(num_case, {}), self.runs.get(den_case, {})
        out = []
        for rep in sorted(set(num) & set(den)):
            a, b = num[rep].get(num_field), den[rep].get(den_field)
            if a is not None and b:
                out.append(a / b)
        return out

    def errors(self, case):
        return sum(r.get("errors", 0) for r in self.runs.get(case, {}).values())


def main():
    runs, loads = load(sys.argv[1])
    t = Table(runs)
    reps = max((len(v) for v in runs.values()), default=0)
    all_loads = [l for case in loads.values() for l in case.values()]
    print(f"Figures: median (min-max) over {reps} repetitions. Ratios are computed per "
          "repetition against the health check measured right before, then summarized.")
    print(f"1-minute load average before the measurements: {fmt(all_loads, 2)}.")
    print()

    print("### Predict (1 candidate x 40 features) beside the near-null RPC")
    print()
    print("| measure | health Check | Predict 1x40 | ratio (Predict / health) | target |")
    print("|---|---|---|---|---|")
    rows = [
        ("p50 latency, 1 in flight (us)", "health_c1", "predict1x40_c1", "p50_us", 1, "<= 1.15"),
        ("p99 latency, 1 in flight (us)", "health_c1", "predict1x40_c1", "p99_us", 1, ""),
        ("throughput, 64 in flight (calls/s)", "health_c64", "predict1x40_c64", "rate", 0,
         ">= 0.85"),
        ("p50 latency, 64 in flight (us)", "health_c64", "predict1x40_c64", "p50_us", 0, ""),
        ("open loop 5k/s: achieved (calls/s)", "health_q5k", "predict1x40_q5k", "rate", 0, ""),
        ("open loop 5k/s: p50 (us)", "health_q5k", "predict1x40_q5k", "p50_us", 1, ""),
        ("open loop 5k/s: p99 (us)", "health_q5k", "predict1x40_q5k", "p99_us", 0, ""),
        ("open loop 10k/s: achieved (calls/s)", "health_q10k", "predict1x40_q10k", "rate", 0,
         ""),
        ("open loop 10k/s: p50 (us)", "health_q10k", "predict1x40_q10k", "p50_us", 1, ""),
        ("open loop 10k/s: p99 (us)", "health_q10k", "predict1x40_q10k", "p99_us", 0, ""),
    ]
    for label, base, case, field, digits, target in rows:
        print(f"| {label} | {fmt(t.values(base, field), digits)} | "
              f"{fmt(t.values(case, field), digits)} | "
              f"{fmt(t.ratios(case, field, base, field), 2, 'x')} | {target} |")
    print()
    print("The same Predict with the 40 features sent as pre-hashed 64-bit ids "
          "(`--feature_ids`) instead of names:")
    print()
    print("| measure | health Check | Predict 1x40, ids | ratio (Predict / health) |")
    print("|---|---|---|---|")
    for label, base, case, field, digits in [
            ("p50 latency, 1 in flight (us)", "health_c1", "predict1x40ids_c1", "p50_us", 1),
            ("p99 latency, 1 in flight (us)", "health_c1", "predict1x40ids_c1", "p99_us", 1),
            ("throughput, 64 in flight (calls/s)", "health_c64", "predict1x40ids_c64", "rate", 0)]:
        print(f"| {label} | {fmt(t.values(base, field), digits)} | "
              f"{fmt(t.values(case, field), digits)} | "
              f"{fmt(t.ratios(case, field, base, field), 2, 'x')} |")
    print()
    lag = [("health 5k/s", "health_q5k"), ("Predict 5k/s", "predict1x40_q5k"),
           ("health 10k/s", "health_q10k"), ("Predict 10k/s", "predict1x40_q10k")]
    print("Open loop, worst send lag of the client (us): " + "; ".join(
        f"{name} {fmt(t.values(case, 'max_send_lag_us'))}" for name, case in lag) + ".")
    print()

    print("### Predict with a shared context: 20 context features + 100 candidates x 20")
    print()
    print("| measure | 20 + 1x20 (one candidate) | 20 + 100x20 | ratio (100 / 1) | "
          "100-candidate / health |")
    print("|---|---|---|---|---|")
    rows = [
        ("p50 latency, 1 in flight (us)", "_c1", "p50_us", 1, "health_c1"),
        ("p99 latency, 1 in flight (us)", "_c1", "p99_us", 1, "health_c1"),
        ("requests/s, 8 in flight", "_c8", "rate", 0, "health_c8"),
        ("candidates/s, 8 in flight", "_c8", "candidates_per_second", 0, None),
        ("p50 latency, 8 in flight (us)", "_c8", "p50_us", 0, "health_c8"),
    ]
    for label, suffix, field, digits, base in rows:
        one, wide = "predict20+1x20" + suffix, "predict20+100x20" + suffix
        vs_health = fmt(t.ratios(wide, field, base, field), 2, "x") if base else ""
        print(f"| {label} | {fmt(t.values(one, field), digits)} | "
              f"{fmt(t.values(wide, field), digits)} | "
              f"{fmt(t.ratios(wide, field, one, field), 2, 'x')} | {vs_health} |")
    print()
    cost = t.ratios("predict20+1x20_c8", "rate", "predict20+100x20_c8", "rate")
    print(f"One 100-candidate request costs as much server time as "
          f"{fmt(cost, 1)} single-candidate requests (throughput ratio at 8 in flight; "
          "100 would mean no saving from the shared context and the batching).")
    print()

    print("### CPU time per call (server: all threads, from /proc; client: clickctl loadgen)")
    print()
    print("Less sensitive to other processes than the timings: a busy neighbour slows a call "
          "down but hardly changes the CPU time it takes. Warmup calls included.")
    print()
    print("| case | server CPU (us/call) | server / health | client CPU (us/call) | "
          "client / health |")
    print("|---|---|---|---|---|")
    cpu_rows = [
        ("health, 1 in flight", "health_c1", "health_c1"),
        ("Predict 1x40, 1 in flight", "predict1x40_c1", "health_c1"),
        ("health, 64 in flight", "health_c64", "health_c64"),
        ("Predict 1x40, 64 in flight", "predict1x40_c64", "health_c64"),
        ("Predict 1x40 as pre-hashed ids, 1 in flight", "predict1x40ids_c1", "health_c1"),
        ("Predict 1x40 as pre-hashed ids, 64 in flight", "predict1x40ids_c64", "health_c64"),
        ("health, 8 in flight", "health_c8", "health_c8"),
        ("Predict 20 + 1x20, 8 in flight", "predict20+1x20_c8", "health_c8"),
        ("Predict 20 + 100x20, 8 in flight", "predict20+100x20_c8", "health_c8"),
        ("Update 1x40, 1 in flight", "update1x40_c1", "health_c1"),
        ("UpdateStream, per 100-example message", "update_stream_b100", None),
    ]
    for label, case, base in cpu_rows:
        s_ratio = fmt(t.ratios(case, "server_cpu_us_per_call", base, "server_cpu_us_per_call"),
                      2, "x") if base and base != case else ""
        c_ratio = fmt(t.ratios(case, "client_cpu_us_per_call", base, "client_cpu_us_per_call"),
                      2, "x") if base and base != case else ""
        print(f"| {label} | {fmt(t.values(case, 'server_cpu_us_per_call'), 1)} | {s_ratio} | "
              f"{fmt(t.values(case, 'client_cpu_us_per_call'), 1)} | {c_ratio} |")
    print()
    wide_cpu = t.ratios("predict20+100x20_c8", "server_cpu_us_per_call", "predict20+1x20_c8",
                        "server_cpu_us_per_call")
    print(f"By server CPU, one 100-candidate request costs {fmt(wide_cpu, 1)} single-candidate "
          "requests of the same context.")
    print()

    print("### Learning")
    print()
    print("| measure | value | ratio |")
    print("|---|---|---|")
    print(f"| UpdateStream, 100 examples x 40 features per message: examples/s | "
          f"{fmt(t.values('update_stream_b100', 'examples_per_second'))} | |")
    print(f"| UpdateStream: messages/s | {fmt(t.values('update_stream_b100', 'rate'))} | |")
    print(f"| unary Update (1 example x 40), 1 in flight: p50 (us) | "
          f"{fmt(t.values('update1x40_c1', 'p50_us'), 1)} | "
          f"{fmt(t.ratios('update1x40_c1', 'p50_us', 'health_c1', 'p50_us'), 2, 'x')} of health |")
    print(f"| unary Update (1 example x 40), 1 in flight: p99 (us) | "
          f"{fmt(t.values('update1x40_c1', 'p99_us'), 1)} | "
          f"{fmt(t.ratios('update1x40_c1', 'p99_us', 'health_c1', 'p99_us'), 2, 'x')} of health |")
    print()
    errors = {case: t.errors(case) for case in sorted(runs)}
    bad = {c: e for c, e in errors.items() if e}
    print("Errors: " + (", ".join(f"{c} {e}" for c, e in bad.items()) if bad else
                        "none in any run") + ".")


if __name__ == "__main__":
    main()
