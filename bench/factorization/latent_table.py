#!/usr/bin/env python3
"""Prints the latent-log table of run.sh and sweep.sh (issue 37).

  latent_table.py OUT_DIR 'name|flags' ...

OUT_DIR holds bayes.txt (gen_latent.py's output line) and NAME.json for
every run (the last line of `clickctl replay --offline --json`). Prints the
Bayes logloss and, per run, its progressive logloss with the replay's 95%
bootstrap interval and its excess over the Bayes logloss (the interval
shifted by it: not a paired bootstrap). With --summary, prints one line
instead: the best crosses row (lowest excess among runs whose name starts
with "crosses") and the ratio to it of the rows fm_eta{0.2,0.5,1} and
ffm_eta{0.2,0.5,1} (sweep.sh's).
"""
import json
import sys


def bayes_logloss(out):
    """The realized Bayes logloss of OUT_DIR/bayes.txt (gen_latent.py's line)."""
    with open(f"{out}/bayes.txt") as f:
        fields = f.read().split()
    return float(dict(zip(fields[::2], fields[1::2]))["bayes_logloss_realized"])


def load(out, runs):
    bayes = bayes_logloss(out)
    rows = []
    for run in runs:
        name, flags = run.split("|", 1)
        m = json.load(open(f"{out}/{name}.json"))
        m = m.get("progressive", m)
        ci = m["ci95"]["logloss"]
        rows.append((name, flags, m["logloss"], ci["lo"], ci["hi"]))
    return bayes, rows


def main():
    args = sys.argv[1:]
    summary = args[0] == "--summary"
    if summary:
        args = args[1:]
    out, runs = args[0], args[1:]
    bayes, rows = load(out, runs)
    if summary:
        excess = {name: ll - bayes for name, _, ll, _, _ in rows}
        crosses = min((e, n) for n, e in excess.items() if n.startswith("crosses"))

        def ratios(kind):
            return ", ".join(f"{excess[f'{kind}_eta{eta}'] / crosses[0]:.2f}"
                             for eta in ("0.2", "0.5", "1"))

        print(f"| {out.rstrip('/').split('/')[-1]} | {bayes:.5f} | {crosses[0]:.5f} ({crosses[1]}) | "
              f"{ratios('fm')} | {ratios('ffm')} |")
        return
    print(f"Bayes logloss (realized on these examples): {bayes:.5f}")
    print("| model | flags | logloss [95% CI] | excess over Bayes [95% CI] |")
    print("|---|---|---|---|")
    for name, flags, ll, lo, hi in rows:
        print(f"| {name} | `{flags}` | {ll:.5f} [{lo:.5f}, {hi:.5f}] | "
              f"{ll - bayes:.5f} [{lo - bayes:.5f}, {hi - bayes:.5f}] |")


if __name__ == "__main__":
    main()
