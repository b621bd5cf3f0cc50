#!/usr/bin/env python3
"""Predict latency from Python: clickd.EmbeddedReplica beside clickd.Client, one run.

  PYTHONPATH=build/release/client/python/stubs:client/python \
  CLICKD_EMBEDDED_LIB=build/release/embedded/libclickd_embedded.so \
  /usr/bin/python3 bench/embedded/python_latency.py --clickd=build/release/server/clickd

Starts one nats-server with JetStream and one clickd replica on 127.0.0.1
(stopped by PID at the end), trains the default model with 200 Updates of
100 examples, then times Predict of 1 context + --candidates candidates, one
caller, closed loop: the request built once (a PredictRequest passed whole)
and built from shorthands on every call, over gRPC and in-process. Prints
p50/p99 in microseconds and the load average.

With --nats_url and --server it starts nothing and trains nothing: it
measures against that deployment (embedded_bench --then_run does this in
bench/embedded/run.sh).
"""

import argparse
import os
import random
import sys
import time

import clickd
from one_node import one_node_deployment


def percentiles(samples):
    samples = sorted(samples)
    return samples[len(samples) // 2], samples[min(len(samples) - 1, int(len(samples) * 0.99))]


def timed(call, n):
    out = []
    for _ in range(n):
        start = time.perf_counter()
        call()
        out.append((time.perf_counter() - start) * 1e6)
    return percentiles(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--clickd", help="the clickd binary (without --nats_url and --server)")
    ap.add_argument("--nats_url", help="a running deployment's NATS servers")
    ap.add_argument("--server", help="a running deployment's clickd replica, host:port")
    ap.add_argument("--nats_server", default="/usr/local/bin/nats-server")
    ap.add_argument("--candidates", type=int, default=40)
    ap.add_argument("--calls", type=int, default=20000)
    args = ap.parse_args()
    if args.nats_url and args.server:
        with clickd.Client(args.server, timeout=10) as client:
            version = client.predict("default", [{"ad": ["a1"]}]).model_version
            measure(client, args.nats_url, version, args)
        return 0
    if not args.clickd:
        ap.error("--clickd is required without --nats_url and --server")
    os.environ["CLICKD_BINARY"] = args.clickd
    with one_node_deployment(args.nats_server, "embedded_py_") as (url, replica):
        rng = random.Random(1)
        with clickd.Client(replica.address, timeout=10) as client:
            version = 0
            for i in range(200):
                examples = [({"user": [f"u{rng.randrange(100000)}"], "ad": [f"a{rng.randrange(1000)}"],
                              "site": [f"s{rng.randrange(100)}"]}, float(rng.random() < 0.05))
                            for _ in range(100)]
                version = max(version, client.update("default", examples).model_version)
            measure(client, url, version, args)
    return 0


def measure(client, url, version, args):
    """Prints p50/p99 of Predict over gRPC (client) and in-process (an
    embedded replica of the deployment at url, once it applied version)."""
    rng = random.Random(2)
    embedded = clickd.EmbeddedReplica(url)
    embedded.wait_for_version(version, timeout=60)
    cands = [{"ad": [f"a{rng.randrange(1000)}"]} for _ in range(args.candidates)]
    context = {"user": ["u7"], "site": ["s3"]}
    request = clickd.predict_request("default", cands, context)
    serialized = request.SerializeToString()
    seed = client.get_model("default").config.hashing.seed
    keyed = clickd.predict_request("default", cands, context, wire="keys", seed=seed)
    from clickd import hashing

    def keys_of(example):
        return {ns: [hashing.named_key(hashing.namespace_hash(ns, seed), n) for n in names]
                for ns, names in example.items()}
    flat = clickd.KeysRequest("default", ["user", "site", "ad"], [keys_of(c) for c in cands],
                              keys_of(context))
    n = args.calls
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    rows = [
        ("gRPC, request built once", timed(lambda: client.predict(request), n // 10)),
        ("embedded, request built once", timed(lambda: embedded.predict(request), n)),
        ("embedded, serialized once", timed(lambda: embedded.predict(serialized), n)),
        ("embedded, keys form, built once", timed(lambda: embedded.predict(keyed), n)),
        ("embedded, predict_keys (flat)", timed(lambda: embedded.predict_keys(flat), n)),
        ("gRPC, built on each call",
         timed(lambda: client.predict("default", cands, context), n // 10)),
        ("embedded, built on each call",
         timed(lambda: embedded.predict("default", cands, context), n)),
    ]
    print(f"Predict 1 x {args.candidates} from Python, one caller (load {load}):")
    for name, (p50, p99) in rows:
        print(f"  {name:32s} p50 {p50:8.1f} us  p99 {p99:8.1f} us")
    embedded.close()


if __name__ == "__main__":
    sys.exit(main())
