#!/usr/bin/python3
"""Feature admission's memory saved and quality cost (issue 16, item 2).

For each shared click log (criteo_8k, iPinYou) and a synthetic one, trains
FTRL at clickd's defaults with `clickctl replay --offline` once per admission
probability (--admission_probability; 1 = every feature at once, the
default) and with the Bloom filter policy (--admission=bloom, min_count 2
and 3, the default 2^20 counters per generation: 2 MiB of filter) and
prints the coordinates kept, the store's bytes, and progressive
and test logloss and AUC, each beside the run that admits everything. Writes
the table to bench/out/admission/table.md and every run's JSON to
bench/out/admission/runs.jsonl.

    bash scripts/build.sh release && /usr/bin/python3 bench/admission/run.py
    BUILD_DIR=build/rel DATA_DIR=../shared/data /usr/bin/python3 bench/admission/run.py

The synthetic log comes from bench/throughput's gen_click_log (250,000
lines, seed 1), split in file order into 200,000 training and 50,000
held-back lines, written to bench/out/admission/ once.
"""
import json
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.join(ROOT, os.environ.get("BUILD_DIR", "build/release"))
DATA = os.path.abspath(os.path.join(ROOT, os.environ.get("DATA_DIR", "../shared/data")))
OUT = os.path.join(ROOT, "bench", "out", "admission")
PROBABILITIES = [1.0, 0.5, 0.3, 0.1, 0.03]
BLOOM_MIN_COUNTS = [2, 3]
BLOOM_FILTER_BYTES = 2 * (1 << 20)  # two generations of 2^20 one-byte counters


def logs():
    synthetic_train = os.path.join(OUT, "synthetic_train.vw")
    synthetic_test = os.path.join(OUT, "synthetic_test.vw")
    gen = os.path.join(BUILD, "bench", "throughput", "gen_click_log")
    if not os.path.exists(synthetic_test):
        # One log from one hidden model (the seed draws it), split in file
        # order: the first 200,000 lines train, the next 50,000 are held back.
        whole = os.path.join(OUT, "synthetic_250k.vw")
        subprocess.run([gen, "--examples=250000", "--seed=1", whole], check=True,
                       capture_output=True)
        with open(whole) as f, open(synthetic_train, "w") as train, \
                open(synthetic_test, "w") as test:
            for i, line in enumerate(f):
                (train if i < 200000 else test).write(line)
        os.remove(whole)
    return [
        ("criteo_8k", "criteo", os.path.join(DATA, "criteo_8k", "train.csv"),
         os.path.join(DATA, "criteo_8k", "test.csv")),
        ("ipinyou", "libsvm", os.path.join(DATA, "ipinyou", "train.fm.txt"),
         os.path.join(DATA, "ipinyou", "test.fm.txt")),
        ("synthetic 200k", "vw", synthetic_train, synthetic_test),
    ]


def replay(fmt, train, test, policy):
    """policy: ("poisson", p) or ("bloom", min_count)."""
    kind, value = policy
    flags = ([f"--admission_probability={value:g}"] if kind == "poisson" else
             ["--admission=bloom", f"--admission_min_count={value}"])
    cmd = [os.path.join(BUILD, "client", "clickctl"), "replay", "--offline", f"--format={fmt}",
           "--progress_every=0", "--json", *flags, f"--test_file={test}", train]
    run = subprocess.run(cmd, check=True, capture_output=True, text=True)
    result = json.loads(run.stdout.strip().splitlines()[-1])
    result["command"] = " ".join(os.path.relpath(c, ROOT) if os.path.isabs(c) else c for c in cmd)
    return result


def main():
    os.makedirs(OUT, exist_ok=True)
    rows = []
    with open(os.path.join(OUT, "runs.jsonl"), "w") as runs:
        for name, fmt, train, test in logs():
            base = None
            policies = ([("poisson", p) for p in PROBABILITIES] +
                        [("bloom", m) for m in BLOOM_MIN_COUNTS])
            for policy in policies:
                r = replay(fmt, train, test, policy)
                r["log"], r["policy"] = name, list(policy)
                runs.write(json.dumps(r) + "\n")
                base = base or r
                rows.append((name, policy, r, base))
    lines = ["| log | admission | coordinates | vs all | store bytes | filter bytes | "
             "progressive logloss | change | progressive AUC | test logloss | change | test AUC |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, (kind, value), r, base in rows:
        label = f"p = {value:g}" if kind == "poisson" else f"bloom, min_count {value}"
        filter_bytes = BLOOM_FILTER_BYTES if kind == "bloom" else 0
        def rel(key, part=None):
            a = r[part][key] if part else r[key]
            b = base[part][key] if part else base[key]
            return f"{100 * (a - b) / b:+.2f} %"
        lines.append(
            f"| {name} | {label} | {r['coordinates']:,} | {r['coordinates'] / base['coordinates']:.2f}x"
            f" | {r['bytes']:,} | {filter_bytes:,} | {r['logloss']:.5f} | {rel('logloss')} | {r['auc']:.4f} | "
            f"{r['test']['logloss']:.5f} | {rel('logloss', 'test')} | {r['test']['auc']:.4f} |")
    table = "\n".join(lines) + "\n"
    with open(os.path.join(OUT, "table.md"), "w") as f:
        f.write(table)
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
