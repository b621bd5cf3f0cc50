#!/usr/bin/env python3
"""Converts the shared iPinYou log (LIBSVM, one-hot, featindex.txt mapping
`field:value` to an index) to VW text with one namespace per field, named
f<field>, so that FM and FFM can factor its fields:

    ipinyou_to_vw.py DATA_DIR OUT_DIR   # writes train.vw and test.vw

Each feature keeps its index as its name; labels 0/1 become -1/1.
"""
import os
import sys


def main():
    data, out = sys.argv[1], sys.argv[2]
    field_of = {}
    with open(os.path.join(data, "featindex.txt"), encoding="utf-8") as f:
        for line in f:
            key, index = line.rstrip("\n").rsplit("\t", 1)
            field_of[index] = "f" + key.split(":", 1)[0]
    os.makedirs(out, exist_ok=True)
    fields = set()
    for split in ("train", "test"):
        with open(os.path.join(data, f"{split}.fm.txt")) as src, \
                open(os.path.join(out, f"{split}.vw"), "w") as dst:
            for line in src:
                parts = line.split()
                by_field = {}
                for p in parts[1:]:
                    index = p.split(":", 1)[0]
                    by_field.setdefault(field_of[index], []).append(index)
                fields.update(by_field)
                label = "1" if parts[0] == "1" else "-1"
                dst.write(label + " " + " ".join(
                    f"|{ns} " + " ".join(v) for ns, v in sorted(by_field.items())) + "\n")
    print(",".join(sorted(fields, key=lambda f: int(f[1:]))))


if __name__ == "__main__":
    main()
