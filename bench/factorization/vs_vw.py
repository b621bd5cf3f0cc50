#!/usr/bin/env python3
"""clickd's FM/FFM beside Vowpal Wabbit's low-rank quadratics (--lrq,
--lrqfa) on the same examples (docs/factorization.md, "Beside Vowpal
Wabbit"):

  quality: the latent-interaction log of run.sh (progressive logloss of
           one pass, and its excess over the Bayes predictor) and Criteo
           8k's train.csv (criteo_to_vw.py: the features clickd makes),
           clickd's rows from run.sh's and criteo.sh's outputs, VW's run
           here;
  speed:   training examples/s from the same VW text file (gen_uniform.py:
           5 fields, one id each), clickd FFM dim 4 against VW --lrqfa of
           rank 4, and both linear models, wall time of the whole process
           (parsing included, one thread each), median of --repeats.

    VW_BIN=/path/to/vw python3 bench/factorization/vs_vw.py
    python3 bench/factorization/vs_vw.py      # no VW_BIN: clickd rows only

VW is not part of this repository and is not built by it. Run run.sh and
criteo.sh first (they write the logs and clickd's rows).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

from latent_table import bayes_logloss  # this directory's

OUT = "bench/out/factorization"
LATENT = f"{OUT}/latent_500000_seed1.vw"

# VW settings tried on the latent log: every row here is published.
# Namespaces user, site, device, ad: VW names them by first letter.
VW_QUALITY = [
    ("vw linear", []),
    ("vw -q (true crosses)", ["-q", "ua", "-q", "sa", "-q", "da"]),
    ("vw --lrq rank 4 (true pairs)", ["--lrq", "ua4", "--lrq", "sa4", "--lrq", "da4"]),
    ("vw --lrq rank 4, -l 0.1", ["--lrq", "ua4", "--lrq", "sa4", "--lrq", "da4", "-l", "0.1"]),
    ("vw --lrq rank 4, --lrqdropout", ["--lrq", "ua4", "--lrq", "sa4", "--lrq", "da4",
                                       "--lrqdropout"]),
    ("vw --lrq rank 4, all 6 pairs", ["--lrq", "ua4", "--lrq", "sa4", "--lrq", "da4",
                                      "--lrq", "us4", "--lrq", "ud4", "--lrq", "sd4"]),
    ("vw --lrq rank 4, all 6 pairs, -l 0.1", ["--lrq", "ua4", "--lrq", "sa4", "--lrq", "da4",
                                              "--lrq", "us4", "--lrq", "ud4", "--lrq", "sd4",
                                              "-l", "0.1"]),
    ("vw --lrqfa rank 4 (usda)", ["--lrqfa", "usda4"]),
    ("vw --lrqfa rank 4, -l 0.1", ["--lrqfa", "usda4", "-l", "0.1"]),
    ("vw --lrqfa rank 4, -l 0.02", ["--lrqfa", "usda4", "-l", "0.02"]),
]
CLICKD_QUALITY = ["linear", "linear+true_crosses_alpha0.3", "fm", "ffm"]

# Criteo 8k: criteo_to_vw.py names C1..C16 (clickd's factor fields) a..p.
_FIELDS = "abcdefghijklmnop"
_LRQ_ALL = [arg for i, a in enumerate(_FIELDS) for b in _FIELDS[i + 1:]
            for arg in ("--lrq", f"{a}{b}4")]
VW_CRITEO = [
    ("vw linear", []),
    ("vw --lrq rank 4, all 120 pairs of C1..C16", _LRQ_ALL),
    ("vw --lrq rank 4, all 120 pairs, -l 0.1", _LRQ_ALL + ["-l", "0.1"]),
    ("vw --lrqfa rank 4 over C1..C16", ["--lrqfa", _FIELDS + "4"]),
    ("vw --lrqfa rank 4, -l 0.1", ["--lrqfa", _FIELDS + "4", "-l", "0.1"]),
    ("vw --lrqfa rank 4, -l 0.02", ["--lrqfa", _FIELDS + "4", "-l", "0.02"]),
]
CLICKD_CRITEO = ["linear", "fm", "ffm"]


def vw_average_loss(vw, args, data):
    """VW's progressive average loss of one pass (logistic: logloss)."""
    p = subprocess.run([vw, "-d", data, "--loss_function", "logistic", "-b", "24",
                        "--progress", "1000000000"] + args,
                       capture_output=True, text=True, timeout=1800)
    m = re.search(r"average loss = ([-+0-9.eEnaif]+)", p.stderr)
    if p.returncode != 0 or not m:
        return float("nan"), p.stderr[-300:]
    return float(m.group(1)), ""


def timed(cmd, repeats):
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=1800)
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds), seconds


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build_dir", default=os.environ.get("BUILD_DIR", "build/release"))
    ap.add_argument("--examples", type=int, default=1000000, help="speed: examples")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    clickctl = f"{args.build_dir}/client/clickctl"
    vw = os.environ.get("VW_BIN", "")
    if vw and not os.access(vw, os.X_OK):
        sys.exit(f"vs_vw.py: VW_BIN={vw} is not an executable")
    if not vw:
        print("VW_BIN is not set: the VW rows are skipped (clickd rows only)")
    else:
        version = subprocess.run([vw, "--version"], capture_output=True, text=True).stdout.strip()
        print(f"VW: {vw} version {version}")
    print(f"date: {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}, "
          f"load: {open('/proc/loadavg').read().split()[:3]}")

    # Quality.
    bayes = bayes_logloss(OUT)
    print(f"\nlatent log, one pass; Bayes logloss {bayes:.5f}")
    print("| model | progressive logloss | excess over Bayes |")
    print("|---|---|---|")
    for name in CLICKD_QUALITY:
        j = json.load(open(f"{OUT}/{name}.json"))
        ll = j.get("progressive", j)["logloss"]
        print(f"| clickd {name} | {ll:.5f} | {ll - bayes:.5f} |")
    if vw:
        for name, flags in VW_QUALITY:
            ll, err = vw_average_loss(vw, flags, LATENT)
            note = f" (failed: {err.strip()[-120:]})" if err else ""
            print(f"| {name} `{' '.join(flags)}` | {ll:.5f} | {ll - bayes:.5f}{note} |")

    # Criteo 8k, progressive logloss of one pass over train.csv (clickd's
    # rows from criteo.sh).
    criteo = f"{OUT}/criteo/train.vw"
    print("\nCriteo 8k train.csv, one pass")
    print("| model | progressive logloss |")
    print("|---|---|")
    for name in CLICKD_CRITEO:
        j = json.load(open(f"{OUT}/criteo/{name}.json"))
        print(f"| clickd {name} | {j.get('progressive', j)['logloss']:.5f} |")
    if vw:
        if not os.path.exists(criteo):
            subprocess.run([sys.executable, "bench/factorization/criteo_to_vw.py",
                            "../shared/data/criteo_8k/train.csv", criteo], check=True)
        for name, flags in VW_CRITEO:
            ll, err = vw_average_loss(vw, flags, criteo)
            shown = " ".join(flags) if len(flags) < 10 else "--lrq ab4 --lrq ac4 ... --lrq op4"
            shown += " -l 0.1" if len(flags) >= 10 and "-l" in flags else ""
            note = f" (failed: {err.strip()[-120:]})" if err else ""
            print(f"| {name} `{shown}` | {ll:.5f}{note} |")

    # Speed.
    data = f"{OUT}/uniform5_{args.examples}.vw"
    if not os.path.exists(data):
        subprocess.run([sys.executable, "bench/factorization/gen_uniform.py",
                        "--examples", str(args.examples), "--out", data], check=True)
    replay = [clickctl, "replay", "--offline", "--format=vw", "--bootstrap=0",
              "--progress_every=0", "--optimizer=ftrl"]
    runs = [("clickd linear (FTRL)", replay + [data]),
            ("clickd FFM, 5 fields, dim 4", replay + ["--factorization=ffm",
                                                     "--factor_fields=a,b,c,d,e", data])]
    if vw:
        base = [vw, "-d", data, "--loss_function", "logistic", "-b", "24", "--quiet"]
        runs += [("vw linear", base), ("vw --lrqfa abcde4", base + ["--lrqfa", "abcde4"])]
    print(f"\ntraining speed, {args.examples} examples of 5 fields from one VW text file, "
          f"whole process, median of {args.repeats}")
    print("| trainer | seconds (each run) | examples/s |")
    print("|---|---|---|")
    rate = {}
    for name, cmd in runs:
        median, each = timed(cmd, args.repeats)
        rate[name] = args.examples / median
        print(f"| {name} | {median:.3f} ({', '.join(f'{s:.3f}' for s in each)}) | "
              f"{rate[name]:,.0f} |")
    if vw:
        ratio = rate["clickd FFM, 5 fields, dim 4"] / rate["vw --lrqfa abcde4"]
        print(f"\nclickd FFM / VW --lrqfa: {ratio:.2f}x (target: at least 2x)")
    print(f"load after: {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
