#!/usr/bin/env python3
"""Prints the tables of docs/performance_replication.md from the JSON that
replication_bench --out writes (bench/out/replication/results.json)."""
import json
import statistics
import sys


def med(xs):
    return statistics.median(xs)


def main(path):
    r = json.load(open(path))
    cells = {}
    for c in r["throughput"]:
        cells.setdefault((c["writers"], c["batch"]), {}).setdefault(c["system"], []).append(c)
    print("| writers | batch | file log updates/s | examples/s | replicated updates/s | examples/s | ratio | per-run range |")
    print("|---|---|---|---|---|---|---|---|")
    for (w, b), d in cells.items():
        f, p = d["file_log"], d["replicated"]
        ratios = sorted(x["updates_per_s"] / y["updates_per_s"] for x, y in zip(p, f))
        print(f"| {w} | {b} | {med([x['updates_per_s'] for x in f]):.0f} | "
              f"{med([x['examples_per_s'] for x in f]):,.0f} | "
              f"{med([x['updates_per_s'] for x in p]):.0f} | "
              f"{med([x['examples_per_s'] for x in p]):,.0f} | **{med(ratios):.2f}** | "
              f"{ratios[0]:.2f}–{ratios[-1]:.2f} |")
    print()
    print("| writers | batch | file log p50 | p99 | replicated p50 | p99 | p50 ratio | p99 ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for (w, b), d in cells.items():
        f, p = d["file_log"], d["replicated"]
        ack = lambda xs, k: med([x["ack"][k] for x in xs]) / 1000
        print(f"| {w} | {b} | {ack(f, 'p50_us'):.2f} | {ack(f, 'p99_us'):.2f} | "
              f"{ack(p, 'p50_us'):.2f} | {ack(p, 'p99_us'):.2f} | "
              f"{ack(p, 'p50_us') / ack(f, 'p50_us'):.1f}× | {ack(p, 'p99_us') / ack(f, 'p99_us'):.1f}× |")
    print()
    print("| load | Update ack on A p50 / p99 | ack → applied on B and C p50 / p99 | on one replica p50 / p99 | floor (Predict RTT) p50 / p99 |")
    print("|---|---|---|---|---|")
    for l in r["lag"]:
        ms = lambda k: f"{l[k]['p50_us'] / 1000:.2f} / {l[k]['p99_us'] / 1000:.2f} ms"
        print(f"| {l['load']} ({l['background_updates_per_s']:.0f} background updates/s) | {ms('ack')} | "
              f"**{ms('lag_all_replicas')}** | {ms('lag_one_replica')} | {ms('predict_floor')} |")
    print()
    print("| case | p50 per run | p99 per run | background updates/s | records C applied |")
    print("|---|---|---|---|---|")
    by_case = {}
    for p in r["predict"]:
        by_case.setdefault(p["case"], []).append(p)
    for case, runs in by_case.items():
        print(f"| {case} | {', '.join('%.2f' % (x['latency']['p50_us'] / 1000) for x in runs)} ms | "
              f"{', '.join('%.1f' % (x['latency']['p99_us'] / 1000) for x in runs)} ms | "
              f"{', '.join('%.0f' % x['background_updates_per_s'] for x in runs)} | "
              f"{', '.join(str(x['records_applied_meanwhile']) for x in runs)} |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "bench/out/replication/results.json")
