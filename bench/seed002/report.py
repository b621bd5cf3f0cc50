#!/usr/bin/python3
"""Seed 002 section 4.1 report: reads bench/seed002/run.sh's raw results,
prints markdown tables (best setting per algorithm, the whole eta x delta
grid, RADAGRAD's spread over its runs, the cross-check of the shared
ADA-FULL pass) and draws
docs/img/seed002_regret_pds.png, seed002_regret_cmd.png and
seed002_time_cmd.png.

    /usr/bin/python3 bench/seed002/report.py bench/out/seed002
"""
import csv
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

NAMES = {
    "ada_fd_da": "ADA-FD",
    "ada_full_da": "ADA-FULL",
    "ada_diag_da": "ADA-DIAG",
    "ada_fd": "ADA-FD",
    "ada_full": "ADA-FULL",
    "ada_diag": "ADA-DIAG",
    "fd_son": "FD-SON",
    "radagrad": "RADAGRAD",
}
FAMILIES = [
    ("primal-dual subgradient (PDS, dual averaging)", ["ada_fd_da", "ada_full_da", "ada_diag_da"]),
    ("composite mirror descent (CMD)", ["ada_fd", "ada_full", "ada_diag", "fd_son", "radagrad"]),
]
COLORS = {"ADA-FD": "tab:red", "ADA-FULL": "tab:blue", "ADA-DIAG": "tab:green",
          "FD-SON": "tab:purple", "RADAGRAD": "tab:orange"}
# Randomized algorithms: their grid rows are means over runs (seeds).
AVERAGED = {"radagrad"}


def read_csv(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f))


def load(out):
    runs = {}  # (algo, eta, delta) -> row
    curves = {}  # (algo, eta, delta) -> [(t, cum_loss)]
    for prefix in ("grid", "full", "radagrad"):
        for row in read_csv(os.path.join(out, prefix + ".grid.csv")):
            key = (row["algo"], float(row["eta"]), float(row["delta"]))
            runs[key] = {"loss": float(row["final_loss"]), "wall": float(row["seconds"]),
                         "cpu": float(row["cpu_seconds"]), "diverged": row["diverged"] == "1"}
        for row in read_csv(os.path.join(out, prefix + ".curves.csv")):
            key = (row["algo"], float(row["eta"]), float(row["delta"]))
            curves.setdefault(key, []).append((int(row["t"]), float(row["cum_loss"])))
    return runs, curves


def load_seeded(out):
    """Per-run results of the averaged algorithms: (algo, eta, delta) ->
    {seed: final loss}, and (algo, eta, delta, seed) -> [(t, cum_loss)]."""
    finals, curves = {}, {}
    for row in read_csv(os.path.join(out, "radagrad.runs.csv")):
        key = (row["algo"], float(row["eta"]), float(row["delta"]))
        finals.setdefault(key, {})[int(row["seed"])] = float(row["final_loss"])
    for row in read_csv(os.path.join(out, "radagrad.run_curves.csv")):
        key = (row["algo"], float(row["eta"]), float(row["delta"]), int(row["seed"]))
        curves.setdefault(key, []).append((int(row["t"]), float(row["cum_loss"])))
    return finals, curves


def spread_table(runs, finals, algo):
    """Every grid point as 'mean [min, max]' over the runs."""
    etas = sorted({k[1] for k in runs if k[0] == algo})
    deltas = sorted({k[2] for k in runs if k[0] == algo})
    best = best_of(runs, algo)
    lines = ["| eta \\ delta | " + " | ".join("%g" % d for d in deltas) + " |",
             "|---|" + "---|" * len(deltas)]
    for e in etas:
        cells = []
        for d in deltas:
            r, f = runs.get((algo, e, d)), finals.get((algo, e, d))
            if r is None or not f:
                cells.append("-")
                continue
            cell = "%s [%s, %s]" % (fmt(r["loss"]), fmt(min(f.values())), fmt(max(f.values())))
            cells.append("**%s**" % cell if (algo, e, d) == best else cell)
        lines.append("| %g | %s |" % (e, " | ".join(cells)))
    return "\n".join(lines)


def best_of(runs, algo):
    cands = [(v["loss"], k) for k, v in runs.items() if k[0] == algo and not v["diverged"]]
    return min(cands)[1] if cands else None


def fmt(x):
    if math.isinf(x) or math.isnan(x):
        return "diverged"
    if x >= 1e5:
        return "%.2e" % x
    return "%.4g" % x


def grid_table(runs, algo):
    etas = sorted({k[1] for k in runs if k[0] == algo})
    deltas = sorted({k[2] for k in runs if k[0] == algo})
    best = best_of(runs, algo)
    lines = ["| eta \\ delta | " + " | ".join("%g" % d for d in deltas) + " |",
             "|---|" + "---|" * len(deltas)]
    for e in etas:
        cells = []
        for d in deltas:
            r = runs.get((algo, e, d))
            cell = "-" if r is None else ("diverged" if r["diverged"] else fmt(r["loss"]))
            cells.append("**%s**" % cell if (algo, e, d) == best else cell)
        lines.append("| %g | %s |" % (e, " | ".join(cells)))
    return "\n".join(lines)


def log_lines(out, name):
    path = os.path.join(out, name)
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [l.rstrip("\n") for l in f if l.startswith("#")]


def check_full(out, curves):
    """Cumulative losses of the real optimizer vs the shared pass."""
    rows = []
    for algo in ("ada_full", "ada_full_da"):
        check = read_csv(os.path.join(out, "check_%s.curves.csv" % algo))
        if not check:
            continue
        key = (algo, float(check[0]["eta"]), float(check[0]["delta"]))
        shared = dict(curves.get(key, []))
        worst = 0.0
        for row in check:
            t, mine = int(row["t"]), float(row["cum_loss"])
            worst = max(worst, abs(mine - shared[t]) / max(abs(shared[t]), 1e-300))
        per_round = [l for l in log_lines(out, "check_%s.log" % algo) if "full_class" in l]
        rows.append((algo, key[1], key[2], len(check) * 100, worst,
                     per_round[0] if per_round else ""))
    return rows


def plot_regret(runs, curves, algos, title, path, seed_curves=None):
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for algo in algos:
        key = best_of(runs, algo)
        if key is None:
            continue
        pts = curves[key]
        name = NAMES[algo]
        label = "%s (eta=%g, delta=%g)" % (name, key[1], key[2])
        if algo in AVERAGED and seed_curves:
            per_seed = [dict(v) for k, v in seed_curves.items() if k[:3] == key]
            ts = [p[0] for p in pts]
            ax.fill_between(ts, [min(c[t] for c in per_seed) for t in ts],
                            [max(c[t] for c in per_seed) for t in ts], color=COLORS[name],
                            alpha=0.25, linewidth=0)
            label = "%s, mean of %d runs (band: min-max)" % (label, len(per_seed))
        ax.plot([p[0] for p in pts], [p[1] for p in pts], color=COLORS[name], label=label)
    ax.set_xlabel("t")
    ax.set_ylabel("regret (cumulative loss; beta_* loses 0)")
    ax.set_yscale("log")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_time(times, path):
    fig, ax = plt.subplots(figsize=(7.6, 3.6))
    names = [t[0] for t in times]
    ax.barh(names, [t[1] for t in times], color=[COLORS[n.split(" ")[0]] for n in names])
    ax.set_xscale("log")
    ax.set_xlabel("CPU seconds for T = 10,000 rounds (log scale)")
    ax.set_title("Running time (CMD), T = 10,000, d = 500, tau = 10")
    for i, t in enumerate(times):
        ax.text(t[1], i, " %.3g s" % t[1], va="center")
    ax.set_xlim(right=max(t[1] for t in times) * 8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "bench/out/seed002"
    runs, curves = load(out)
    finals, seed_curves = load_seeded(out)
    img = "docs/img"
    print("## Best setting per algorithm (by final cumulative loss)\n")
    print("| family | algorithm | eta | delta | regret at T | / ADA-FULL | CPU s | wall s |")
    print("|---|---|---|---|---|---|---|---|")
    for family, algos in FAMILIES:
        full_key = best_of(runs, algos[1])
        full_loss = runs[full_key]["loss"] if full_key else float("nan")
        for algo in algos:
            key = best_of(runs, algo)
            if key is None:
                print("| %s | %s | - | - | - | - | - | - |" % (family, NAMES[algo]))
                continue
            r = runs[key]
            wall = "n/a (shared pass)" if math.isnan(r["wall"]) else "%.2f" % r["wall"]
            name = NAMES[algo]
            if algo in AVERAGED:
                name += " (mean of %d runs; s per run)" % len(finals.get(key, {}))
            print("| %s | %s | %g | %g | %s | %.2f | %.2f | %s |" % (
                family, name, key[1], key[2], fmt(r["loss"]), r["loss"] / full_loss,
                r["cpu"], wall))
    print()
    for family, algos in FAMILIES:
        for algo in algos:
            if best_of(runs, algo) is None:
                continue
            what = "mean final cumulative loss over the runs" if algo in AVERAGED else \
                "final cumulative loss"
            print("### %s, %s (`%s`): %s\n" % (NAMES[algo], family, algo, what))
            print(grid_table(runs, algo))
            print()
    for algo in sorted(AVERAGED):
        key = best_of(runs, algo)
        if key is None:
            continue
        f = finals.get(key, {})
        print("## %s over its %d runs (projection seeds %s)\n" % (
            NAMES[algo], len(f), ", ".join(str(s) for s in sorted(f))))
        print("Best setting eta = %g, delta = %g (by the mean): final regret per seed %s; "
              "mean %s, min %s, max %s.\n" % (
                  key[1], key[2], ", ".join("%s" % fmt(f[s]) for s in sorted(f)),
                  fmt(runs[key]["loss"]), fmt(min(f.values())), fmt(max(f.values()))))
        print("### %s (`%s`): mean [min, max] final cumulative loss over the runs\n" % (
            NAMES[algo], algo))
        print(spread_table(runs, finals, algo))
        print()
    print("## Shared ADA-FULL pass: cross-check against the optimizer\n")
    print("| algorithm | eta | delta | rounds | max relative gap in cumulative loss |")
    print("|---|---|---|---|---|")
    check = check_full(out, curves)
    for algo, eta, delta, rounds, worst, _ in check:
        print("| %s | %g | %g | %d | %.2e |" % (algo, eta, delta, rounds, worst))
    print()
    for line in log_lines(out, "full.log") + [c[5] for c in check]:
        print("    " + line)
    print()
    for line in log_lines(out, "grid.log"):
        print("    " + line)

    plot_regret(runs, curves, FAMILIES[0][1], "Regret, primal-dual subgradient (PDS)",
                os.path.join(img, "seed002_regret_pds.png"))
    plot_regret(runs, curves, FAMILIES[1][1], "Regret, composite mirror descent (CMD)",
                os.path.join(img, "seed002_regret_cmd.png"), seed_curves)
    times = []
    for algo in FAMILIES[1][1]:
        key = best_of(runs, algo)
        if key is not None:
            label = NAMES[algo] + (" (shared pass)" if algo == "ada_full" else "")
            label += " (mean per run)" if algo in AVERAGED else ""
            times.append((label, runs[key]["cpu"]))
    for algo, _, _, rounds, _, line in check:
        if algo == "ada_full" and "ms/round cpu" in line:
            ms = float(line.split(",")[-1].split("ms/round")[0].strip())
            times.append(("ADA-FULL (optimizer, %d rounds, scaled)" % rounds,
                          ms * 1e-3 * 10000))
    if times:
        plot_time(times, os.path.join(img, "seed002_time_cmd.png"))


if __name__ == "__main__":
    main()
