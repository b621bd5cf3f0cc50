#!/usr/bin/python3
"""The Python client's part of the cross-language digest check.

Learns tests/data/client_digest_examples.json through clickd.Client in the
features and the keys wire form, on two models of a clickd at --server, and
writes the state digest to DIR/python after checking both forms agree.
scripts/test_clients.sh compares it with the Go and Java clients' digests.
Usage: client_digest_python.py --server=HOST:PORT --out=DIR
"""
import argparse
import json
import os
import sys

import clickd

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data",
                    "client_digest_examples.json")


def feature(f):
    return tuple(f) if isinstance(f, list) else f


def example(obj):
    # JSON objects are unordered: every language sorts the namespaces.
    return [(ns, [feature(f) for f in obj[ns]]) for ns in sorted(obj)]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    with open(DATA, encoding="utf-8") as f:
        doc = json.load(f)
    digests = {}
    with clickd.Client(args.server, timeout=10) as client:
        for wire in ("features", "keys"):
            name = f"digest-python-{wire}"
            info = client.create_model(dict(doc["model"], name=name))
            seed = info.config.hashing.seed
            for imp in doc["impressions"]:
                impression = (example(imp["context"]),
                              [(example(c), label) for c, label in imp["candidates"]])
                client.update(name, impressions=[impression], wire=wire, seed=seed)
            digests[wire] = client.state_digest(name)
    if digests["features"] != digests["keys"]:
        print(f"features form {digests['features']}, keys form {digests['keys']}", file=sys.stderr)
        return 1
    with open(os.path.join(args.out, "python"), "w", encoding="utf-8") as f:
        f.write(digests["features"] + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
