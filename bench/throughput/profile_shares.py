#!/usr/bin/env python3
"""Prints where a clickctl replay's instructions go, from a callgrind profile.

  profile_shares.py CALLGRIND_OUT EXAMPLES

Instruction counts do not depend on what else the machine is doing, so this
table is the noise-free companion of the timed stages (it does not see cache
misses, which the timings do). Rows are groups of functions matched by
regular expressions on callgrind_annotate's names; "inclusive" rows count
callees too, "self" rows only the functions' own instructions. A group that
matches nothing (a function renamed or inlined) prints as "-".
Standard library only; needs callgrind_annotate on PATH.
"""
import re
import subprocess
import sys

# (label, inclusive?, regex on the function name)
GROUPS = [
    ("training: ReplayOffline", True, r"clickd::ReplayOffline\("),
    ("  read + parse: ExampleReader::Next", True, r"ExampleReader::Next\("),
    ("    memchr: line split, '|' and ':' searches", False, r"__memchr"),
    ("    number parsing: from_chars", True, r"std::from_chars\("),
    ("  hash: FeatureHasher::Hash", True, r"FeatureHasher::Hash\("),
    ("    XXH3", False, r"XXH3_64bits"),
    # SortAndMerge before 2a1adf2, MergeDuplicates (hash-table merge) since.
    ("    merge of repeated keys (sort or hash table)", True,
     r"SortAndMerge\(|MergeDuplicates\(|__introsort_loop<[^>]*HashedFeature"
     r"|__insertion_sort<[^>]*HashedFeature"),
    ("  learn: Model::Learn", True, r"LinearModel<[^>]*>::Learn\("),
    ("    locks: pthread_rwlock_* (std::shared_mutex)", False, r"pthread_rwlock_"),
    ("    table growth (raw_hash_set resize)", True, r"raw_hash_set<.*>::resize\("),
    ("    Learn's own code (inlined probes, optimizer)", False, r"LinearModel<[^>]*>::Learn\("),
    ("  metrics: loss, exp/log", False, r"__ieee754_(exp|log)|__log1p|w_exp|MakeTerm"),
    ("after training: SerializeState (digest)", True, r"::SerializeState"),
    ("after training: metric summary", True, r"clickd::Summarize\("),
]

LINE = re.compile(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.*)$")


def costs(path, inclusive):
    args = ["callgrind_annotate", "--threshold=100", f"--inclusive={'yes' if inclusive else 'no'}",
            path]
    text = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    rows = []
    for line in text.splitlines():
        m = LINE.match(line)
        if m and "PROGRAM TOTALS" not in line:
            rows.append((int(m.group(1).replace(",", "")), m.group(2)))
    total = next(int(m.group(1).replace(",", "")) for m in map(LINE.match, text.splitlines())
                 if m and "PROGRAM TOTALS" in m.group(2))
    return rows, total


def main(path, examples):
    inclusive, total = costs(path, True)
    exclusive, _ = costs(path, False)
    print(f"| {'group':<58} | {'instructions/example':>20} | {'share of process':>16} |")
    print(f"|{'-' * 60}|{'-' * 22}|{'-' * 18}|")
    for label, incl, pattern in GROUPS:
        rows = inclusive if incl else exclusive
        regex = re.compile(pattern)
        matched = [cost for cost, name in rows if regex.search(name)]
        # Inclusive costs of nested matches (a function and its clone) would
        # double count; the largest one stands for the group.
        cost = (max(matched) if incl else sum(matched)) if matched else None
        per_example = f"{cost / examples:,.0f}" if cost is not None else "-"
        share = f"{100 * cost / total:.1f}%" if cost is not None else "-"
        kind = "incl" if incl else "self"
        print(f"| {label + ' (' + kind + ')':<58} | {per_example:>20} | {share:>16} |")
    print(f"\nwhole process: {total:,} instructions, {total / examples:,.0f} per example")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
