#!/usr/bin/env python3
"""Plots docs/img/factorization_quality.png from the outputs of run.sh and
criteo.sh (bench/out/factorization/): each model's logloss with its 95%
bootstrap interval, the latent log's as excess over the Bayes predictor.

    /usr/bin/python3 bench/factorization/plot.py   # Debian's matplotlib
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

OUT = "bench/out/factorization"
LATENT = ["linear", "linear+true_crosses", "linear+true_crosses_alpha0.05",
          "linear+true_crosses_alpha0.3", "fm", "ffm", "fm_unnormalized", "ffm_unnormalized",
          "ffm_eta0.05", "ffm_eta0.5", "ffm_dim8", "ffm_alpha0.3"]
CRITEO = ["linear", "fm", "ffm", "fm_unnormalized", "ffm_unnormalized"]


def load(path):
    with open(path) as f:
        j = json.load(f)
    return j.get("progressive", j), j.get("test")


def bars(ax, names, values, title, xlabel):
    ys = range(len(names))
    mid = [v[0] for v in values]
    err = [[v[0] - v[1] for v in values], [v[2] - v[0] for v in values]]
    colors = ["tab:gray" if n.startswith("linear") else
              ("tab:orange" if "unnormalized" in n else "tab:blue") for n in names]
    ax.barh(list(ys), mid, xerr=err, color=colors, capsize=3)
    ax.set_yticks(list(ys))
    ax.set_yticklabels(names)
    ax.invert_yaxis()
    ax.set_title(title)
    ax.set_xlabel(xlabel)


def main():
    with open(f"{OUT}/bayes.txt") as f:
        fields = f.read().split()
    bayes = float(dict(zip(fields[::2], fields[1::2]))["bayes_logloss_realized"])
    latent = []
    for name in LATENT:
        p, _ = load(f"{OUT}/{name}.json")
        ci = p["ci95"]["logloss"]
        latent.append((p["logloss"] - bayes, ci["lo"] - bayes, ci["hi"] - bayes))
    criteo_p, criteo_t = [], []
    for name in CRITEO:
        p, t = load(f"{OUT}/criteo/{name}.json")
        for m, out in ((p, criteo_p), (t, criteo_t)):
            ci = m["ci95"]["logloss"]
            out.append((m["logloss"], ci["lo"], ci["hi"]))
    fig, axes = plt.subplots(1, 3, figsize=(16, 5.5), constrained_layout=True)
    bars(axes[0], LATENT, latent, "latent-interaction log (500k, one pass)",
         "progressive logloss - Bayes [95% CI]")
    bars(axes[1], CRITEO, criteo_p, "Criteo 8k: progressive (7,200)", "logloss [95% CI]")
    bars(axes[2], CRITEO, criteo_t, "Criteo 8k: test (391)", "logloss [95% CI]")
    dest = sys.argv[1] if len(sys.argv) > 1 else "docs/img/factorization_quality.png"
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    fig.savefig(dest, dpi=90)
    print(dest)


if __name__ == "__main__":
    main()
