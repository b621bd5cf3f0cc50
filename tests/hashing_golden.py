#!/usr/bin/python3
"""Reproduces clickd's feature keys from docs/hashing.md with Python's xxhash.

The golden values are tests/data/hashing_golden.json, which the C++
(core/features/hasher_test.cc), Python client, Go and Java tests read too, so
a client following the document in another language gets the server's keys.
"""
import json
import os
import struct
import sys

import xxhash


def h(data: bytes, seed: int) -> int:
    return xxhash.xxh3_64_intdigest(data, seed=seed)


def le64(*keys: int) -> bytes:
    return b"".join(struct.pack("<Q", k) for k in keys)


GOLDEN_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data",
                           "hashing_golden.json")


def part_key(part: dict, seed: int) -> int:
    """The unfolded key of {"namespace": ..., "name" | "id": ...}."""
    ns = h(part["namespace"].encode(), seed)
    if "id" in part:
        return h(le64(part["id"]), ns)
    return h(part["name"].encode(), ns)


def compute(row: dict) -> int:
    """The key the recipe gives for one row of tests/data/hashing_golden.json."""
    seed, kind = row["seed"], row["kind"]
    if kind == "xxh3":
        return h(row["input"].encode(), seed)
    if kind == "namespace":
        return h(row["namespace"].encode(), seed)
    if kind == "feature":
        key = part_key(row, seed)
        return key & ((1 << row["bits"]) - 1) if row.get("bits") else key
    if kind == "bias":
        return h(b"clickd.bias", seed)
    if kind == "cross":
        return h(le64(*(part_key(p, seed) for p in row["parts"])), seed)
    raise ValueError(f"unknown kind {kind!r}")


def main() -> int:
    failures = 0
    checks = 0
    with open(GOLDEN_FILE, encoding="utf-8") as f:
        rows = json.load(f)["vectors"]
    for row in rows:
        checks += 1
        got, want = compute(row), int(row["key"], 16)
        if got != want:
            failures += 1
            print(f"{row}: got {got:016x}, want {want:016x}")
    print(f"{checks - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
