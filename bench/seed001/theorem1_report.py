"""Summarises theorem1's CSV: prints markdown tables with fitted log-log
exponents of regret against T, and draws the plot.

Usage: /usr/bin/python3 bench/seed001/theorem1_report.py THEOREM1_CSV PNG
"""

import collections
import csv
import math
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

SERIES = [  # (key, label, color)
    ("pc_ogd", "per-coordinate (pc_ogd, eta = 1/sqrt(s))", "#0571b0"),
    ("global_best", "global, best fixed eta in hindsight (grid)", "#ca0020"),
    ("global_theory", "global, fixed eta = D/(G sqrt T)", "#f4a582"),
    ("global_ogd", "global_ogd (Theorem 2 rate, online diameter)", "#7b3294"),
]
FIT_FROM_K = 46  # the second fit uses k >= 46 (T >= 1e5)


def lower_bound(t0, c, t1):
    """min over eta of the proof's bound T0 eta / 2 + C/2 min(T1, 1/(2 eta))."""
    etas = np.logspace(-12, 2, 20001)
    return float(np.min(t0 * etas / 2 + c / 2 * np.minimum(t1, 1 / (2 * etas))))


def load(path):
    by_k = collections.defaultdict(dict)
    fixed = collections.defaultdict(list)
    with open(path) as f:
        for r in csv.DictReader(f):
            k = int(r["k"])
            row = {"T": int(r["T"]), "T0": int(r["T0"]), "C": int(r["C"]), "T1": int(r["T1"]),
                   "eta": float(r["eta"]), "regret": float(r["regret"]),
                   "first": float(r["regret_first"]), "later": float(r["regret_later"])}
            if r["learner"] == "global_fixed":
                fixed[k].append(row)
            else:
                by_k[k][r["learner"]] = row
    for k, rows in fixed.items():
        by_k[k]["global_best"] = min(rows, key=lambda row: row["regret"])
    return dict(sorted(by_k.items())), fixed


def slope(ts, rs):
    return float(np.polyfit(np.log(ts), np.log(rs), 1)[0])


def main():
    path, png = sys.argv[1], sys.argv[2]
    by_k, fixed = load(path)
    ks = list(by_k)
    ts = [by_k[k]["pc_ogd"]["T"] for k in ks]
    lbs = [lower_bound(by_k[k]["pc_ogd"]["T0"], k, k) for k in ks]

    print("\nTheorem 1: regret against the best fixed point (x_1 = epsilon, x_j = 1); "
          "T0 = k^3, C = T1 = k\n")
    print("| k | T | per-coordinate | global, best fixed eta (eta*) | global, eta = D/(G sqrt T) "
          "| global_ogd (Theorem 2 rate) | proof's lower bound, min over eta | C T1 = k^2 "
          "| global best / per-coordinate |")
    print("|---|---|---|---|---|---|---|---|---|")
    for k, t, lb in zip(ks, ts, lbs):
        s = by_k[k]
        print(f"| {k} | {t:,} | {s['pc_ogd']['regret']:,.1f} | {s['global_best']['regret']:,.1f} "
              f"({s['global_best']['eta']:.2g}) | {s['global_theory']['regret']:,.1f} "
              f"({s['global_theory']['eta']:.3g}) | {s['global_ogd']['regret']:,.1f} | {lb:,.1f} "
              f"| {k * k:,} | {s['global_best']['regret'] / s['pc_ogd']['regret']:.1f} |")

    print("\nFitted exponents b of regret ~ a T^b (least squares on log-log; theorem: "
          "global 2/3 = 0.667, per-coordinate 1/2)\n")
    print(f"| learner | all T ({ts[0]:,}..{ts[-1]:,}) | T >= {by_k[FIT_FROM_K]['pc_ogd']['T']:,} "
          "| local slope between the two largest T |")
    print("|---|---|---|---|")
    fits = {}
    upper = [i for i, k in enumerate(ks) if k >= FIT_FROM_K]
    for key, label, _ in SERIES + [("lower_bound", "proof's lower bound", "k")]:
        rs = lbs if key == "lower_bound" else [by_k[k][key]["regret"] for k in ks]
        fits[key] = slope(ts, rs)
        up = slope([ts[i] for i in upper], [rs[i] for i in upper])
        local = math.log(rs[-1] / rs[-2]) / math.log(ts[-1] / ts[-2])
        print(f"| {label} | {fits[key]:.3f} | {up:.3f} | {local:.3f} |")

    print("\nRegret split (first coordinate, |x - epsilon| rounds / the C later "
          "coordinates, -x_j rounds):\n")
    print("| k | per-coordinate | global, best fixed eta | global, eta = D/(G sqrt T) "
          "| global_ogd |")
    print("|---|---|---|---|---|")
    for k in ks:
        s = by_k[k]
        cells = [f"{s[key]['first']:,.1f} / {s[key]['later']:,.1f}"
                 for key in ("pc_ogd", "global_best", "global_theory", "global_ogd")]
        print(f"| {k} | " + " | ".join(cells) + " |")

    fig, axes = plt.subplots(1, 2, figsize=(13, 4.8))
    ax = axes[0]
    for key, label, color in SERIES:
        rs = [by_k[k][key]["regret"] for k in ks]
        ax.loglog(ts, rs, "o-", color=color, ms=4, label=f"{label}: slope {fits[key]:.3f}")
    ax.loglog(ts, lbs, "k--", lw=1, label=f"proof's lower bound (min over eta): "
              f"slope {fits['lower_bound']:.3f}")
    t_ref = np.array([ts[0], ts[-1]], dtype=float)
    for power, style in ((2 / 3, ":"), (1 / 2, "-.")):
        ax.loglog(t_ref, 0.5 * t_ref ** power, color="gray", ls=style, lw=1,
                  label=f"0.5 T^{power:.3g}")
    ax.set_xlabel("T (rounds)")
    ax.set_ylabel("regret")
    ax.set_title("Theorem 1 construction: regret against T", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3, which="both")

    ax = axes[1]
    cmap = plt.get_cmap("viridis")
    for i, k in enumerate(ks):
        rows = sorted(fixed[k], key=lambda row: row["eta"])
        color = cmap(i / max(1, len(ks) - 1))
        ax.loglog([r["eta"] for r in rows], [r["regret"] for r in rows], "-", color=color,
                  label=f"T = {by_k[k]['pc_ogd']['T']:,}")
        ax.axhline(by_k[k]["pc_ogd"]["regret"], color=color, ls=":", lw=1)
    ax.set_xlabel("fixed global eta")
    ax.set_ylabel("regret")
    ax.set_title("global fixed eta over the grid (dotted: per-coordinate at the same T)",
                 fontsize=9)
    ax.legend(fontsize=6, ncol=2)
    ax.grid(alpha=0.3, which="both")
    fig.suptitle("Seed 001 Theorem 1: T0 = k^3 rounds of |x_1 - 0.001|, then C = k blocks of "
                 "T1 = k rounds of -x_j; F = [0,1]^(1+C)", fontsize=9)
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
