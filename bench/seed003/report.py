"""Summarises seed 003's runs: fits how regret grows with T, prints markdown
tables, writes summary.csv next to the raw results and draws the PNG plots.

Usage: /usr/bin/python3 bench/seed003/report.py OUT_DIR IMG_DIR
(OUT_DIR holds runs.jsonl from run.sh.)

Fits, on the mean regret over seeds at each T:
  power law  log R = a log T + b          (a: the exponent; 0.5 for sqrt T)
  c ln T     R = c ln T                   (least squares through the origin)
  affine     R = a0 + b0 ln T
  c sqrt T   R = c sqrt T                 (least squares through the origin)
each over all T (10^2..10^6) and over the last two decades (10^4..10^6).
The exponent's 95% interval resamples the seeds (2,000 bootstrap draws).
"""

import collections
import csv
import json
import os
import sys

import numpy as np
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

LEARNERS = ["metagrad", "metagrad_diag", "adagrad"]
LABEL = {"metagrad": "MetaGrad (full)", "metagrad_diag": "MetaGrad (diag)",
         "adagrad": "AdaGrad (diag)"}
COLOR = {"metagrad": "tab:blue", "metagrad_diag": "tab:cyan", "adagrad": "tab:red"}
RANGES = {"all T": 1e2, "T >= 1e4": 1e4}


def load(out_dir):
    runs = collections.defaultdict(lambda: collections.defaultdict(dict))
    with open(os.path.join(out_dir, "runs.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            runs[(r["p"], r["dim"], r["learner"])][r["T"]][r["seed"]] = r
    return runs


def matrix(by_t, key):
    """Rows T (sorted), columns seeds: the `key` values."""
    ts = sorted(by_t)
    seeds = sorted(by_t[ts[0]])
    return np.array(ts, float), np.array([[by_t[t][s][key] for s in seeds] for t in ts])


def r2(y, fit):
    return 1 - np.sum((y - fit) ** 2) / np.sum((y - np.mean(y)) ** 2)


def power_exponent(ts, mean):
    ok = mean > 0
    return np.polyfit(np.log(ts[ok]), np.log(mean[ok]), 1)


def fits(ts, values, t_min, rng):
    sel = ts >= t_min
    ts, values = ts[sel], values[sel]
    mean = values.mean(axis=1)
    a, b = power_exponent(ts, mean)
    boot = []
    for _ in range(2000):
        cols = rng.integers(0, values.shape[1], values.shape[1])
        boot.append(power_exponent(ts, values[:, cols].mean(axis=1))[0])
    lo, hi = np.percentile(boot, [2.5, 97.5])
    ln = np.log(ts)
    c_ln = np.dot(ln, mean) / np.dot(ln, ln)
    b0, a0 = np.polyfit(ln, mean, 1)
    sq = np.sqrt(ts)
    c_sq = np.dot(sq, mean) / np.dot(sq, sq)
    return {"a": a, "a_lo": lo, "a_hi": hi, "c_ln": c_ln, "r2_ln": r2(mean, c_ln * ln),
            "a0": a0, "b0": b0, "r2_aff": r2(mean, a0 + b0 * ln), "c_sqrt": c_sq,
            "r2_sqrt": r2(mean, c_sq * sq)}


def print_tables(runs, out_dir):
    rng = np.random.default_rng(3)
    rows = []
    print("## Mean regret over seeds (against the best fixed point in hindsight)\n")
    for (p, dim) in sorted({(k[0], k[1]) for k in runs}, key=lambda k: (k[1], -k[0])):
        present = [lr for lr in LEARNERS if (p, dim, lr) in runs]
        ts = sorted(runs[(p, dim, present[0])])
        n_seeds = len(runs[(p, dim, present[0])][ts[0]])
        print(f"### p = {p}, d = {dim} ({n_seeds} seeds; mean ± standard error)\n")
        print("| T | " + " | ".join(LABEL[lr] for lr in present) + " |")
        print("|---:|" + "---:|" * len(present))
        for t in ts:
            cells = []
            for lr in present:
                v = np.array([r["regret"] for r in runs[(p, dim, lr)][t].values()])
                cells.append(f"{v.mean():.1f} ± {v.std(ddof=1) / np.sqrt(len(v)):.1f}")
            print(f"| {t:,} | " + " | ".join(cells) + " |")
        print()
        for lr in present:
            ts_arr, vals = matrix(runs[(p, dim, lr)], "regret")
            _, vals_star = matrix(runs[(p, dim, lr)], "regret_ustar")
            for name, t_min in RANGES.items():
                f = fits(ts_arr, vals, t_min, rng)
                f_star = fits(ts_arr, vals_star, t_min, rng) if p > 0.5 else None
                rows.append({"p": p, "dim": dim, "learner": lr, "range": name, **f,
                             "a_ustar": f_star["a"] if f_star else float("nan")})
    print("## Fits\n")
    print("| p | d | learner | T range | exponent a (95% CI) | a vs u* | c in c ln T (R²) | "
          "a0 + b0 ln T (R²) | c in c √T (R²) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['p']} | {r['dim']} | {LABEL[r['learner']]} | {r['range']} | "
              f"{r['a']:.3f} ({r['a_lo']:.3f}–{r['a_hi']:.3f}) | {r['a_ustar']:.3f} | "
              f"{r['c_ln']:.2f} ({r['r2_ln']:.4f}) | {r['a0']:.1f} + {r['b0']:.2f} ln T "
              f"({r['r2_aff']:.4f}) | {r['c_sqrt']:.3f} ({r['r2_sqrt']:.4f}) |")
    with open(os.path.join(out_dir, "summary.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return rows


def plot_main(runs, img_dir, p=0.6, dim=1):
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.4))
    for lr in LEARNERS:
        if (p, dim, lr) not in runs:
            continue
        ts, vals = matrix(runs[(p, dim, lr)], "regret")
        mean = vals.mean(axis=1)
        panels = [axes[1]] if lr == "adagrad" else axes[:2]
        for ax in panels:
            for col in vals.T:
                ax.plot(ts, col, color=COLOR[lr], alpha=0.15, lw=0.8)
            ax.plot(ts, mean, "o-", color=COLOR[lr], ms=3, label=LABEL[lr])
        local = np.diff(np.log(mean)) / np.diff(np.log(ts))
        axes[2].plot(np.sqrt(ts[1:] * ts[:-1]), local, "o-", color=COLOR[lr], ms=3,
                     label=LABEL[lr])
        if lr == "metagrad":
            b0, a0 = np.polyfit(np.log(ts), mean, 1)
            axes[0].plot(ts, a0 + b0 * np.log(ts), "k--", lw=1,
                         label=f"fit {a0:.1f} + {b0:.2f} ln T")
    axes[0].set(xscale="log", xlabel="T", ylabel="regret",
                title="MetaGrad, log x (a + b ln T is a line)")
    axes[1].set(xscale="log", yscale="log", xlabel="T", ylabel="regret",
                title="log-log (c √T has slope 1/2)")
    ts = np.logspace(2, 6, 5)
    axes[1].plot(ts, np.sqrt(2 * ts), "k:", lw=1, label="√(2T)")
    axes[2].axhline(0.5, color="k", ls=":", lw=1, label="1/2")
    axes[2].set(xscale="log", xlabel="T", ylabel="d ln R / d ln T", ylim=(0, 0.8),
                title="local log-log exponent (ln T: falls towards 0)")
    for ax in axes:
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8)
    fig.suptitle(f"|w - x_t|, x_t = ±1/2 with P(+1/2) = {p}, d = {dim}, domain [-1, 1]; "
                 "thin lines: seeds")
    fig.tight_layout()
    fig.savefig(os.path.join(img_dir, "seed003_regret.png"), dpi=110)


def plot_margins(runs, img_dir):
    ps = sorted({k[0] for k in runs if k[1] == 1}, reverse=True)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4))
    styles = ["o-", "s--", "^-.", "x:"]
    for i, p in enumerate(ps):
        for ax, lr in zip(axes, ["metagrad", "adagrad"]):
            ts, vals = matrix(runs[(p, 1, lr)], "regret")
            ax.plot(ts, vals.mean(axis=1), styles[i % 4], ms=3,
                    label=f"p = {p} (margin {2 * p - 1:.2f})")
    axes[0].set(xscale="log", xlabel="T", ylabel="mean regret", title=LABEL["metagrad"])
    axes[1].set(xscale="log", yscale="log", xlabel="T", ylabel="mean regret",
                title=LABEL["adagrad"] + " (log-log)")
    for ax in axes:
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8)
    fig.suptitle("margin sensitivity, d = 1 (p = 0.5: no margin)")
    fig.tight_layout()
    fig.savefig(os.path.join(img_dir, "seed003_margin.png"), dpi=110)


def plot_dim(runs, img_dir, p=0.6, dim=5):
    if not any(k[1] == dim for k in runs):
        return
    fig, ax = plt.subplots(figsize=(6.5, 4.4))
    for lr in LEARNERS:
        ts, vals = matrix(runs[(p, dim, lr)], "regret")
        ax.plot(ts, vals.mean(axis=1), "o-", color=COLOR[lr], ms=3, label=LABEL[lr])
    ax.set(xscale="log", yscale="log", xlabel="T", ylabel="mean regret",
           title=f"||w - x_t||_1, d = {dim}, p = {p}")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(img_dir, f"seed003_dim{dim}.png"), dpi=110)


def main():
    out_dir, img_dir = sys.argv[1], sys.argv[2]
    runs = load(out_dir)
    print_tables(runs, out_dir)
    plot_main(runs, img_dir)
    plot_margins(runs, img_dir)
    plot_dim(runs, img_dir)


if __name__ == "__main__":
    main()
