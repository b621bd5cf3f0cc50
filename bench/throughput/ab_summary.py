#!/usr/bin/env python3
"""Summarizes ab.sh's before/after replays (bench/out/ab.jsonl) as a Markdown
table: per dataset and optimizer, median (min-max) CPU and wall time per
example for each build, the after/before ratio of the medians and the median
of the per-round ratios, and whether the progressive metrics agree.

CPU is user+sys of the whole process(es) under GNU time, so it includes
start-up and the final model digest. Standard library only.
"""
import json
import statistics
import sys
from collections import defaultdict


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
    loads = [r["load1"] for rs in runs.values() for r in rs]
    pressures = [r["cpu_some_avg10"] for rs in runs.values() for r in rs
                 if r["cpu_some_avg10"] is not None]
    print(f"\nload average (1 min) before each run: median {statistics.median(loads):.1f}, "
          f"range {min(loads):.1f}-{max(loads):.1f}; CPU pressure (some, avg10) "
          + (f"{min(pressures):.0f}-{max(pressures):.0f}%" if pressures else "unknown"))
    print("\n| dataset | optimizer | runs | before CPU us/ex | after CPU us/ex | CPU after/before "
          "(paired) | before wall us/ex | after wall us/ex | wall after/before (paired) "
          "| logloss | AUC | max abs diff | digests |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for key in order:
        per = {"before": {}, "after": {}}
        for r in runs[key]:
            examples = sum(x["examples"] for x in r["replay"])
            per[r["version"]][r["round"]] = {
                "cpu": (r["user"] + r["sys"]) / examples * 1e6,
                "wall": r["elapsed"] / examples * 1e6,
                "metrics": [(x["logloss"], x["auc"]) for x in r["replay"]],
                "digests": {x["model_digest"] for x in r["replay"]},
            }
        rounds = sorted(set(per["before"]) & set(per["after"]))
        cells = [key[0], key[1], str(len(rounds))]
        for field in ("cpu", "wall"):
            b = [per["before"][k][field] for k in rounds]
            a = [per["after"][k][field] for k in rounds]
            paired = [per["after"][k][field] / per["before"][k][field] for k in rounds]
            fmt = lambda v: f"{v:.2f}"
            cells += [med_range(b, fmt), med_range(a, fmt),
                      f"{statistics.median(a) / statistics.median(b):.2f} "
                      f"({statistics.median(paired):.2f}; {min(paired):.2f}-{max(paired):.2f})"]
        mb = [m for k in rounds for m in per["before"][k]["metrics"]]
        ma = [m for k in rounds for m in per["after"][k]["metrics"]]
        diff = max(abs(x[i] - y[i]) for x in mb for y in ma for i in (0, 1))
        db = set().union(*(per["before"][k]["digests"] for k in rounds))
        da = set().union(*(per["after"][k]["digests"] for k in rounds))
        cells += [f"{ma[0][0]:.6f}", f"{ma[0][1]:.6f}", f"{diff:.1e}",
                  ("same" if db == da else "differ") + f" (before {len(db)}, after {len(da)})"]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1])
