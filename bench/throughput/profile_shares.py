#!/usr/bin/env python3
"""Prints where a clickctl replay's instructions go, from a callgrind profile.

  profile_shares.py CALLGRIND_OUT EXAMPLES

Instruction counts do not depend on what else the machine is doing, so this
table is the noise-free companion of the timed stages (it does not see cache
misses, which the timings do). Rows are groups of functions matched by
regular expressions on callgrind_annotate's names; "inclusive" rows count
callees too, "self" rows only the functions' own instructions. A replay
reads, parses and hashes on a read-ahead thread (core/replay/read_ahead.h)
while the calling thread learns, so the two top rows are the two threads.

A group that matches no function (one renamed or inlined) is an error: the
script names it and exits 1 instead of printing a table with a hole in it,
so a published table can always be regenerated. Standard library only;
needs callgrind_annotate on PATH.
"""
import re
import subprocess
import sys

# (label, inclusive?, regex on the function name)
GROUPS = [
    ("learning thread: ReplayOffline", True, r"clickd::ReplayOffline\("),
    ("  learn: Model::LearnExclusive / Learn", True,
     r"LinearModel<[^>]*>::(LearnExclusive|LearnWithDense|Learn)\("),
    ("    locks: pthread_rwlock_* (std::shared_mutex)", False, r"pthread_rwlock_"),
    ("    store probes: ShardedStore upsert", False, r"ShardedStore<.*>::Upserter::operator\(\)"),
    ("    optimizer step: LinearModel::Step", False, r"LinearModel<[^>]*>::Step<"),
    ("  metrics: loss, exp/log", False, r"__ieee754_(exp|log)|__log1p|w_exp|MakeTerm|clickd::Loss\("),
    ("read-ahead thread: ReadAhead::Produce", True, r"clickd::ReadAhead::Produce\("),
    ("  read + parse + hash: ExampleReader::NextHashed", True,
     r"ExampleReader::(NextHashed|Next)\("),
    ("    line split, '|' and ':' searches", False, r"__memchr|LineSplitter::Next\("),
    ("    number parsing: from_chars, ParseInteger, ParseFloat", False,
     r"std::from_chars\(|formats_internal::Parse(Integer|Float)\b"),
    # The VW reader hashes as it parses (ParseVwHashed, XXH3 inlined), the
    # LIBSVM one through FeatureHasher::Hash: the functions' own costs, summed.
    ("    hash: FeatureHasher, XXH3, merge of repeated keys", False,
     r"FeatureHasher::|XXH3_64bits|MergeDuplicates\(|SortAndMerge\("),
    ("      merge of repeated keys (hash table)", False, r"MergeDuplicates\(|SortAndMerge\("),
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
    print(f"| {'group':<64} | {'instructions/example':>20} | {'share of process':>16} |")
    print(f"|{'-' * 66}|{'-' * 22}|{'-' * 18}|")
    unmatched = []
    for label, incl, pattern in GROUPS:
        rows = inclusive if incl else exclusive
        regex = re.compile(pattern)
        matched = [cost for cost, name in rows if regex.search(name)]
        kind = "incl" if incl else "self"
        if not matched:
            unmatched.append(f"{label.strip()} ({kind}): no function matches /{pattern}/")
            continue
        # Inclusive costs of nested matches (a function and its clone) would
        # double count; the largest one stands for the group.
        cost = max(matched) if incl else sum(matched)
        print(f"| {label + ' (' + kind + ')':<64} | {cost / examples:>20,.0f} | "
              f"{100 * cost / total:>15.1f}% |")
    print(f"\nwhole process: {total:,} instructions, {total / examples:,.0f} per example")
    for message in unmatched:
        print(f"profile_shares.py: {message} in {path}: a function was renamed or inlined; "
              "update GROUPS", file=sys.stderr)
    return 1 if unmatched else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2])))
