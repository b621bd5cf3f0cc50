#!/usr/bin/python3
"""Runs the optimizer grid of the CTR comparison through `clickctl replay`.

For every dataset and every setting in GRID it trains one online pass over
the training file in file order (progressive validation) and scores the
test file, with bootstrap intervals. On Criteo it also trains a second
model per setting and scores dev.csv; the dev numbers are published but do
not select anything (the selection rule is in report.py).

Each run's stdout goes to OUT/raw/<dataset>/<run>.<split>.out; its last line
is the JSON object that report.py reads. Exits non-zero if any run fails.
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import time

RATES = [0.01, 0.03, 0.1, 0.3, 1.0]
# Beyond the brief's grid on purpose: the best setting must not sit on an edge.
ETAS = RATES + [3.0, 10.0]
# Box methods: scale = c / R, so c is the step constant (eta_i = 2 c / sqrt(G_i)
# for pc_ogd) and R only matters when the clip binds. Section 5.1 of Streeter &
# McMahan used c = 0.6 (per-coordinate) and c = 0.2 (global).
BOX_C = [0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0]
RADII = [1.0, 10.0]
FTRL_L1 = [0.0, 1.0]
FTRL_L2 = [0.0, 1.0]

DATASETS = {
    "ipinyou": {"format": "libsvm", "train": "ipinyou/train.fm.txt",
                "test": "ipinyou/test.fm.txt", "dev": None},
    "criteo": {"format": "criteo", "train": "criteo_8k/train.csv",
               "test": "criteo_8k/test.csv", "dev": "criteo_8k/dev.csv"},
}


def fmt(x: float) -> str:
    return "%g" % x


def grid() -> list:
    """Returns (optimizer, run name, flags, params) for every setting searched."""
    out = []
    for l1 in FTRL_L1:
        for l2 in FTRL_L2:
            for a in RATES:
                params = {"alpha": a, "beta": 1.0, "lambda1": l1, "lambda2": l2}
                out.append(("ftrl", "ftrl_alpha%s_l1%s_l2%s" % (fmt(a), fmt(l1), fmt(l2)), params))
    for opt in ("adagrad", "adagrad_da"):
        for eta in ETAS:
            out.append((opt, "%s_eta%s" % (opt, fmt(eta)), {"eta": eta, "delta": 1.0}))
    for opt in ("pc_ogd", "global_ogd"):
        for r in RADII:
            for c in BOX_C:
                params = {"radius": r, "scale": c / r}
                out.append((opt, "%s_R%s_c%s" % (opt, fmt(r), fmt(c)), params))
    for eta in ETAS:
        out.append(("sgd", "sgd_eta%s" % fmt(eta), {"eta": eta}))
    return out


def command(clickctl: str, data: str, dataset: str, split: str, optimizer: str, params: dict,
            bootstrap: int) -> list:
    d = DATASETS[dataset]
    cmd = [clickctl, "replay", "--offline", "--format=" + d["format"], "--loss=logistic",
           "--optimizer=" + optimizer]
    cmd += ["--%s=%.10g" % (k, v) for k, v in params.items()]
    cmd += ["--test_file=" + os.path.join(data, d[split]), "--progress_every=0", "--json"]
    if split == "test" and bootstrap > 0:
        cmd += ["--bootstrap=%d" % bootstrap, "--bootstrap_seed=1"]
    cmd.append(os.path.join(data, d["train"]))
    return cmd


def run_one(job: tuple) -> tuple:
    cmd, path = job
    proc = subprocess.run(cmd, capture_output=True, text=True)
    with open(path, "w") as f:
        f.write("$ " + " ".join(cmd) + "\n" + proc.stdout)
        if proc.stderr:
            f.write("--- stderr\n" + proc.stderr)
    ok = proc.returncode == 0 and proc.stdout.strip().splitlines()[-1].startswith("{")
    return path, ok, proc.stderr.strip()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--clickctl", required=True)
    ap.add_argument("--data", required=True, help="the shared data folder")
    ap.add_argument("--out", required=True)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--bootstrap", type=int, default=1000)
    args = ap.parse_args()

    jobs, manifest = [], []
    for dataset, d in DATASETS.items():
        raw = os.path.join(args.out, "raw", dataset)
        os.makedirs(raw, exist_ok=True)
        for optimizer, name, params in grid():
            for split in ("test", "dev"):
                if d[split] is None:
                    continue
                cmd = command(args.clickctl, args.data, dataset, split, optimizer, params,
                              args.bootstrap)
                path = os.path.join(raw, "%s.%s.out" % (name, split))
                jobs.append((cmd, path))
                manifest.append({"dataset": dataset, "optimizer": optimizer, "run": name,
                                 "split": split, "params": params, "path": path,
                                 "command": " ".join(cmd)})
    start = time.monotonic()
    failed = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for path, ok, err in pool.map(run_one, jobs):
            if not ok:
                failed.append(path)
                print("FAILED %s: %s" % (path, err), file=sys.stderr)
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print("sweep: %d runs in %.1f s with %d jobs" % (len(jobs), time.monotonic() - start,
                                                     args.jobs))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
