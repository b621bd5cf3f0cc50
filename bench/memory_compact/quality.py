#!/usr/bin/python3
"""What the compact encoding costs in learning (issue 16: within 0.1 % of float).

For each shared click log (criteo_8k, iPinYou) and a synthetic one, trains
FTRL with `clickctl replay --offline` twice, --state_encoding=float and
=compact, at clickd's defaults (alpha 0.1, beta 1) and with L1/L2
(--lambda1=1 --lambda2=1, where z's rounding meets the L1 threshold), and
prints progressive and held-back logloss and AUC of both, the relative
change, coordinates and the store's bytes. Both encodings are deterministic
(the rounding bits are a hash of key and round), so one run each says it
all. Writes bench/out/memory_compact/table.md, runs.jsonl and
docs/img/compact_quality.png.

    bash scripts/build.sh release && /usr/bin/python3 bench/memory_compact/quality.py

The logs are bench/admission's (its logs(): the synthetic one is
gen_click_log, 250,000 lines, seed 1, split in file order into 200,000
training and 50,000 held-back lines, written to bench/out/admission/).
"""
import importlib.util
import json
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.join(ROOT, os.environ.get("BUILD_DIR", "build/release"))
DATA = os.path.abspath(os.path.join(ROOT, os.environ.get("DATA_DIR", "../shared/data")))
OUT = os.path.join(ROOT, "bench", "out", "memory_compact")
SETTINGS = [("defaults", []), ("L1=1 L2=1", ["--lambda1=1", "--lambda2=1"])]
# The rounding bits are a hash of key and round, so another hash seed draws
# other roundings (float FTRL is the same up to collisions): the spread of
# the compact runs over these seeds is the rounding's noise.
HASH_SEEDS = [1, 2, 3, 4, 5]


def logs():
    """The admission study's logs (bench/admission/run.py): the same three, split alike."""
    spec = importlib.util.spec_from_file_location(
        "admission_run", os.path.join(ROOT, "bench", "admission", "run.py"))
    admission = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(admission)
    os.makedirs(admission.OUT, exist_ok=True)
    return admission.logs()


def replay(fmt, train, test, encoding, flags):
    cmd = [os.path.join(BUILD, "client", "clickctl"), "replay", "--offline", f"--format={fmt}",
           "--progress_every=0", "--json", f"--state_encoding={encoding}",
           f"--test_file={test}"] + flags + [train]
    run = subprocess.run(cmd, check=True, capture_output=True, text=True)
    result = json.loads(run.stdout.strip().splitlines()[-1])
    result["command"] = " ".join(os.path.relpath(c, ROOT) if os.path.isabs(c) else c for c in cmd)
    return result


def spread(name, fmt, train, test, runs):
    """Held-back logloss of float and compact over HASH_SEEDS, defaults."""
    out = {"float": [], "compact": []}
    for seed in HASH_SEEDS:
        for encoding in out:
            r = replay(fmt, train, test, encoding, [f"--hash_seed={seed}"])
            r["log"], r["setting"], r["encoding"], r["hash_seed"] = name, "defaults", encoding, seed
            runs.write(json.dumps(r) + "\n")
            out[encoding].append(r)
    return out


def rel(a, b):
    return 100 * (a - b) / b


def plot(rows):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    labels = [f"{name}\n{setting}" for name, setting, _, _ in rows]
    progressive = [rel(c["logloss"], f["logloss"]) for _, _, f, c in rows]
    test = [rel(c["test"]["logloss"], f["test"]["logloss"]) for _, _, f, c in rows]
    fig, ax = plt.subplots(figsize=(9, 4))
    x = range(len(rows))
    ax.bar([i - 0.2 for i in x], progressive, width=0.4, label="progressive logloss")
    ax.bar([i + 0.2 for i in x], test, width=0.4, label="held-back logloss")
    ax.axhline(0.1, color="grey", linestyle="--", linewidth=1, label="+-0.1 % (the target)")
    ax.axhline(-0.1, color="grey", linestyle="--", linewidth=1)
    ax.set_xticks(list(x))
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_ylabel("compact vs float, % change")
    ax.set_title("FTRL logloss: compact encoding (32-bit state: omega, sqrt n; 48-bit keys) against float")
    ax.legend(fontsize=8)
    fig.tight_layout()
    os.makedirs(os.path.join(ROOT, "docs", "img"), exist_ok=True)
    fig.savefig(os.path.join(ROOT, "docs", "img", "compact_quality.png"), dpi=100)


def main():
    os.makedirs(OUT, exist_ok=True)
    rows = []
    with open(os.path.join(OUT, "runs.jsonl"), "w") as runs:
        for name, fmt, train, test in logs():
            for setting, flags in SETTINGS:
                pair = []
                for encoding in ("float", "compact"):
                    r = replay(fmt, train, test, encoding, flags)
                    r["log"], r["setting"], r["encoding"] = name, setting, encoding
                    runs.write(json.dumps(r) + "\n")
                    pair.append(r)
                rows.append((name, setting, pair[0], pair[1]))
        seeds = [(name, spread(name, fmt, train, test, runs)) for name, fmt, train, test in logs()]
    lines = ["| log | setting | coordinates | store bytes float / compact | progressive logloss "
             "float / compact | change | progressive AUC float / compact | test logloss "
             "float / compact | change | test AUC float / compact |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name, setting, f, c in rows:
        lines.append(
            f"| {name} | {setting} | {f['coordinates']:,} / {c['coordinates']:,} | "
            f"{f['bytes']:,} / {c['bytes']:,} | {f['logloss']:.5f} / {c['logloss']:.5f} | "
            f"{rel(c['logloss'], f['logloss']):+.3f} % | {f['auc']:.4f} / {c['auc']:.4f} | "
            f"{f['test']['logloss']:.5f} / {c['test']['logloss']:.5f} | "
            f"{rel(c['test']['logloss'], f['test']['logloss']):+.3f} % | "
            f"{f['test']['auc']:.4f} / {c['test']['auc']:.4f} |")
    lines += ["", f"Held-back logloss over hash seeds {HASH_SEEDS}, defaults (compact change "
              "against float at the same seed):", "",
              "| log | float min / max | compact min / max | change min / max |", "|---|---|---|---|"]
    for name, s in seeds:
        f = [r["test"]["logloss"] for r in s["float"]]
        c = [r["test"]["logloss"] for r in s["compact"]]
        change = [rel(b, a) for a, b in zip(f, c)]
        lines.append(f"| {name} | {min(f):.5f} / {max(f):.5f} | {min(c):.5f} / {max(c):.5f} | "
                     f"{min(change):+.3f} % / {max(change):+.3f} % |")
    table = "\n".join(lines) + "\n"
    with open(os.path.join(OUT, "table.md"), "w") as f:
        f.write(table)
    print(table)
    plot(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
