#!/usr/bin/env python3
"""Summarizes run.sh's end-to-end replays (one JSON object per line) as a
Markdown table per dataset: median (min-max) over the runs of each optimizer.

Each input line: {"dataset", "optimizer", "run", "rss_kb", "user", "sys",
"elapsed", "replay": <the JSON line of clickctl replay --json>}.
Standard library only.
"""
import json
import statistics
import sys
from collections import defaultdict


def fmt_si(v):
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if v >= div:
            return f"{v / div:.3g}{suffix}" if v / div < 100 else f"{v / div:.0f}{suffix}"
    return f"{v:.0f}"


def med_range(values, fmt):
    return f"{fmt(statistics.median(values))} ({fmt(min(values))}-{fmt(max(values))})"


def main(path):
    runs = defaultdict(list)
    order = []
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            key = (r["dataset"], r["optimizer"])
            if key not in runs:
                order.append(key)
            runs[key].append(r)
    dataset = None
    for key in order:
        rs = runs[key]
        if key[0] != dataset:
            dataset = key[0]
            print(f"\n{dataset}: clickctl replay --offline, text parsing included, "
                  f"pinned to CPU 1; median (min-max) of {len(rs)} runs")
            print("| optimizer | examples/s | features/s | wall us/example | CPU us/example "
                  "| peak RSS MiB | coordinates | table bytes | bytes/coord | logloss | AUC "
                  "| digests |")
            print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        rep = [r["replay"] for r in rs]
        n = rep[0]["examples"]
        eps = [x["examples_per_second"] for x in rep]
        fps = [x["features_per_second"] for x in rep]
        wall_us = [1e6 / x for x in eps]
        # Process CPU time includes start-up and the final digest, a few ms.
        cpu_us = [(r["user"] + r["sys"]) / n * 1e6 for r in rs]
        rss = [r["rss_kb"] / 1024 for r in rs if r["rss_kb"] is not None]
        digests = {x["model_digest"] for x in rep}
        timed = rss != []  # without GNU time there is no RSS or CPU time
        # GNU time counts CPU in 10 ms ticks: too coarse for sub-second runs.
        cpu_known = timed and min(r["user"] + r["sys"] for r in rs) >= 1.0
        cells = [
            key[1],
            med_range(eps, fmt_si),
            med_range(fps, fmt_si),
            med_range(wall_us, lambda v: f"{v:.2f}"),
            f"{statistics.median(cpu_us):.2f}" if cpu_known else "-",
            f"{statistics.median(rss):.0f}" if timed else "-",
            str(rep[0]["coordinates"]),
            str(rep[0]["bytes"]),
            f"{rep[0]['bytes_per_coordinate']:.1f}",
            f"{rep[0]['logloss']:.5f}",
            f"{rep[0]['auc']:.4f}",
            "identical" if len(digests) == 1 else "DIFFER",
        ]
        print("| " + " | ".join(cells) + " |")

if __name__ == "__main__":
    main(sys.argv[1])
