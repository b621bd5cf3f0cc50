#!/usr/bin/env python3
"""Memory of an embedded replica against the model's own size (docs/embedded.md).

  PYTHONPATH=build/release/client/python/stubs:client/python \
  CLICKD_EMBEDDED_LIB=build/release/embedded/libclickd_embedded.so \
  /usr/bin/python3 bench/embedded/memory.py --clickd=build/release/server/clickd

For each --coordinates N it starts a fresh deployment on 127.0.0.1 (one
nats-server with JetStream, one clickd replica; stopped by PID), teaches the
default model N distinct coordinates (Updates of 500 examples of 100
pre-hashed ids, packed), has the replica snapshot it (SnapshotModel, which
publishes the snapshot the embedded replica restores from), and then, in a
new Python process, reads VmRSS after loading libclickd_embedded.so and
again after EmbeddedReplica opened and applied the model's version, and
after malloc_trim (what is left once malloc returns what it kept of freed
memory: the bootstrap's buffers). Prints the RSS delta beside the snapshot's bytes, the model's ModelInfo.bytes (its
tables) and the clickd replica's own RSS.
"""

import argparse
import json
import os
import subprocess
import sys

import clickd
from clickd.v1 import clickd_pb2 as pb
from one_node import one_node_deployment

# Run in a fresh interpreter: RSS before and after opening the replica.
MEASURE = r"""
import json, sys, clickd
from clickd import embedded
def rss():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmRSS:"))
embedded._load(None)
before = rss()
replica = clickd.EmbeddedReplica(sys.argv[1], catch_up_timeout=120)
replica.wait_for_version(int(sys.argv[2]), timeout=120)
after = rss()
import ctypes
ctypes.CDLL("libc.so.6").malloc_trim(0)  # what malloc kept of freed memory
trimmed = rss()
print(json.dumps({"before": before, "after": after, "trimmed": trimmed,
                  "stats": replica.stats()}))
replica.close()
"""


def rss_of(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))


def one(args, coordinates):
    with one_node_deployment(args.nats_server, "embedded_mem_") as (url, replica):
        with clickd.Client(replica.address, timeout=60) as client:
            version = 0
            per_example, per_update = 100, 500
            next_id = 1
            while next_id <= coordinates:
                request = pb.UpdateRequest(model="default")
                for _ in range(per_update):
                    if next_id > coordinates:
                        break
                    e = request.examples.add(label=float(next_id % 7 == 0))
                    last = min(next_id + per_example, coordinates + 1)
                    e.example.namespaces.add(name="f", ids=range(next_id, last))
                    next_id = last
                version = max(version, client.update(request).model_version)
            snapshot = client.snapshot_model("default")
            info = client.get_model("default")
            server_rss = rss_of(replica.proc.pid)
        env = dict(os.environ)
        out = subprocess.run([sys.executable, "-c", MEASURE, url, str(version)], env=env,
                             check=True, capture_output=True, text=True, timeout=300).stdout
        measured = json.loads(out.strip().splitlines()[-1])
        return {"coordinates": info.coordinates, "snapshot_bytes": snapshot.bytes,
                "model_bytes": info.bytes, "server_rss": server_rss,
                "embedded_rss_delta": measured["after"] - measured["before"],
                "embedded_rss_delta_trimmed": measured["trimmed"] - measured["before"],
                "embedded_rss": measured["after"], "library_rss": measured["before"],
                "bootstraps": measured["stats"]["bootstraps"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--clickd", required=True)
    ap.add_argument("--nats_server", default="/usr/local/bin/nats-server")
    ap.add_argument("--coordinates", default="1000000,4000000",
                    help="comma-separated model sizes, in distinct coordinates")
    args = ap.parse_args()
    os.environ["CLICKD_BINARY"] = args.clickd
    mib = 1 << 20
    print("coordinates  snapshot MiB  ModelInfo.bytes MiB  embedded RSS delta MiB "
          "(after malloc_trim)  delta/snapshot  clickd replica RSS MiB")
    for n in [int(x) for x in args.coordinates.split(",")]:
        r = one(args, n)
        print(f"{r['coordinates']:11d}  {r['snapshot_bytes'] / mib:12.1f}  "
              f"{r['model_bytes'] / mib:19.1f}  {r['embedded_rss_delta'] / mib:22.1f} "
              f"{r['embedded_rss_delta_trimmed'] / mib:19.1f}  "
              f"{r['embedded_rss_delta'] / r['snapshot_bytes']:14.2f}  "
              f"{r['server_rss'] / mib:22.1f}", flush=True)
        print(json.dumps(r), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
