#!/usr/bin/python3
"""The Python client's part of bench/clients/run.sh.

Predict 1x40 (one candidate of 40 named features) latency and 100x40
throughput, one call in flight, and this process's CPU per call
(getrusage). Every loop is bounded in calls and in time. Last stdout line:
one JSON object.
"""
import argparse
import json
import resource
import time

import clickd


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def candidates(n, features, offset):
    return [{"ad": [f"f{j}={(offset + i * 7 + j * 13) % 1000}" for j in range(features)]}
            for i in range(n)]


def run(client, model, wire, seed, n, calls, warmup, max_seconds):
    # The candidates' features are made once (16 sets, used in turn); turning
    # them into the request (and hashing them, in the keys form) is part of
    # each call's cost, as it is in an ad server.
    sets = [candidates(n, 40, i * 1000) for i in range(16)]
    for i in range(warmup):
        client.predict(model, sets[i % 16], wire=wire, seed=seed)
    lat = []
    cpu0, start = cpu(), time.monotonic()
    for i in range(calls):
        if time.monotonic() - start >= max_seconds:
            break
        t = time.monotonic()
        client.predict(model, sets[i % 16], wire=wire, seed=seed)
        lat.append(time.monotonic() - t)
    seconds = time.monotonic() - start
    used = cpu() - cpu0
    lat.sort()
    return len(lat), lat[len(lat) // 2] * 1e6, seconds, used * 1e6 / len(lat)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--server", default="127.0.0.1:50051")
    p.add_argument("--model", default="default")
    p.add_argument("--wire", default="features", choices=["features", "keys"])
    p.add_argument("--calls1", type=int, default=3000)
    p.add_argument("--calls100", type=int, default=300)
    p.add_argument("--max_seconds", type=float, default=10)
    a = p.parse_args()
    with clickd.Client(a.server, timeout=10) as client:
        seed = client.get_model(a.model).config.hashing.seed
        c1, p50, _, cpu1 = run(client, a.model, a.wire, seed, 1, a.calls1, 300, a.max_seconds)
        c100, _, s100, cpu100 = run(client, a.model, a.wire, seed, 100, a.calls100, 30, a.max_seconds)
    print(json.dumps({"client": "python", "wire": a.wire, "p50_us_1x40": p50, "calls_1x40": c1,
                      "cpu_us_per_call_1x40": cpu1,
                      "candidates_per_s_100x40": 100 * c100 / s100, "calls_100x40": c100,
                      "cpu_us_per_call_100x40": cpu100}))


if __name__ == "__main__":
    main()
