#!/usr/bin/env python3
"""Where the CPU of one acknowledged Update goes, replicated against the file log.

  BUILD_DIR=build/release python3 bench/replication/cpu_per_update.py \
      [--writers=8] [--batch=100] [--seconds=20] [--replica_flags="..."]

Runs replication_bench's throughput cell once (--throughput_only: the file-log
clickd, then the 3 replicas, each for --seconds), samples the CPU time of every
process it started from /proc every 0.5 s, and prints for each phase the CPU
milliseconds per acknowledged Update of each kind of process (NATS nodes,
replicas, the file-log clickd, the load generator), and what that implies: the
updates/s the replicated path could reach if it had the machine's every core to
itself, against what the file log reached. Linux only; every process is
replication_bench's child and stops with it.
"""

import argparse
import os
import re
import subprocess
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")


def children_of(root):
    """Every descendant pid of `root`."""
    parents = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            parents[int(pid)] = int(fields[1])
        except (OSError, IndexError):
            continue
    out, frontier = set(), {root}
    while frontier:
        frontier = {p for p, parent in parents.items() if parent in frontier} - out
        out |= frontier
    return out


def cpu_ticks(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime + stime
    except (OSError, IndexError):
        return None


def kind_of(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            args = f.read().decode(errors="replace").split("\0")
    except OSError:
        return None
    line = " ".join(args)
    if "nats-server" in line:
        return "nats"
    if "--replication=jetstream" in line:
        return "replicas"
    if "--update_log_sync" in line:
        return "file_log_server"
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--writers", type=int, default=8)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--replica_flags", default="")
    args = ap.parse_args()
    build = os.environ.get("BUILD_DIR", "build/release")
    bench = os.path.join(build, "bench/replication/replication_bench")
    clickd = os.path.join(build, "server/clickd")
    for path in (bench, clickd):
        if not os.path.exists(path):
            sys.exit(f"cpu_per_update.py: {path} is missing (build replication_bench and clickd)")
    work = os.environ.get("WORK_DIR", "bench/out/replication/cpu_data")
    cmd = [bench, f"--work_dir={work}", f"--clickd={clickd}", f"--writers={args.writers}",
           f"--batch_sizes={args.batch}", "--repeats=1", f"--seconds={args.seconds}",
           "--throughput_only", f"--replica_flags={args.replica_flags}"]
    print("command:", " ".join(cmd), flush=True)
    with open("/proc/loadavg") as f:
        print("load before:", " ".join(f.read().split()[:3]), flush=True)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    last = {}
    # Per phase ("file_log" or "replicated"): CPU ticks by kind.
    phases = {"file_log": {}, "replicated": {}}
    import threading
    output = []
    reader = threading.Thread(target=lambda: output.extend(proc.stdout), daemon=True)
    reader.start()
    while proc.poll() is None:
        time.sleep(0.5)
        delta = {}
        for pid in children_of(proc.pid) | {proc.pid}:
            ticks = cpu_ticks(pid)
            if ticks is None:
                continue
            kind = "load_generator" if pid == proc.pid else kind_of(pid)
            if kind is None:
                continue
            if pid in last:
                delta[kind] = delta.get(kind, 0) + ticks - last[pid]
            last[pid] = ticks
        # The phase is whichever server side worked in this interval; idle
        # intervals (start, warm-up, drain) are dropped.
        file_side = delta.get("file_log_server", 0)
        replicated_side = delta.get("replicas", 0) + delta.get("nats", 0)
        if max(file_side, replicated_side) < 0.2 * TICK:  # under 40% of a core
            continue
        phase = "file_log" if file_side > replicated_side else "replicated"
        for kind, ticks in delta.items():
            phases[phase][kind] = phases[phase].get(kind, 0) + ticks
    reader.join(timeout=5)
    text = "".join(output)
    rates = dict(re.findall(r"(file_log|replicated)\s+writers \d+ batch +\d+ rep 0:\s+([\d.]+) updates/s",
                            text))
    if len(rates) != 2:
        print(text)
        sys.exit("cpu_per_update.py: the bench did not report both cells")
    with open("/proc/loadavg") as f:
        print("load after:", " ".join(f.read().split()[:3]))
    cores = os.cpu_count()
    print(f"\n{args.writers} writers x {args.batch} examples, {args.seconds:g} s per phase, "
          f"{cores} cores shared by every process")
    print("| phase | updates/s | kind | CPU ms per update |")
    print("|---|---|---|---|")
    per_update_total = {}
    for phase in ("file_log", "replicated"):
        rate = float(rates[phase])
        updates = rate * args.seconds
        total = 0.0
        for kind in sorted(phases[phase]):
            ms = phases[phase][kind] / TICK * 1000 / updates
            total += ms
            print(f"| {phase} | {rate:.0f} | {kind} | {ms:.3f} |")
        per_update_total[phase] = total
        print(f"| {phase} | {rate:.0f} | all | {total:.3f} |")
    file_rate = float(rates["file_log"])
    replicated_servers = sum(v for k, v in phases["replicated"].items() if k != "load_generator")
    server_ms = replicated_servers / TICK * 1000 / (float(rates["replicated"]) * args.seconds)
    ceiling = cores * 1000 / server_ms
    print(f"\nreplicated servers (NATS + replicas): {server_ms:.3f} CPU ms per update; with all "
          f"{cores} cores and no load generator they could acknowledge at most {ceiling:.0f} "
          f"updates/s = {ceiling / file_rate:.2f}x the file log's {file_rate:.0f} in this run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
