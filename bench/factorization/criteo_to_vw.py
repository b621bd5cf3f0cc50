#!/usr/bin/env python3
"""Converts Criteo TSV (label, I1..I13, C1..C26) to VW text with the
features clickd's `--format=criteo` makes (docs/input_formats.md: Ij
bucketed as v if v <= 2, else "L" + floor(ln(v)^2); Cj the cell's text; an
empty cell leaves its namespace out), for vs_vw.py. VW pairs namespaces by
their first character and Criteo's names collide there (C1..C26 all start
with C), so each namespace gets a distinct first letter: Cj is
`<a+j-1>Cj` (C1 -> aC1, ..., C26 -> zC26) and Ij is `<A+j-1>Ij`. Labels 0/1
become -1/1.

    criteo_to_vw.py IN OUT
"""
import argparse
import math
import string


def criteo(args):
    with open(args.input) as src, open(args.output, "w") as out:
        for line in src:
            cells = line.rstrip("\n").split("\t")
            if len(cells) != 40:
                raise SystemExit(f"vw_text.py: a line has {len(cells)} fields, not 40")
            parts = ["1" if float(cells[0]) > 0 else "-1"]
            for j in range(13):
                cell = cells[1 + j]
                if cell == "":
                    continue
                v = int(cell)
                name = str(v) if v <= 2 else "L%d" % math.floor(math.log(v) ** 2)
                parts.append(f"|{string.ascii_uppercase[j]}I{j + 1} {name}")
            for j in range(26):
                cell = cells[14 + j]
                if cell == "":
                    continue
                parts.append(f"|{string.ascii_lowercase[j]}C{j + 1} {cell}")
            out.write(" ".join(parts) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("input")
    ap.add_argument("output")
    criteo(ap.parse_args())


if __name__ == "__main__":
    main()
