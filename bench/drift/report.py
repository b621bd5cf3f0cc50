#!/usr/bin/python3
"""Tables and plots of bench/drift/run.sh's output (docs/drift.md).

Usage: report.py OUT_DIR   (writes OUT_DIR/report.md and docs/img/drift_*.png)
"""
import csv
import glob
import json
import os
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

KINDS = ["stationary", "abrupt", "gradual"]


def read_summaries(out):
    rows = []
    for path in sorted(glob.glob(os.path.join(out, "summary_*.csv"))):
        with open(path) as f:
            rows += list(csv.DictReader(f))
    return rows


def mean(xs):
    return sum(xs) / len(xs)


def by_learner(rows, kind):
    """learner -> list of rows (one per seed) for one kind."""
    out = defaultdict(list)
    for r in rows:
        if r["kind"] == kind:
            # FTRL's defaults are also a point of the grid: key by family too.
            out[(r["family"], r["learner"])].append(r)
    return out


def best(learners, family):
    """The learner of a family with the lowest mean excess over the seeds (hindsight)."""
    cands = {k: v for k, v in learners.items() if v[0]["family"] == family}
    return min(cands, key=lambda k: mean([float(r["excess"]) for r in cands[k]]))


def cell(rows, field, digits=4):
    xs = [float(r[field]) for r in rows]
    if len(xs) == 1:
        return "%.*f" % (digits, xs[0])
    return "%.*f (%.*f-%.*f)" % (digits, mean(xs), digits, min(xs), digits, max(xs))


def synthetic_tables(rows):
    lines = []
    for kind in KINDS:
        learners = by_learner(rows, kind)
        if not learners:
            continue
        seeds = len(next(iter(learners.values())))
        default = next(k for k, v in learners.items() if v[0]["family"] == "default")
        option = next(k for k, v in learners.items() if v[0]["family"] == "option")
        chosen = [("FTRL at defaults", default),
                  ("best FTRL of the grid (hindsight)", best(learners, "ftrl_grid")),
                  ("**drift option** (decay 0.999, defaults otherwise)", option),
                  ("best decay of the grid (hindsight)", best(learners, "decay_grid"))]
        base = mean([float(r["excess"]) for r in learners[default]])
        lines.append("\n#### %s drift (%d seeds; mean, and min-max over seeds)\n" % (kind, seeds))
        lines.append("| learner | setting | excess logloss over Bayes | vs defaults | "
                     "progressive logloss | AUC | ns per example |")
        lines.append("|---|---|---|---|---|---|---|")
        for label, name in chosen:
            rs = learners[name]
            ex = mean([float(r["excess"]) for r in rs])
            lines.append("| %s | %s | %s | %.2fx | %s | %s | %s |" % (
                label, name[1], cell(rs, "excess", 5), ex / base, cell(rs, "logloss"),
                cell(rs, "auc"), cell(rs, "ns_per_example", 0)))
        bayes = cell(learners[default], "bayes_logloss")
        lines.append("\nBayes-optimal logloss (the true p): %s.\n" % bayes)
    return "\n".join(lines)


def grid_table(rows):
    lines = ["| learner | " + " | ".join("%s excess" % k for k in KINDS) + " |",
             "|---|" + "---|" * len(KINDS)]
    names = []
    for r in rows:
        if r["learner"] not in names:
            names.append(r["learner"])
    for name in names:
        cells = []
        for kind in KINDS:
            rs = [r for r in rows if r["kind"] == kind and r["learner"] == name]
            cells.append("%.5f" % mean([float(r["excess"]) for r in rs]) if rs else "")
        lines.append("| %s | %s |" % (name, " | ".join(cells)))
    return "\n".join(lines)


def real_table(out):
    lines = ["| log | ftrl.decay | progressive logloss [95% CI] | progressive AUC [95% CI] | "
             "test logloss [95% CI] | test AUC [95% CI] |", "|---|---|---|---|---|---|"]
    for path in sorted(glob.glob(os.path.join(out, "real_*.json"))):
        name = os.path.basename(path)[len("real_"):-len(".json")]
        log, decay = name.rsplit("_decay", 1)
        with open(path) as f:
            j = json.load(f)
        t = j.get("test", {})

        def ci(d, k):
            v = d.get(k)
            c = d.get("ci95", {}).get(k)
            if v is None:
                return ""
            if c:
                return "%.5f [%.5f, %.5f]" % (v, c["lo"], c["hi"])
            return "%.5f" % v
        lines.append("| %s | %s | %s | %s | %s | %s |" % (
            log, decay, ci(j, "logloss"), ci(j, "auc"), ci(t, "logloss"), ci(t, "auc")))
    return "\n".join(lines)


def plot_curves(out, rows, img_dir):
    fig, axes = plt.subplots(1, len(KINDS), figsize=(15, 4.2), sharey=False)
    for ax, kind in zip(axes, KINDS):
        learners = by_learner(rows, kind)
        if not learners:
            continue
        default = next(k for k, v in learners.items() if v[0]["family"] == "default")
        option = next(k for k, v in learners.items() if v[0]["family"] == "option")
        want = {default: "FTRL defaults", best(learners, "ftrl_grid"): "best FTRL grid",
                option: "drift option (decay 0.999)", best(learners, "decay_grid"): "best decay"}
        want = {k[1] + "|" + k[0]: v for k, v in want.items()}
        path = os.path.join(out, "curves_%s_1.csv" % kind)
        series = defaultdict(lambda: ([], []))
        with open(path) as f:
            for r in csv.DictReader(f):
                key = r["learner"] + "|" + r["family"]
                if key in want:
                    series[key][0].append(int(r["examples"]))
                    series[key][1].append(float(r["excess"]))
        for key, label in want.items():
            xs, ys = series[key]
            ax.plot(xs, ys, label="%s: %s" % (label, key.split("|")[0]), linewidth=1)
        ax.set_title("%s drift (seed 1)" % kind)
        ax.set_xlabel("examples")
        ax.set_ylabel("excess logloss over Bayes, per 10k window")
        ax.set_yscale("log")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(img_dir, "drift_curves.png"), dpi=110)


def main():
    out = sys.argv[1]
    img_dir = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "img")
    rows = read_summaries(out)
    report = ["### Synthetic streams", synthetic_tables(rows), "\n### Every setting searched "
              "(mean excess over the seeds)\n", grid_table(rows), "\n### Shared click logs\n",
              real_table(out)]
    text = "\n".join(report) + "\n"
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write(text)
    plot_curves(out, rows, img_dir)
    print(text)


if __name__ == "__main__":
    main()
