#!/usr/bin/python3
"""Selects each optimizer's setting, prints the CTR comparison tables and draws the plots.

Reads the runs that sweep.py recorded (OUT/manifest.json) and writes
  OUT/grid_<dataset>.csv   every setting searched, with all its metrics
  OUT/tables.md            the markdown tables of docs/results_ctr.md
  IMG/ctr_<dataset>.png    test AUC and logloss with 95% intervals
  IMG/ctr_grid.png         progressive logloss over each optimizer's rate grid

Selection rule: per dataset and optimizer, the setting with the lowest
PROGRESSIVE logloss on the training file (one online pass, each example
scored before it is learned). Exact ties go to the earlier setting in grid
order. Test and dev metrics never select anything.
"""
import argparse
import csv
import json
import math
import os
import sys

import numpy as np

OPTIMIZERS = ["ftrl", "adagrad", "adagrad_da", "pc_ogd", "global_ogd", "sgd"]
DATASET_TITLES = {"ipinyou": "iPinYou advertiser 2997", "criteo": "Criteo 8k"}
CLIP = 1e-15  # the clip of `logloss` in docs/metrics_offline.md
RESAMPLES = 1000


def last_json(path: str) -> dict:
    with open(path) as f:
        lines = [line for line in f.read().splitlines() if line.startswith("{")]
    return json.loads(lines[-1])


def load(out: str) -> dict:
    """Returns {dataset: [row]} with one row per setting, in grid order."""
    with open(os.path.join(out, "manifest.json")) as f:
        manifest = json.load(f)
    rows, by_key = {}, {}
    for m in manifest:
        key = (m["dataset"], m["run"])
        if key not in by_key:
            by_key[key] = {"dataset": m["dataset"], "optimizer": m["optimizer"],
                           "run": m["run"], "params": m["params"]}
            rows.setdefault(m["dataset"], []).append(by_key[key])
        j = last_json(m["path"])
        row = by_key[key]
        if m["split"] == "test":
            row["command"] = m["command"]
            row["progressive"] = j
            row["test"] = j["test"]
            row["seconds"] = j["seconds"]
        else:
            row["dev"] = j["test"]
    return rows


def select(rows: list) -> dict:
    best = {}
    for r in rows:
        ll = r["progressive"]["logloss"]
        b = best.get(r["optimizer"])
        if not math.isnan(ll) and (b is None or ll < b["progressive"]["logloss"]):
            best[r["optimizer"]] = r
    for r in best.values():
        r["selected"] = True
    return best


def dev_choice(rows: list) -> dict:
    best = {}
    for r in rows:
        if "dev" not in r:
            continue
        b = best.get(r["optimizer"])
        if b is None or r["dev"]["logloss"] < b["dev"]["logloss"]:
            best[r["optimizer"]] = r
    return best


def labels(path: str) -> np.ndarray:
    with open(path) as f:
        return np.array([float(line.split(None, 1)[0]) > 0 for line in f if line.strip()],
                        dtype=float)


def logloss(p: np.ndarray, y: np.ndarray) -> np.ndarray:
    q = np.clip(p, CLIP, 1 - CLIP)
    return -(y * np.log(q) + (1 - y) * np.log(1 - q))


def percentile_ci(values: np.ndarray) -> tuple:
    lo, hi = np.percentile(values, [2.5, 97.5])  # linear interpolation (type 7)
    return float(lo), float(hi)


def baselines(train: np.ndarray, test: np.ndarray, seed: int = 1) -> dict:
    """Constant predictors: the training click rate on test, and an online
    running click rate (Krichevsky-Trofimov, (clicks + 1/2) / (seen + 1))
    scored progressively on train. Intervals: the same percentile bootstrap
    as clickctl, with numpy's generator."""
    rng = np.random.default_rng(seed)
    rate = train.mean()
    test_ll = logloss(np.full(test.shape, rate), test)
    seen = np.arange(len(train))
    clicks = np.concatenate([[0.0], np.cumsum(train)[:-1]])
    prog_ll = logloss((clicks + 0.5) / (seen + 1.0), train)

    def boot(v: np.ndarray) -> tuple:
        idx = rng.integers(0, len(v), size=(RESAMPLES, len(v)))
        return percentile_ci(v[idx].mean(axis=1))

    return {"train_rate": rate, "test_rate": test.mean(), "test_positives": int(test.sum()),
            "train_positives": int(train.sum()),
            "test_logloss": test_ll.mean(), "test_ci": boot(test_ll),
            "oracle_test_logloss": logloss(np.full(test.shape, test.mean()), test).mean(),
            "prog_logloss": prog_ll.mean(), "prog_ci": boot(prog_ll)}


def setting(r: dict) -> str:
    p = r["params"]
    if r["optimizer"] == "ftrl":
        return "alpha=%g, lambda1=%g, lambda2=%g" % (p["alpha"], p["lambda1"], p["lambda2"])
    if r["optimizer"] in ("pc_ogd", "global_ogd"):
        return "R=%g, scale=%g (c=%g)" % (p["radius"], p["scale"], p["scale"] * p["radius"])
    return "eta=%g" % p["eta"]


def ci(m: dict, metric: str) -> tuple:
    c = m.get("ci95", {}).get(metric)
    return (c["lo"], c["hi"]) if c else (float("nan"), float("nan"))


def with_ci(m: dict, metric: str, digits: int) -> str:
    lo, hi = ci(m, metric)
    f = "%%.%df" % digits
    return (f + " [" + f + ", " + f + "]") % (m[metric], lo, hi)


def write_csv(path: str, rows: list) -> None:
    cols = ["dataset", "optimizer", "run", "selected", "setting", "prog_logloss", "prog_auc",
            "test_logloss", "test_logloss_lo", "test_logloss_hi", "test_auc", "test_auc_lo",
            "test_auc_hi", "test_calibration", "dev_logloss", "dev_auc", "command"]
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for r in rows:
            t = r["test"]
            w.writerow([r["dataset"], r["optimizer"], r["run"], int(r.get("selected", False)),
                        setting(r), r["progressive"]["logloss"], r["progressive"]["auc"],
                        t["logloss"], *ci(t, "logloss"), t["auc"], *ci(t, "auc"),
                        t["calibration"], r.get("dev", {}).get("logloss", ""),
                        r.get("dev", {}).get("auc", ""), r["command"]])


def selected_table(best: dict, base: dict, dev: dict) -> str:
    head = ["optimizer", "selected setting", "progressive logloss [95% CI]",
            "progressive AUC [95% CI]", "test logloss [95% CI]", "test AUC [95% CI]",
            "test calibration"]
    if dev:
        head.append("dev rule would pick")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for o in OPTIMIZERS:
        r = best[o]
        cells = [o, setting(r), with_ci(r["progressive"], "logloss", 4),
                 with_ci(r["progressive"], "auc", 3), with_ci(r["test"], "logloss", 4),
                 with_ci(r["test"], "auc", 3), "%.2f" % r["test"]["calibration"]]
        if dev:
            cells.append("same" if dev[o] is r else setting(dev[o]))
        lines.append("| " + " | ".join(cells) + " |")
    cells = ["constant", "running click rate (progressive), train click rate (test)",
             "%.4f [%.4f, %.4f]" % (base["prog_logloss"], *base["prog_ci"]), "0.5",
             "%.4f [%.4f, %.4f]" % (base["test_logloss"], *base["test_ci"]), "0.5",
             "%.2f" % (base["train_rate"] / base["test_rate"])]
    if dev:
        cells.append("")
    lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def grid_table(rows: list) -> str:
    has_dev = any("dev" in r for r in rows)
    head = ["optimizer", "setting", "progressive logloss", "progressive AUC", "test logloss",
            "test AUC"] + (["dev logloss"] if has_dev else [])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        mark = "**" if r.get("selected") else ""
        cells = [r["optimizer"], mark + setting(r) + mark,
                 mark + "%.5f" % r["progressive"]["logloss"] + mark,
                 "%.4f" % r["progressive"]["auc"], "%.5f" % r["test"]["logloss"],
                 "%.4f" % r["test"]["auc"]]
        if has_dev:
            cells.append("%.5f" % r["dev"]["logloss"])
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def noise_summary(best: dict, base: dict) -> str:
    """Names, per metric, the optimizers whose point estimate lies inside the
    best optimizer's 95% interval (a coarse, unpaired reading)."""
    out = []
    for split in ("progressive", "test"):
        for metric, better in (("logloss", min), ("auc", max)):
            top = better(OPTIMIZERS, key=lambda o: best[o][split][metric])
            lo, hi = ci(best[top][split], metric)
            inside = [o for o in OPTIMIZERS if lo <= best[o][split][metric] <= hi]
            out.append("%s %s: best %s %.4f [%.4f, %.4f]; inside its interval: %s" %
                       (split, metric, top, best[top][split][metric], lo, hi, ", ".join(inside)))
    lo, hi = base["test_ci"]
    beat = [o for o in OPTIMIZERS if best[o]["test"]["ci95"]["logloss"]["hi"] < lo]
    worse = [o for o in OPTIMIZERS if best[o]["test"]["ci95"]["logloss"]["lo"] > hi]
    out.append("constant %.4f [%.4f, %.4f]; intervals entirely below it: %s; entirely above "
               "it: %s" % (base["test_logloss"], lo, hi, ", ".join(beat) or "none",
                           ", ".join(worse) or "none"))
    for split in ("progressive", "test"):
        chance = [o for o in OPTIMIZERS if ci(best[o][split], "auc")[0] <= 0.5]
        out.append("%s AUC interval contains 0.5: %s" % (split, ", ".join(chance) or "none"))
    return "\n".join(out)


def plot_dataset(plt, path: str, title: str, best: dict, base: dict) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    x = np.arange(len(OPTIMIZERS))
    for ax, metric, name in ((axes[0], "auc", "test AUC"), (axes[1], "logloss", "test logloss")):
        val = np.array([best[o]["test"][metric] for o in OPTIMIZERS])
        cis = np.array([ci(best[o]["test"], metric) for o in OPTIMIZERS])
        ax.errorbar(x, val, yerr=[val - cis[:, 0], cis[:, 1] - val], fmt="o", capsize=4,
                    color="tab:blue", label="selected setting, 95% bootstrap CI")
        if metric == "auc":
            ax.axhline(0.5, color="grey", ls=":", label="chance / constant (0.5)")
        else:
            ax.axhline(base["test_logloss"], color="tab:red", ls="--",
                       label="constant = training click rate")
            ax.axhspan(*base["test_ci"], color="tab:red", alpha=0.12)
        ax.set_xticks(x, OPTIMIZERS, rotation=20)
        ax.set_title(name)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=8, loc="best")
    fig.suptitle("%s: test metrics (setting selected by progressive train logloss)" % title,
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def rate_of(r: dict) -> float:
    p = r["params"]
    if "alpha" in p:
        return p["alpha"]
    if "eta" in p:
        return p["eta"]
    return p["scale"] * p["radius"]


def plot_grid(plt, path: str, rows: dict, bases: dict) -> None:
    fig, axes = plt.subplots(1, len(rows), figsize=(11, 4))
    for ax, (dataset, rs) in zip(axes, rows.items()):
        series = {}
        for r in rs:
            p = r["params"]
            if r["optimizer"] == "ftrl" and (p["lambda1"] or p["lambda2"]):
                continue
            label = r["optimizer"]
            if "radius" in p:
                label += " R=%g" % p["radius"]
            series.setdefault(label, []).append((rate_of(r), r["progressive"]["logloss"]))
        for label, pts in series.items():
            pts.sort()
            ftrl = label == "ftrl"  # drawn over adagrad, which it equals (see docs)
            ax.plot(*zip(*pts), marker="x" if ftrl else "o", ms=8 if ftrl else 3,
                    ls="--" if "R=10" in label else ("none" if ftrl else "-"),
                    label="ftrl (lambda=0)" if ftrl else label, zorder=3 if ftrl else 2)
        base = bases[dataset]["prog_logloss"]
        low = min(r["progressive"]["logloss"] for r in rs)
        ax.axhline(base, color="black", ls=":", label="running click rate")
        ax.set_xscale("log")
        ax.set_ylim(min(low, base) * 0.97, base * 1.35)
        ax.set_xlabel("alpha (ftrl), eta (adagrad*, sgd), c = scale x R (box OGD)")
        ax.set_ylabel("progressive logloss (train)")
        ax.set_title(DATASET_TITLES[dataset], fontsize=10)
        ax.grid(alpha=0.3)
    axes[-1].legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--img", required=True)
    args = ap.parse_args()

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from sweep import DATASETS

    rows = load(args.out)
    os.makedirs(args.img, exist_ok=True)
    md, bases = [], {}
    for dataset, rs in rows.items():
        d = DATASETS[dataset]
        best = select(rs)
        dev = dev_choice(rs)
        base = bases[dataset] = baselines(labels(os.path.join(args.data, d["train"])),
                                          labels(os.path.join(args.data, d["test"])))
        write_csv(os.path.join(args.out, "grid_%s.csv" % dataset), rs)
        plot_dataset(plt, os.path.join(args.img, "ctr_%s.png" % dataset),
                     DATASET_TITLES[dataset], best, base)
        md.append("### %s: selected settings\n\n%s\n\nbaseline: train click rate %.5f (%d "
                  "clicks), test click rate %.5f (%d clicks); oracle constant (test rate) "
                  "test logloss %.4f\n\n```\n%s\n```\n\n### %s: full grid\n\n%s\n" %
                  (dataset, selected_table(best, base, dev), base["train_rate"],
                   base["train_positives"], base["test_rate"], base["test_positives"],
                   base["oracle_test_logloss"], noise_summary(best, base), dataset,
                   grid_table(rs)))
    plot_grid(plt, os.path.join(args.img, "ctr_grid.png"), rows, bases)
    text = "\n".join(md)
    with open(os.path.join(args.out, "tables.md"), "w") as f:
        f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
