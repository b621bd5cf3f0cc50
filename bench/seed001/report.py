"""Summarises seed 001's raw results: prints markdown tables, writes CSV
summaries next to the raw results and draws the PNG plots.

Usage: /usr/bin/python3 bench/seed001/report.py OUT_DIR IMG_DIR
(OUT_DIR holds table1_runs.jsonl and table2/*.json from run.sh.)
"""

import collections
import csv
import glob
import json
import os
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

DATASETS = ["books", "dvd", "electronics", "kitchen", "rcv1_sample"]
LABELS = {"books": "BOOKS", "dvd": "DVD", "electronics": "ELECTRONICS",
          "kitchen": "KITCHEN", "rcv1_sample": "RCV1 (1k sample)"}
# Streeter & McMahan 2010, Table 1: (Global, Per-Coord, CW, PA).
PAPER_HINGE = {"books": (0.606, 0.545, 0.871, 0.672), "dvd": (0.576, 0.529, 0.851, 0.637),
               "electronics": (0.509, 0.452, 0.802, 0.555),
               "kitchen": (0.470, 0.419, 0.787, 0.520),
               "rcv1_sample": (0.076, 0.070, 0.542, 0.094)}
PAPER_MISTAKES = {"books": (0.259, 0.211, 0.215, 0.254), "dvd": (0.238, 0.208, 0.203, 0.240),
                  "electronics": (0.209, 0.175, 0.177, 0.194),
                  "kitchen": (0.180, 0.151, 0.153, 0.175),
                  "rcv1_sample": (0.027, 0.025, 0.039, 0.034)}
# Table 2 (Global, Per-Coord), nine ads data sets.
PAPER_TABLE2 = {"AUTO INSURANCE": (0.215, 0.028), "BUSINESS CARDS": (0.261, 0.034),
                "CREDIT CARDS": (0.225, 0.029), "CREDIT REPORT": (0.148, 0.012),
                "FOREX": (0.158, 0.025), "HEALTH INSURANCE": (0.232, 0.032),
                "LIFE INSURANCE": (0.231, 0.032), "SHOE": (0.263, 0.050),
                "TELEFONICA": (0.171, 0.026)}
# The headline setting of each optimizer: the paper's scale x R for the OGD
# columns, its phi = 1 (eta = Phi(1)) for CW; the paper gives no C for PA,
# so PA runs clickd's default C = 1. The grids around them are reported in
# full but select nothing.
PAPER_SETTING = {"pc_ogd": "0.6", "global_ogd": "0.2", "pa": "1", "cw": "0.8413447460685429"}
OGD = ("global_ogd", "pc_ogd")
METRICS = {"hinge": PAPER_HINGE, "mistakes": PAPER_MISTAKES}


def mean_std(values):
    return statistics.mean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def fmt(values):
    m, s = mean_std(values)
    return f"{m:.3f} ± {s:.3f}"


def fmt_signed(values):
    m, s = mean_std(values)
    return f"{'+' if m >= 0 else '−'}{abs(m):.3f} ± {s:.3f}"


# ---------------------------------------------------------------- Table 1

def load_table1(out_dir):
    """Returns {(dataset, optimizer, setting): {seed: result}}."""
    runs = collections.defaultdict(dict)
    with open(os.path.join(out_dir, "table1_runs.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            runs[(r["dataset"], r["optimizer"], r["setting"])][r["seed"]] = r["result"]
    return runs


def values(runs, dataset, optimizer, setting, metric):
    cell = runs[(dataset, optimizer, setting)]
    return [cell[s][metric] for s in sorted(cell)]


def headline(runs, dataset, optimizer, metric):
    return values(runs, dataset, optimizer, PAPER_SETTING[optimizer], metric)


def setting_label(optimizer, setting):
    if optimizer in OGD:
        return f"{setting}/R"
    if optimizer == "cw" and setting == PAPER_SETTING["cw"]:
        return "0.841 (phi=1)"
    return setting


def print_table1(runs):
    for metric, paper in METRICS.items():
        name = "average hinge loss" if metric == "hinge" else "fraction of mistakes"
        print(f"\nTable 1, {name} (ours: mean ± std over 10 shuffles; paper: one shuffle)\n")
        print("| data | Global (ours) | Global (paper) | Per-Coord (ours) | Per-Coord (paper) "
              "| CW (ours) | CW (paper) | PA (ours) | PA (paper) "
              "| Per-Coord − Global (ours, paired) | FTRL\\* (ours) | AdaGrad\\* (ours) |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for d in DATASETS:
            g = headline(runs, d, "global_ogd", metric)
            p = headline(runs, d, "pc_ogd", metric)
            diff = [b - a for a, b in zip(g, p)]
            wins = sum(x < 0 for x in diff)
            label = LABELS[d].replace("sample)", "sample, not comparable)")
            print(f"| {label} | {fmt(g)} | {paper[d][0]:.3f} | {fmt(p)} | {paper[d][1]:.3f} "
                  f"| {fmt(headline(runs, d, 'cw', metric))} | {paper[d][2]:.3f} "
                  f"| {fmt(headline(runs, d, 'pa', metric))} | {paper[d][3]:.3f} "
                  f"| {fmt_signed(diff)} (PC lower in {wins}/{len(diff)}) "
                  f"| {fmt(values(runs, d, 'ftrl', '-', metric))} "
                  f"| {fmt(values(runs, d, 'adagrad', '-', metric))} |")


def settings_of(runs, optimizers):
    return sorted({k[2] for k in runs if k[1] in optimizers and k[2] != "-"}, key=float)


def print_grid(runs, optimizers, title):
    settings = settings_of(runs, optimizers)
    for metric in METRICS:
        print(f"\n{title}, {metric} (mean ± std over 10 shuffles; headline setting in bold)\n")
        print("| data | optimizer | " + " | ".join(setting_label(optimizers[0], s)
                                                 for s in settings) + " |")
        print("|---|---|" + "---|" * len(settings))
        for d in DATASETS:
            for o in optimizers:
                cells = []
                for s in settings:
                    text = fmt(values(runs, d, o, s, metric))
                    cells.append(f"**{text}**" if s == PAPER_SETTING[o] else text)
                print(f"| {LABELS[d]} | {o} | " + " | ".join(cells) + " |")


def print_sensitivity(runs):
    print_grid(runs, OGD, "Table 1 scale sensitivity (scale = value / R, R = 100)")
    print_grid(runs, ("pa",), "Table 1 PA: C grid")
    print_grid(runs, ("cw",), "Table 1 CW: eta grid (a = 1)")
    best_of_grid(runs)


def best_of_grid(runs):
    """The grid point with the lowest mean, per data set and optimizer: for
    the discussion only, never a headline."""
    print("\nLowest mean over each grid (hinge / mistakes; not used for the headline)\n")
    print("| data | " + " | ".join(("global_ogd", "pc_ogd", "pa", "cw")) + " |")
    print("|---|---|---|---|---|")
    for d in DATASETS:
        cells = []
        for o in ("global_ogd", "pc_ogd", "pa", "cw"):
            parts = []
            for metric in METRICS:
                best = min(settings_of(runs, (o,)),
                           key=lambda s: statistics.mean(values(runs, d, o, s, metric)))
                m = statistics.mean(values(runs, d, o, best, metric))
                parts.append(f"{m:.3f} @ {setting_label(o, best)}")
            cells.append(" / ".join(parts))
        print(f"| {LABELS[d]} | " + " | ".join(cells) + " |")


def write_table1_csv(runs, out_dir):
    with open(os.path.join(out_dir, "table1_summary.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["dataset", "optimizer", "setting", "seeds", "hinge_mean", "hinge_std",
                    "mistakes_mean", "mistakes_std"])
        for (d, o, s), cell in sorted(runs.items()):
            h = mean_std([r["hinge"] for r in cell.values()])
            m = mean_std([r["mistakes"] for r in cell.values()])
            w.writerow([d, o, s, len(cell), f"{h[0]:.6f}", f"{h[1]:.6f}", f"{m[0]:.6f}",
                        f"{m[1]:.6f}"])


def plot_table1(runs, img_dir):
    fig, axes = plt.subplots(1, 2, figsize=(15, 4.6))
    width = 0.1
    columns = [("Global", "global_ogd", 0, "#f4a582", "#ca0020"),
               ("Per-Coord", "pc_ogd", 1, "#92c5de", "#0571b0"),
               ("CW", "cw", 2, "#c2a5cf", "#7b3294"),
               ("PA", "pa", 3, "#a6dba0", "#008837")]
    for ax, (metric, paper) in zip(axes, METRICS.items()):
        xs = range(len(DATASETS))
        bars = []
        for name, o, col, light, dark in columns:
            bars.append((f"{name}, paper", [paper[d][col] for d in DATASETS], None, light, "//"))
            bars.append((f"{name}, ours", [mean_std(headline(runs, d, o, metric))
                                           for d in DATASETS], True, dark, None))
        for i, (label, ys, has_err, color, hatch) in enumerate(bars):
            pos = [x + (i - (len(bars) - 1) / 2) * width for x in xs]
            if has_err:
                ax.bar(pos, [y[0] for y in ys], width, yerr=[y[1] for y in ys], capsize=2,
                       label=label, color=color)
            else:
                ax.bar(pos, ys, width, label=label, color=color, hatch=hatch, edgecolor="white")
        ax.set_xticks(list(xs))
        ax.set_xticklabels([LABELS[d].replace(" (1k sample)", "\n(1k sample*)")
                            for d in DATASETS], fontsize=8)
        ax.set_title("average hinge loss" if metric == "hinge" else "fraction of mistakes")
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=7, ncol=2)
    fig.suptitle("Seed 001 Table 1: ours (mean ± std, 10 shuffles) vs paper (one shuffle); "
                 "Global 0.2/R, Per-Coord 0.6/R, CW phi = 1, a = 1, PA C = 1 (clickd's default). "
                 "*paper: full rcv1.binary (677k rows)", fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(img_dir, "seed001_table1.png"), dpi=120)
    plt.close(fig)


def plot_sensitivity(runs, img_dir):
    scales = settings_of(runs, OGD)
    fig, axes = plt.subplots(1, len(DATASETS), figsize=(15, 3.4))
    for ax, d in zip(axes, DATASETS):
        for o, color in (("global_ogd", "#ca0020"), ("pc_ogd", "#0571b0")):
            ms = [mean_std(values(runs, d, o, s, "hinge")) for s in scales]
            ax.errorbar([float(s) for s in scales], [m for m, _ in ms], yerr=[s for _, s in ms],
                        marker="o", color=color, label=o, capsize=2)
            ax.axvline(float(PAPER_SETTING[o]), color=color, ls=":", lw=1)
        ax.set_xscale("log")
        ax.set_title(LABELS[d], fontsize=9)
        ax.set_xlabel("scale × R")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("average hinge loss")
    axes[0].legend(fontsize=8)
    fig.suptitle("Table 1 scale sensitivity (dotted: the paper's 0.2/R and 0.6/R)", fontsize=9)
    fig.tight_layout()
    fig.savefig(os.path.join(img_dir, "seed001_table1_scale.png"), dpi=120)
    plt.close(fig)


def plot_pa_cw_grids(runs, img_dir):
    fig, axes = plt.subplots(2, 2, figsize=(12, 7))
    colors = plt.get_cmap("tab10")
    for col, (o, xlabel, log) in enumerate((("pa", "PA-I's C", True),
                                            ("cw", "CW's eta (a = 1)", False))):
        settings = settings_of(runs, (o,))
        for row, metric in enumerate(METRICS):
            ax = axes[row][col]
            for i, d in enumerate(DATASETS):
                ms = [mean_std(values(runs, d, o, s, metric)) for s in settings]
                ax.errorbar([float(s) for s in settings], [m for m, _ in ms],
                            yerr=[s for _, s in ms], marker="o", ms=3, capsize=2,
                            color=colors(i), label=LABELS[d])
            ax.axvline(float(PAPER_SETTING[o]), color="gray", ls=":", lw=1)
            if log:
                ax.set_xscale("log")
            ax.set_xlabel(xlabel)
            ax.set_ylabel("average hinge loss" if metric == "hinge" else "fraction of mistakes")
            ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.suptitle("Table 1 PA and CW grids, mean ± std over 10 shuffles (dotted: headline "
                 "setting, PA C = 1, CW eta = Phi(1))", fontsize=9)
    fig.tight_layout()
    fig.savefig(os.path.join(img_dir, "seed001_table1_pa_cw.png"), dpi=120)
    plt.close(fig)


# ---------------------------------------------------------------- Table 2

def load_table2(out_dir):
    runs = []
    for path in sorted(glob.glob(os.path.join(out_dir, "table2", "*.json"))):
        with open(path) as f:
            r = json.load(f)
        r["name"] = os.path.basename(path)[:-5]
        runs.append(r)
    runs.sort(key=lambda r: (r["examples"], r["seed"]))
    return runs


def online(run, optimizer, scale):
    return next(o for o in run["online"] if o["optimizer"] == optimizer and o["scale"] == scale)


def print_table2(runs):
    print("\nTable 2 analogue: synthetic data, logistic loss, F = [-1,1]^n, scale 0.1; "
          "per-example values (total / T), in nats\n")
    print("| T | seed | CTR | coordinates | true model loss | comparator loss (batch / multi-pass "
          "pc_ogd) | Global regret | Per-Coord regret | ratio | Global − true | Per-Coord − true "
          "| ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in runs:
        t = r["examples"]
        c = r["comparator"]
        g, p = online(r, "global_ogd", 0.1), online(r, "pc_ogd", 0.1)
        eg, ep = (g["loss"] - r["true_model_loss"]) / t, (p["loss"] - r["true_model_loss"]) / t
        print(f"| {t:,} | {r['seed']} | {r['ctr']:.4f} | {c['batch']['coordinates']:,} "
              f"| {r['true_model_loss'] / t:.4f} | {c['batch']['loss'] / t:.4f} / "
              f"{c['multipass_pc_ogd']['loss'] / t:.4f} | {g['regret_per_example']:.4f} "
              f"| {p['regret_per_example']:.4f} "
              f"| {g['regret'] / p['regret']:.2f} | {eg:.4f} | {ep:.4f} | {eg / ep:.2f} |")
    print("\nComparator convergence\n")
    print("| T | seed | batch sweeps | batch last-sweep decrease | batch max projected gradient "
          "| multi-pass passes | multi-pass last pass-to-pass change | multi-pass − batch |")
    print("|---|---|---|---|---|---|---|---|")
    for r in runs:
        b, m = r["comparator"]["batch"], r["comparator"]["multipass_pc_ogd"]
        print(f"| {r['examples']:,} | {r['seed']} | {b['sweeps']} | {b['last_decrease']:.2g} "
              f"| {b['max_projected_gradient']:.3g} | {m['passes']} | {m['last_change']:.3g} "
              f"| {m['loss'] - b['loss']:.1f} ({(m['loss'] - b['loss']) / b['loss']:.2%}) |")
    print("\nRegret at prefixes t, each against its own prefix optimum (per example: R(t) / t; "
          "a seed's stream is the same for every T, so each prefix is listed once)\n")
    print("| T | seed | t | Global R(t)/t | Per-Coord R(t)/t | ratio | prefix optimum / t "
          "| true model / t |")
    print("|---|---|---|---|---|---|---|---|")
    shown = set()  # the same seed's stream is the same at every T: show each prefix once
    for r in runs:
        for c in r["checkpoints"]:
            t = c["t"]
            if (r["seed"], t) in shown:
                continue
            shown.add((r["seed"], t))
            rg, rp = c["global_ogd"] - c["comparator"], c["pc_ogd"] - c["comparator"]
            print(f"| {r['examples']:,} | {r['seed']} | {t:,} | {rg / t:.4f} | {rp / t:.4f} "
                  f"| {rg / rp:.2f} | {c['comparator'] / t:.4f} | {c['true_model'] / t:.4f} |")
    scales = sorted({o["scale"] for o in runs[0]["online"]})
    print("\nTable 2 scale sensitivity: regret per example (Global / Per-Coord); "
          "the paper's 0.1 in bold\n")
    print("| T | seed | " + " | ".join(str(s) for s in scales) + " |")
    print("|---|---|" + "---|" * len(scales))
    for r in runs:
        cells = []
        for s in scales:
            text = (f"{online(r, 'global_ogd', s)['regret_per_example']:.4f} / "
                    f"{online(r, 'pc_ogd', s)['regret_per_example']:.4f}")
            cells.append(f"**{text}**" if s == 0.1 else text)
        print(f"| {r['examples']:,} | {r['seed']} | " + " | ".join(cells) + " |")
    print("\nPaper's Table 2 (additive regret), for reference: " + "; ".join(
        f"{k} {g:.3f} / {p:.3f}" for k, (g, p) in PAPER_TABLE2.items()))


def write_table2_csv(runs, out_dir):
    with open(os.path.join(out_dir, "table2_summary.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["examples", "seed", "optimizer", "scale", "loss", "regret",
                    "regret_per_example", "excess_over_true_per_example", "comparator_loss",
                    "true_model_loss"])
        for r in runs:
            for o in r["online"]:
                w.writerow([r["examples"], r["seed"], o["optimizer"], o["scale"], o["loss"],
                            o["regret"], o["regret_per_example"],
                            (o["loss"] - r["true_model_loss"]) / r["examples"],
                            r["comparator"]["loss"], r["true_model_loss"]])


def read_curve(out_dir, name):
    with open(os.path.join(out_dir, "table2", name + "_curve.csv")) as f:
        rows = list(csv.DictReader(f))
    return {k: [float(row[k]) for row in rows] for k in rows[0]}


def plot_table2(runs, out_dir, img_dir):
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    main = max(runs, key=lambda r: (r["examples"], -r["seed"]))
    curve = read_curve(out_dir, main["name"])
    colors = {"global_ogd": "#ca0020", "pc_ogd": "#0571b0"}
    ax = axes[0]
    for o in ("global_ogd", "pc_ogd"):
        regret = [a - b for a, b in zip(curve[o], curve["comparator"])]
        ax.plot(curve["t"], regret, color=colors[o], label=f"{o}: vs x*_T (final comparator)")
        cps = main["checkpoints"]
        ax.plot([c["t"] for c in cps], [c[o] - c["comparator"] for c in cps], "o",
                color=colors[o], label=f"{o}: R(t) vs prefix optimum")
    excess = [a - b for a, b in zip(curve["true_model"], curve["comparator"])]
    ax.plot(curve["t"], excess, "k--", lw=1, label="true model vs x*_T (same for both)")
    ax.set_xlabel("t")
    ax.set_ylabel("cumulative regret (nats)")
    ax.set_title(f"T = {main['examples']:,}, seed {main['seed']}", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)

    ax = axes[1]
    for r in runs:
        style = "-" if r["examples"] == main["examples"] else ":"
        for o in ("global_ogd", "pc_ogd"):
            cps = r["checkpoints"]
            ax.plot([c["t"] for c in cps], [(c[o] - c["comparator"]) / c["t"] for c in cps],
                    style, marker="o", ms=3, color=colors[o],
                    label=f"{o}, T={r['examples']:,} s{r['seed']}")
    ax.set_xscale("log")
    ax.set_xlabel("t")
    ax.set_ylabel("R(t) / t (nats per example)")
    ax.set_title(f"per-example regret at prefixes (solid: T = {main['examples']:,})", fontsize=9)
    ax.legend(fontsize=6, ncol=2)
    ax.grid(alpha=0.3)

    ax = axes[2]
    scales = sorted({o["scale"] for o in main["online"]})
    for r in runs:
        style = "-" if r["examples"] == main["examples"] else ":"
        for o in ("global_ogd", "pc_ogd"):
            ax.plot(scales, [online(r, o, s)["regret_per_example"] for s in scales], style,
                    marker="o", ms=3, color=colors[o])
    ax.axvline(0.1, color="gray", ls=":", lw=1)
    ax.set_xscale("log")
    ax.set_xlabel("learning-rate scale (paper: 0.1)")
    ax.set_ylabel("regret / T")
    ax.set_title(f"scale sensitivity (red: global, blue: per-coord;\nsolid: T = "
                 f"{main['examples']:,}, dotted: shorter runs)", fontsize=8)
    ax.grid(alpha=0.3)
    fig.suptitle("Seed 001 Table 2 analogue: synthetic Zipf ads data, logistic loss, "
                 "F = [-1,1]^n", fontsize=9)
    fig.tight_layout()
    fig.savefig(os.path.join(img_dir, "seed001_regret.png"), dpi=120)
    plt.close(fig)


def main():
    out_dir, img_dir = sys.argv[1], sys.argv[2]
    runs1 = load_table1(out_dir)
    print_table1(runs1)
    print_sensitivity(runs1)
    write_table1_csv(runs1, out_dir)
    plot_table1(runs1, img_dir)
    plot_sensitivity(runs1, img_dir)
    plot_pa_cw_grids(runs1, img_dir)
    runs2 = load_table2(out_dir)
    if runs2:
        print_table2(runs2)
        write_table2_csv(runs2, out_dir)
        plot_table2(runs2, out_dir, img_dir)


if __name__ == "__main__":
    main()
