#!/usr/bin/python3
"""Tables and plots of bench/delayed_feedback/run.sh's output.

Usage: report.py OUT_DIR
Writes OUT_DIR/report.md (the tables of docs/results_delayed_feedback.md) and
docs/img/delayed_feedback_{curves,curves_vs_oracle,final,reliability}.png.
"""
import csv
import glob
import os
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
IMG = os.path.join(ROOT, "docs", "img")
LOGS = ["criteo_8k", "ipinyou", "synthetic"]
DELAYS = ["exponential", "lognormal"]
# One colour per strategy in every plot.
COLORS = {"oracle": "C0", "fnw": "C1", "fake_negative": "C2", "wait_ttl=300": "C3",
          "wait_ttl=3600": "C4"}


def read(out, what):
    rows = []
    for path in sorted(glob.glob(os.path.join(out, what + "_*.csv"))):
        with open(path) as f:
            rows += list(csv.DictReader(f))
    return rows


def run_name(r):
    """oracle, wait_ttl=300, fake_negative, fnw."""
    return r["strategy"] + ("=" + r["ttl"] if r["ttl"] else "")


def order(names):
    rank = {"oracle": 0, "fnw": 1, "fake_negative": 2}
    return sorted(names, key=lambda n: (rank.get(n, 3), float(n.split("=")[1]) if "=" in n else 0))


def mean(xs):
    return sum(xs) / len(xs)


def cell(xs, digits=4):
    if len(xs) == 1:
        return "%.*f" % (digits, xs[0])
    return "%.*f (%.*f to %.*f)" % (digits, mean(xs), digits, min(xs), digits, max(xs))


def group(rows):
    """(log, delay) -> run name -> seed -> row."""
    out = defaultdict(lambda: defaultdict(dict))
    for r in rows:
        out[(r["log"], r["delay"])][run_name(r)][r["seed"]] = r
    return out


def second_half(curves):
    """(log, delay, run name, seed) -> logloss over the second half of the stream.

    The windows are of equal size (to within one example), so the mean of the
    last half of them is that half's logloss."""
    by_run = defaultdict(list)
    for r in curves:
        by_run[(r["log"], r["delay"], run_name(r), r["seed"])].append(
            (int(r["examples_seen"]), float(r["window_logloss"])))
    out = {}
    for key, points in by_run.items():
        points.sort()
        half = points[len(points) // 2:]
        out[key] = mean([v for _, v in half])
    return out


def tables(summary, curves):
    g = group(summary)
    late = second_half(curves)
    lines = []
    for log in LOGS:
        for delay in DELAYS:
            runs = g.get((log, delay))
            if not runs:
                continue
            oracle = runs["oracle"]
            first = next(iter(oracle.values()))
            clicks = [float(r["clicks"]) for r in oracle.values()]
            lines.append("\n#### %s, %s delays (%s impressions, %s final clicks)\n" % (
                log, delay, first["examples"], cell(clicks, 0)))
            lines.append("| strategy | progressive logloss | minus oracle's | second half: minus "
                         "oracle's | AUC | calibration sum(p)/sum(y) | clicks never learned |")
            lines.append("|---|---|---|---|---|---|---|")
            for name in order(runs):
                seeds = runs[name]
                ll = [float(r["logloss"]) for r in seeds.values()]
                diff = [float(r["logloss"]) - float(oracle[s]["logloss"]) for s, r in seeds.items()]
                late_diff = [late[(log, delay, name, s)] - late[(log, delay, "oracle", s)]
                             for s in seeds]
                lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (
                    name, cell(ll), cell(diff, 5), cell(late_diff, 5),
                    cell([float(r["auc"]) for r in seeds.values()]),
                    cell([float(r["calibration"]) for r in seeds.values()], 3),
                    cell([float(r["lost_clicks"]) for r in seeds.values()], 0)))
    return lines


def compact_table(summary):
    """One line per log x delay: each strategy's mean logloss and calibration."""
    g = group(summary)
    names = order({run_name(r) for r in summary})
    lines = ["| log | delay | " + " | ".join(names) + " |",
             "|---|---|" + "---|" * len(names)]
    for log in LOGS:
        for delay in DELAYS:
            runs = g.get((log, delay))
            if not runs:
                continue
            cells = []
            for n in names:
                seeds = runs[n].values()
                cells.append("%.4f / %.2f" % (mean([float(r["logloss"]) for r in seeds]),
                                              mean([float(r["calibration"]) for r in seeds])))
            lines.append("| %s | %s | %s |" % (log, delay, " | ".join(cells)))
    return lines


def reliability_table(rel, log, delay):
    g = defaultdict(lambda: defaultdict(list))  # run -> decile -> rows over seeds
    for r in rel:
        if r["log"] == log and r["delay"] == delay:
            g[run_name(r)][int(r["decile"])].append(r)
    names = order(g)
    lines = ["\n#### Reliability, %s, %s delays: mean p / observed click rate by decile of p "
             "(mean over seeds)\n" % (log, delay),
             "| decile | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for d in range(1, 11):
        cells = ["%.4f / %.4f" % (mean([float(r["mean_p"]) for r in g[n][d]]),
                                  mean([float(r["mean_y"]) for r in g[n][d]])) for n in names]
        lines.append("| %d | %s |" % (d, " | ".join(cells)))
    return lines


def plot_curves(curves):
    g = defaultdict(lambda: defaultdict(list))  # (log, delay) -> run -> rows over seeds
    for r in curves:
        g[(r["log"], r["delay"])][run_name(r)].append(r)
    fig, axes = plt.subplots(len(LOGS), len(DELAYS), figsize=(12, 11), squeeze=False)
    for i, log in enumerate(LOGS):
        for j, delay in enumerate(DELAYS):
            ax = axes[i][j]
            runs = g.get((log, delay), {})
            for name in order(runs):
                by_x = defaultdict(list)
                for r in runs[name]:
                    by_x[int(r["examples_seen"])].append(float(r["window_logloss"]))
                xs = sorted(by_x)
                ax.plot(xs, [mean(by_x[x]) for x in xs], label=name, color=COLORS.get(name),
                        linestyle="--" if name == "oracle" else "-")
            ax.set_title("%s, %s delays" % (log, delay))
            ax.set_xlabel("impressions seen")
            ax.set_ylabel("windowed logloss (mean of seeds)")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(IMG, "delayed_feedback_curves.png"), dpi=90)
    plt.close(fig)


def plot_curves_vs_oracle(curves):
    """Each window's logloss minus the oracle's (same seed), mean of seeds."""
    oracle = {(r["log"], r["delay"], r["seed"], r["examples_seen"]): float(r["window_logloss"])
              for r in curves if r["strategy"] == "oracle"}
    g = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for r in curves:
        if r["strategy"] != "oracle":
            g[(r["log"], r["delay"])][run_name(r)][int(r["examples_seen"])].append(
                float(r["window_logloss"]) -
                oracle[(r["log"], r["delay"], r["seed"], r["examples_seen"])])
    fig, axes = plt.subplots(len(LOGS), len(DELAYS), figsize=(12, 11), squeeze=False)
    for i, log in enumerate(LOGS):
        for j, delay in enumerate(DELAYS):
            ax = axes[i][j]
            runs = g.get((log, delay), {})
            later = []
            for name in order(runs):
                xs = sorted(runs[name])
                ys = [mean(runs[name][x]) for x in xs]
                ax.plot(xs, ys, label=name, color=COLORS.get(name))
                later += ys[2:]
            if later:  # the first two windows (start-up) may lie beyond the axis
                lo, hi = min(later + [0]), max(later + [0])
                ax.set_ylim(lo - 0.05 * (hi - lo), hi + 0.05 * (hi - lo))
            ax.axhline(0, color="k", linewidth=0.5)
            ax.set_title("%s, %s delays" % (log, delay))
            ax.set_xlabel("impressions seen")
            ax.set_ylabel("windowed logloss minus the oracle's")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(IMG, "delayed_feedback_curves_vs_oracle.png"), dpi=90)
    plt.close(fig)


def plot_final(summary):
    g = group(summary)
    names = order({run_name(r) for r in summary})
    combos = [(l, d) for l in LOGS for d in DELAYS if (l, d) in g]
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.5))
    width = 0.8 / len(names)
    for k, name in enumerate(names):
        diffs, cals = [], []
        for combo in combos:
            runs = g[combo]
            diffs.append(mean([float(r["logloss"]) - float(runs["oracle"][s]["logloss"])
                               for s, r in runs[name].items()]))
            cals.append(mean([float(r["calibration"]) for r in runs[name].values()]))
        xs = [c + k * width for c in range(len(combos))]
        axes[0].bar(xs, diffs, width, label=name, color=COLORS.get(name))
        axes[1].bar(xs, cals, width, label=name, color=COLORS.get(name))
    labels = ["%s\n%s" % (l, d) for l, d in combos]
    for ax, title in ((axes[0], "progressive logloss minus the oracle's (mean of seeds)"),
                      (axes[1], "calibration sum(p) / sum(y) (1 = calibrated)")):
        ax.set_xticks([c + 0.4 - width / 2 for c in range(len(combos))])
        ax.set_xticklabels(labels, fontsize=8)
        ax.set_title(title)
        ax.grid(axis="y", alpha=0.3)
    axes[1].axhline(1.0, color="k", linewidth=0.5)
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(IMG, "delayed_feedback_final.png"), dpi=90)
    plt.close(fig)


def plot_reliability(rel):
    fig, axes = plt.subplots(len(LOGS), len(DELAYS), figsize=(10, 12), squeeze=False)
    for i, log in enumerate(LOGS):
        for j, delay in enumerate(DELAYS):
            ax = axes[i][j]
            g = defaultdict(lambda: defaultdict(list))
            for r in rel:
                if r["log"] == log and r["delay"] == delay:
                    g[run_name(r)][int(r["decile"])].append(r)
            top = 0
            for name in order(g):
                ps = [mean([float(r["mean_p"]) for r in g[name][d]]) for d in range(1, 11)]
                ys = [mean([float(r["mean_y"]) for r in g[name][d]]) for d in range(1, 11)]
                ax.plot(ps, ys, marker="o", markersize=3, label=name, color=COLORS.get(name))
                top = max(top, max(ps), max(ys))
            ax.plot([0, top], [0, top], "k:", linewidth=0.8)
            ax.set_title("%s, %s delays" % (log, delay))
            ax.set_xlabel("mean predicted p (decile)")
            ax.set_ylabel("observed click rate")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(IMG, "delayed_feedback_reliability.png"), dpi=90)
    plt.close(fig)


def main():
    out = sys.argv[1]
    summary, curves, rel = read(out, "summary"), read(out, "curves"), read(out, "reliability")
    os.makedirs(IMG, exist_ok=True)
    lines = ["### Mean over seeds: progressive logloss / calibration\n"] + compact_table(summary)
    lines += ["\n### Per log and delay (mean over seeds, range in brackets)"]
    lines += tables(summary, curves)
    lines.append("\n### Reliability tables")
    for log in LOGS:
        for delay in DELAYS:
            if any(r["log"] == log and r["delay"] == delay for r in rel):
                lines += reliability_table(rel, log, delay)
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    plot_curves(curves)
    plot_curves_vs_oracle(curves)
    plot_final(summary)
    plot_reliability(rel)
    print("\n".join(lines[:12]))


if __name__ == "__main__":
    main()
