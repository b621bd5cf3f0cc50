#!/usr/bin/env python3
"""Writes the training examples of factor_speed_bench's shape as VW text,
for timing clickd and Vowpal Wabbit on the same file (vs_vw.sh): each line
one feature in each of --fields namespaces a, b, c, ... (single letters, so
that VW's --lrqfa names them), ids uniform among --ids per namespace, a
label drawn at 20% clicks. Deterministic in --seed.
"""
import argparse
import random
import string


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--examples", type=int, default=200000)
    ap.add_argument("--fields", type=int, default=5)
    ap.add_argument("--ids", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    names = string.ascii_lowercase[:args.fields]
    with open(args.out, "w") as out:
        for _ in range(args.examples):
            label = "1" if rng.random() < 0.2 else "-1"
            out.write(label + " " + " ".join(
                f"|{n} {n}{rng.randrange(args.ids)}" for n in names) + "\n")


if __name__ == "__main__":
    main()
