#!/usr/bin/python3
"""Online champion vs offline grid vs defaults, on held-back data (issue 14, item 4).

For every shared click log (criteo_8k, iPinYou) and two synthetic ones (the
stationary log of bench/throughput's gen_click_log, and an abruptly drifting
log from bench/drift), with `clickctl replay --offline` (one pass over the
training file in file order, progressive validation, then the held-back
file scored by the final model, 1,000 bootstrap resamples):

  * every per-coordinate optimizer at clickd's defaults;
  * one model with variants (docs/variants.md): FTRL at its defaults as the
    primary and the 8 variants of VARIANTS, all at settings fixed here in
    advance; its progressive metrics are what Predict served (the champion
    of the moment), its test metrics the final champion's;
  * the offline grid of bench/ctr (69 settings of six optimizers), the best
    setting selected by progressive logloss on the training file (the rule
    of bench/ctr/report.py), with the grid's total CPU time as its cost.

    bash scripts/build.sh release && /usr/bin/python3 bench/variants/compare.py
    BUILD_DIR=build/rel JOBS=2 /usr/bin/python3 bench/variants/compare.py
    REPORT_ONLY=1 /usr/bin/python3 bench/variants/compare.py   # tables from runs.jsonl

Writes bench/out/variants/compare.md (the tables of docs/variants.md) and
runs.jsonl (every run's command and JSON).
"""
import concurrent.futures
import json
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "bench", "ctr"))
import sweep  # noqa: E402  (bench/ctr's grid)

BUILD = os.path.join(ROOT, os.environ.get("BUILD_DIR", "build/release"))
DATA = os.path.abspath(os.path.join(ROOT, os.environ.get("DATA_DIR", "../shared/data")))
OUT = os.path.join(ROOT, "bench", "out", "variants")
JOBS = int(os.environ.get("JOBS", "2"))
BOOTSTRAP = int(os.environ.get("BOOTSTRAP", "1000"))
CLICKCTL = os.path.join(BUILD, "client", "clickctl")

DEFAULT_OPTIMIZERS = ["ftrl", "adagrad", "adagrad_da", "pc_ogd", "global_ogd", "sgd",
                      "metagrad_diag"]
# The variants beside FTRL at its defaults: every other optimizer at its
# defaults but global_ogd (8 variants at most), two FTRL rates either side of
# the default and the drift option. Fixed before any run.
VARIANTS = ("adagrad:optimizer=adagrad;adagrad_da:optimizer=adagrad_da;"
            "pc_ogd:optimizer=pc_ogd;sgd:optimizer=sgd;metagrad:optimizer=metagrad_diag;"
            "ftrl_a0.03:alpha=0.03;ftrl_a0.3:alpha=0.3;ftrl_decay:ftrl_decay=0.999")


def split_file(whole, train, test, train_lines):
    with open(whole) as f, open(train, "w") as tr, open(test, "w") as te:
        for i, line in enumerate(f):
            (tr if i < train_lines else te).write(line)


def logs():
    os.makedirs(OUT, exist_ok=True)
    synthetic_train = os.path.join(OUT, "synthetic_train.vw")
    synthetic_test = os.path.join(OUT, "synthetic_test.vw")
    if not os.path.exists(synthetic_test):
        whole = os.path.join(OUT, "synthetic_250k.vw")
        subprocess.run([os.path.join(BUILD, "bench", "throughput", "gen_click_log"),
                        "--examples=250000", "--seed=1", whole], check=True, capture_output=True)
        split_file(whole, synthetic_train, synthetic_test, 200000)
        os.remove(whole)
    drift_train = os.path.join(OUT, "drift_train.vw")
    drift_test = os.path.join(OUT, "drift_test.vw")
    if not os.path.exists(drift_test):
        whole = os.path.join(OUT, "drift_600k.vw")
        # Abrupt drift every 100,000 examples; the held-back part is the last
        # 100,000 (one whole period after the last training example's world).
        subprocess.run([os.path.join(BUILD, "bench", "drift", "drift_bench"), "--kind=abrupt",
                        "--seed=1", "--examples=600000", "--period=100000",
                        "--write_vw=" + whole, "--learn=false", "--out=" + OUT],
                       check=True, capture_output=True)
        split_file(whole, drift_train, drift_test, 500000)
        os.remove(whole)
    return [
        ("criteo_8k", "criteo", os.path.join(DATA, "criteo_8k", "train.csv"),
         os.path.join(DATA, "criteo_8k", "test.csv")),
        ("ipinyou", "libsvm", os.path.join(DATA, "ipinyou", "train.fm.txt"),
         os.path.join(DATA, "ipinyou", "test.fm.txt")),
        ("synthetic 200k", "vw", synthetic_train, synthetic_test),
        ("drift 500k", "vw", drift_train, drift_test),
    ]


def command(fmt, train, test, flags):
    return ([CLICKCTL, "replay", "--offline", "--format=" + fmt, "--loss=logistic",
             "--progress_every=0", "--json", "--test_file=" + test,
             "--bootstrap=%d" % BOOTSTRAP, "--bootstrap_seed=1"] + flags + [train])


def run(job):
    """Runs one replay; returns its JSON and its own CPU seconds (wait4)."""
    kind, label, cmd = job
    with open(os.devnull, "w") as null:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=null, text=True)
        out = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise RuntimeError("%s failed with status %d" % (" ".join(cmd), status))
    result = json.loads(out.strip().splitlines()[-1])
    return kind, label, cmd, result, usage.ru_utime + usage.ru_stime


def ci(d, key):
    v, c = d.get(key), d.get("ci95", {}).get(key)
    if v is None:
        return "-"
    return "%.4f [%.4f, %.4f]" % (v, c["lo"], c["hi"]) if c else "%.4f" % v


def main():
    jobs = []
    for name, fmt, train, test in logs():
        for opt in DEFAULT_OPTIMIZERS:
            jobs.append(((name, "default"), opt, command(fmt, train, test, ["--optimizer=" + opt])))
        jobs.append(((name, "champion"), "ftrl + 8 variants",
                     command(fmt, train, test, ["--optimizer=ftrl", "--variants=" + VARIANTS])))
        for opt, run_name, params in sweep.grid():
            flags = ["--optimizer=" + opt] + ["--%s=%.10g" % (k, v) for k, v in params.items()]
            jobs.append(((name, "grid"), run_name, command(fmt, train, test, flags)))
    runs = os.path.join(OUT, "runs.jsonl")
    results = []
    if os.environ.get("REPORT_ONLY"):  # the tables again from the last run's runs.jsonl
        with open(runs) as f:
            for line in f:
                r = json.loads(line)
                results.append(((r["log"], r["kind"]), r["label"], r["cmd"], r["result"],
                                r["cpu_seconds"]))
    else:
        # Runs in threads (each waits on its own clickctl); CPU time is per run.
        with concurrent.futures.ThreadPoolExecutor(max_workers=JOBS) as pool:
            for r in pool.map(run, jobs):
                results.append(r)
        with open(runs, "w") as f:
            for (name, kind), label, cmd, result, cpu in results:
                f.write(json.dumps({"log": name, "kind": kind, "label": label, "cmd": cmd,
                                    "cpu_seconds": cpu, "result": result}) + "\n")
    lines = []
    for name, _, _, _ in logs():
        rows = [r for r in results if r[0][0] == name]
        lines.append("\n#### %s\n" % name)
        lines.append("| learner | progressive logloss [95% CI] | progressive AUC [95% CI] | "
                     "test logloss [95% CI] | test AUC [95% CI] | cost |")
        lines.append("|---|---|---|---|---|---|")
        for (_, kind), label, _, res, cpu in rows:
            if kind != "default":
                continue
            lines.append("| %s at defaults | %s | %s | %s | %s | 1 run, %.1f CPU s |" % (
                label, ci(res, "logloss"), ci(res, "auc"), ci(res["test"], "logloss"),
                ci(res["test"], "auc"), cpu))
        for (_, kind), label, _, res, cpu in rows:
            if kind != "champion":
                continue
            final = next((v["name"] for v in res.get("variants", []) if v["champion"]), "?")
            lines.append("| **online champion** (%s; final champion: %s) | %s | %s | %s | %s | "
                         "1 run, %.1f CPU s |" % (label, final, ci(res, "logloss"),
                                                  ci(res, "auc"), ci(res["test"], "logloss"),
                                                  ci(res["test"], "auc"), cpu))
        grid = [r for r in rows if r[0][1] == "grid"]
        best = min(grid, key=lambda r: r[3]["logloss"])
        total_cpu = sum(r[4] for r in grid)
        lines.append("| offline grid best by progressive logloss (%s) | %s | %s | %s | %s | "
                     "%d runs, %.1f CPU s |" % (best[1], ci(best[3], "logloss"),
                                                ci(best[3], "auc"), ci(best[3]["test"], "logloss"),
                                                ci(best[3]["test"], "auc"), len(grid), total_cpu))
    text = "\n".join(lines) + "\n"
    with open(os.path.join(OUT, "compare.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
