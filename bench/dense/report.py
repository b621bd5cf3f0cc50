#!/usr/bin/python3
"""Reads bench/dense/run.sh's step.tsv; prints the markdown table of
docs/performance_dense.md (step time, state bytes, growth with d and the
ratios to ADA-FULL) and draws docs/img/dense_step_time.png.

    /usr/bin/python3 bench/dense/report.py bench/out/dense
"""
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def human_ns(ns):
    if ns >= 1e9:
        return "%.2f s" % (ns / 1e9)
    if ns >= 1e6:
        return "%.2f ms" % (ns / 1e6)
    if ns >= 1e3:
        return "%.1f us" % (ns / 1e3)
    return "%.0f ns" % ns


def human_bytes(b):
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if b >= size:
            return "%.3g %s" % (b / size, unit)
    return "%d B" % b


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "bench/out/dense"
    rows = []
    with open(os.path.join(out, "step.tsv")) as f:
        for line in f:
            if line.startswith("#") or line.startswith("name"):
                if line.startswith("#"):
                    print("    " + line.rstrip())
                continue
            p = line.split("\t")
            rows.append({"name": p[0], "d": int(p[1]), "tau": int(p[2]), "steps": int(p[3]),
                         "repeats": int(p[4]), "median": float(p[5]), "min": float(p[6]),
                         "max": float(p[7]), "cpu": float(p[8]), "bytes": int(p[9])})
    by = {(r["name"], r["d"], r["tau"]): r for r in rows}
    print()
    print("| optimizer | d | tau | ns/step (median wall) | min-max | CPU ns/step | x per 4x d |"
          " state | runs x rounds |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        prev = by.get((r["name"], r["d"] // 4, r["tau"]))
        growth = "%.1f" % (r["median"] / prev["median"]) if prev else ""
        print("| %s | %d | %s | %s | %s - %s | %s | %s | %s | %d x %d |" % (
            r["name"], r["d"], r["tau"] or "", human_ns(r["median"]), human_ns(r["min"]),
            human_ns(r["max"]), human_ns(r["cpu"]), growth, human_bytes(r["bytes"]),
            r["repeats"], r["steps"]))
    print()
    for d in sorted({r["d"] for r in rows}):
        full = by.get(("ada_full", d, 0))
        if not full:
            continue
        for tau in (10, 40):
            fd = by.get(("ada_fd", d, tau))
            if fd:
                print("- d = %d: ADA-FULL / ADA-FD(tau=%d) step time = %.0fx, state = %.0fx" % (
                    d, tau, full["median"] / fd["median"], full["bytes"] / fd["bytes"]))

    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    series = [("ada_diag", 0, "ADA-DIAG", "tab:green", "o"),
              ("ada_fd", 10, "ADA-FD tau=10", "tab:red", "o"),
              ("ada_fd", 40, "ADA-FD tau=40", "tab:red", "s"),
              ("fd_son", 10, "FD-SON tau=10", "tab:purple", "o"),
              ("ons", 0, "ONS", "tab:orange", "^"),
              ("ada_full", 0, "ADA-FULL", "tab:blue", "^")]
    for name, tau, label, color, marker in series:
        pts = sorted((r["d"], r["median"]) for r in rows if r["name"] == name and r["tau"] == tau)
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=marker, color=color,
                    linestyle="--" if name == "fd_son" else "-", label=label)
    ds = sorted({r["d"] for r in rows})
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(ds)
    ax.set_xticklabels([str(d) for d in ds])
    ax.set_xlabel("d")
    ax.set_ylabel("ns per Update (median)")
    ax.set_title("Dense optimizers: time per round (mirror-descent forms)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig("docs/img/dense_step_time.png", dpi=110)


if __name__ == "__main__":
    main()
