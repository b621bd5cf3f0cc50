"""Summary of `CASES=predict bash bench/rpc/run.sh` (issue 12's cases).

Usage: summarize_predict.py results.jsonl. Each ratio is taken within a
repetition (the Predict beside its health check), then the median over
repetitions is printed with (min-max).
"""
import collections
import json
import statistics
import sys

rows = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    r = json.loads(line)
    rows[r["rep"]][r["case"]] = r


def summary(values):
    return f"{statistics.median(values):,.2f} ({min(values):,.2f}-{max(values):,.2f})"


def each(fn):
    return [fn(cases) for cases in rows.values()]


print("| measure | value, median (min-max) over repetitions |")
print("|---|---|")
print(f"| Predict 1x40 p50 at 1 in flight / health's | "
      f"{summary(each(lambda c: c['predict1x40_c1']['result']['p50_us'] / c['health_c1']['result']['p50_us']))}x |")
print(f"| Predict 1x40 p50 at 1 in flight (us) | "
      f"{summary(each(lambda c: c['predict1x40_c1']['result']['p50_us']))} |")
print(f"| Predict 1x40 calls/s at 64 in flight / health's | "
      f"{summary(each(lambda c: c['predict1x40_c64']['result']['rate'] / c['health_c64']['result']['rate']))}x |")
print(f"| Predict 1x40 calls/s at 64 in flight | "
      f"{summary(each(lambda c: c['predict1x40_c64']['result']['rate']))} |")
print(f"| Predict 1x40 server CPU per call at 64 in flight (us) | "
      f"{summary(each(lambda c: c['predict1x40_c64']['server_cpu_us_per_call']))} |")
print(f"| health server CPU per call at 64 in flight (us) | "
      f"{summary(each(lambda c: c['health_c64']['server_cpu_us_per_call']))} |")
print(f"| Predict 100x40 requests/s at 8 in flight | "
      f"{summary(each(lambda c: c['predict100x40_c8']['result']['rate']))} |")
print(f"| Predict 100x40 server CPU per candidate at 8 in flight (us) | "
      f"{summary(each(lambda c: c['predict100x40_c8']['server_cpu_us_per_call'] / 100))} |")
print(f"| health server CPU per call at 8 in flight (us) | "
      f"{summary(each(lambda c: c['health_c8']['server_cpu_us_per_call']))} |")
if all("predict1x40keys_c1" in cases for cases in rows.values()):
    # The same cases with client-hashed keys (--wire=keys), each beside its
    # own health check (healthk_*).
    print(f"| keys: Predict 1x40 p50 at 1 in flight / health's | "
          f"{summary(each(lambda c: c['predict1x40keys_c1']['result']['p50_us'] / c['healthk_c1']['result']['p50_us']))}x |")
    print(f"| keys: Predict 1x40 p50 at 1 in flight (us) | "
          f"{summary(each(lambda c: c['predict1x40keys_c1']['result']['p50_us']))} |")
    print(f"| keys: Predict 1x40 calls/s at 64 in flight / health's | "
          f"{summary(each(lambda c: c['predict1x40keys_c64']['result']['rate'] / c['healthk_c64']['result']['rate']))}x |")
    print(f"| keys: Predict 1x40 server CPU per call at 64 in flight (us) | "
          f"{summary(each(lambda c: c['predict1x40keys_c64']['server_cpu_us_per_call']))} |")
    print(f"| keys: Predict 100x40 requests/s at 8 in flight | "
          f"{summary(each(lambda c: c['predict100x40keys_c8']['result']['rate']))} |")
    print(f"| keys: Predict 100x40 server CPU per candidate at 8 in flight (us) | "
          f"{summary(each(lambda c: c['predict100x40keys_c8']['server_cpu_us_per_call'] / 100))} |")
print(f"| 1-minute load before each measurement | "
      f"{summary([r['load1'] for cases in rows.values() for r in cases.values()])} |")
