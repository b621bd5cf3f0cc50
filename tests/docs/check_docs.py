#!/usr/bin/env python3
"""The docs agree with the binaries and the tree.

  check_docs.py --clickd=PATH --clickctl=PATH --source_dir=DIR [--self_test]

1. Flag tables: every row of a markdown table whose header has a "default"
   column and whose first cell names flags (`--name`) is checked against the
   binary's `--helpfull`: the flag must exist and the documented default must
   be the binary's. Tables in docs/clickctl.md are clickctl's; elsewhere a
   flag is looked up in clickd first, then clickctl. A default cell may say
   "none" or "empty" for an empty string, may explain itself after the value
   ("`0` (four per core)", "`0`: all"), and may give several defaults,
   comma-separated, for a row that names several flags. A cell that names no
   value at all (such as "optimizer defaults") is accepted only where the
   binary's default is empty or 0: an explanation stands for the sentinel.
2. Source paths and sections: every markdown link to a file of the tree, and
   every link to a section of a markdown file (its heading exists), and every
   backticked path that names a source file (a directory of the tree
   followed by a name with a known extension, e.g. `server/executor.h`) must
   exist. Links are relative to the doc; backticked paths to the tree's root.

Every *.md file in docs/ (not docs/archive/, which is history), the README and the READMEs
of deploy/, bench/ and client/ are read. --self_test runs the checks on
made-up docs that hold a wrong default, an unknown flag, missing paths and
a link to a missing section, and fails unless each is reported.
"""

import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import help_test  # noqa: E402  (flag_entries: Abseil's --helpfull format)

SOURCE_EXTENSIONS = ("cc", "h", "py", "sh", "proto", "go", "java", "yml", "yaml", "json",
                     "txt", "cmake", "md", "mjs", "js", "toml", "xml", "conf")
# Paths that docs name but that exist only once built or run.
GENERATED = ("build/", "bench/out/", "/tmp/", "~")
# Defaults that no --helpfull shows, because the command that reads the flag
# gives an empty value its meaning: (doc, flag, documented default).
DECLARED_ELSEWHERE = {
    # loadgen reads --candidates as a count (1 when empty); predict as a list.
    ("clickctl.md", "candidates", "1"),
}
EMPTY_WORDS = {"none", "empty", "not set", "unset", "(empty)", '""', "''", "no"}


def helpfull_defaults(binary):
    """{flag: default} from `binary --helpfull` (quotes stripped).

    A flag whose declared default is empty but whose help says "(default X"
    (clickctl's optional flags, whose default depends on the command) has X.
    """
    p = subprocess.run([binary, "--helpfull"], capture_output=True, text=True, timeout=30)
    entries = help_test.flag_entries(p.stdout)
    if len(entries) < 10:
        raise SystemExit(f"{binary} --helpfull listed only {len(entries)} flags")
    texts = {}
    current = None
    for line in p.stdout.splitlines():
        start = re.match(r"^    --([A-Za-z0-9_]+)( |$)", line)
        if start:
            current = start.group(1)
            texts[current] = line.strip()
        elif current is not None and line.startswith("      "):
            texts[current] += " " + line.strip()
        else:
            current = None
    out = {}
    for name, (_, default) in entries.items():
        if len(default) >= 2 and default[0] == '"' and default[-1] == '"':
            default = default[1:-1]
        if default == "":
            stated = re.search(r"\(default ([^;)]+)", texts.get(name, ""))
            if stated:
                default = stated.group(1).strip().strip('"')
        out[name] = default
    return out


DURATION = re.compile(r"^(?:(\d+(?:\.\d+)?)(ms|us|ns|s|m|h))+$")


def duration_seconds(text):
    if not DURATION.match(text):
        return None
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}
    return sum(float(v) * scale[u] for v, u in re.findall(r"(\d+(?:\.\d+)?)(ms|us|ns|s|m|h)", text))


UNITS = {"": 1, "b": 1, "bytes": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30,
         "kb": 1000, "mb": 1000 ** 2, "gb": 1000 ** 3}


def as_number(text):
    """A number, with an optional byte unit ("16 MiB"), or None."""
    m = re.fullmatch(r"\s*([-+]?[\d,]*\.?\d+(?:[eE][-+]?\d+)?)\s*([A-Za-z]*)\s*", text)
    if not m or m.group(2).lower() not in UNITS:
        return None
    return float(m.group(1).replace(",", "")) * UNITS[m.group(2).lower()]


def same_default(documented, actual):
    """Whether a documented literal is the binary's default."""
    if documented == actual:
        return True
    if documented.lower() in EMPTY_WORDS and actual == "":
        return True
    a, b = as_number(documented), as_number(actual)
    if a is not None and b is not None:
        return a == b
    a, b = duration_seconds(documented), duration_seconds(actual)
    if a is not None and b is not None:
        return abs(a - b) < 1e-9
    return False


def literal_of(item):
    """(value, stated) from a default cell's item: stated is whether the cell
    states a value (backticked, a number, a bool, a duration, "none") rather
    than a description ("optimizer defaults").

    "`0` (four per core)" -> ("0", True); "16 MiB" -> ("16 MiB", True);
    "libsvm" -> ("libsvm", False): compared, but a description if it differs.
    """
    item = item.strip()
    ticked = re.match(r"^`([^`]*)`", item)
    if ticked:
        return ticked.group(1).strip('"'), True
    head = re.split(r"[:;(]", item, maxsplit=1)[0].strip().strip('"')
    if item.lower() in EMPTY_WORDS or head.lower() in EMPTY_WORDS:
        return "none", True
    if as_number(head) is not None or duration_seconds(head):
        return head, True
    word = head.split(" ")[0] if head else ""
    if word.lower() in ("true", "false") or as_number(word) is not None or \
            duration_seconds(word):
        return word, True
    return word, False


def split_row(line):
    cells = line.strip().strip("|").split("|")
    return [c.strip() for c in cells]


def flag_rows(path):
    """(line number, [flags], default cell) of every flag-table row in `path`."""
    rows = []
    lines = open(path, encoding="utf-8").read().split("\n")
    default_col = None
    in_fence = False
    for i, line in enumerate(lines):
        if line.startswith("```"):
            in_fence = not in_fence
            continue
        if in_fence or not line.lstrip().startswith("|"):
            default_col = None if not line.lstrip().startswith("|") else default_col
            continue
        cells = split_row(line)
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if re.match(r"^\s*\|[\s:|-]+\|\s*$", nxt):  # this row is a header
            lowered = [c.lower() for c in cells]
            default_col = next((k for k, c in enumerate(lowered) if c.startswith("default")), None)
            continue
        if default_col is None or default_col >= len(cells) or re.match(r"^[\s:|-]+$", line):
            continue
        # `--flag=value` shows a use, not a flag with its default.
        flags = re.findall(r"`--([A-Za-z0-9_]+)(?: [^`]*)?`", cells[0])
        if flags and cells[0].startswith("`--"):
            rows.append((i + 1, flags, cells[default_col]))
    return rows


def check_flags(doc, rows, clickd, clickctl, failures):
    binaries = [("clickctl", clickctl), ("clickd", clickd)] if os.path.basename(doc) == \
        "clickctl.md" else [("clickd", clickd), ("clickctl", clickctl)]
    for line, flags, cell in rows:
        items = [cell] if len(flags) == 1 else [c for c in re.split(r",\s*(?![^(]*\))", cell)]
        if len(flags) > 1 and len(items) != len(flags):
            items = [cell] * len(flags)  # one default for all of them
        for flag, item in zip(flags, items):
            where = f"{doc}:{line}: --{flag}"
            found = [(name, table[flag]) for name, table in binaries if flag in table]
            if not found:
                failures.append(f"{where}: no such flag in clickd or clickctl --helpfull")
                continue
            name, actual = found[0]
            documented, stated = literal_of(item)
            whole = item.strip().strip("`").strip('"')
            if any(same_default(documented, a) or same_default(whole, a) for _, a in found):
                continue
            if (os.path.basename(doc), flag, documented) in DECLARED_ELSEWHERE:
                continue
            if stated:
                failures.append(f"{where}: documented default {documented!r}, {name} --helpfull "
                                f"says {actual!r}")
            elif actual not in ("", "0", "0s", "false"):
                failures.append(f"{where}: the default column says {item!r}, not a value; "
                                f"{name}'s default is {actual!r}")


LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)\s]*)?\)")
ANCHORED = re.compile(r"\]\(([^)\s#]*)#([^)\s]+)\)")


def heading_anchors(path):
    """The anchors GitHub gives the headings of a markdown file."""
    anchors, seen, fence = set(), {}, False
    for line in open(path, encoding="utf-8").read().split("\n"):
        if line.startswith("```"):
            fence = not fence
            continue
        m = re.match(r"^#{1,6} (.*)$", line)
        if m and not fence:
            a = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            n = seen.get(a, 0)
            seen[a] = n + 1
            anchors.add(a if n == 0 else f"{a}-{n}")
    return anchors


def check_anchors(doc, source_dir, failures, cache):
    """Every link to a section of a markdown file of the tree finds it."""
    fence = False
    for i, line in enumerate(open(doc, encoding="utf-8").read().split("\n"), 1):
        if line.startswith("```"):
            fence = not fence
            continue
        if fence:
            continue
        for target, anchor in ANCHORED.findall(line):
            if re.match(r"^[a-z]+:", target):
                continue
            path = os.path.normpath(os.path.join(os.path.dirname(doc), target)) if target else doc
            if not path.endswith(".md") or not os.path.isfile(path):
                continue
            if path not in cache:
                cache[path] = heading_anchors(path)
            if anchor not in cache[path]:
                failures.append(f"{os.path.relpath(doc, source_dir)}:{i}: link {target}#{anchor}: "
                                f"{os.path.relpath(path, source_dir)} has no such heading")
TICKED = re.compile(r"`([^`\s]+)`")


def top_dirs(source_dir):
    return {d for d in os.listdir(source_dir)
            if os.path.isdir(os.path.join(source_dir, d)) and not d.startswith(".") and
            d != "build"}


def named_paths(path, source_dir, dirs):
    """(line, path relative to source_dir, how named) of the files a doc names."""
    out = []
    in_fence = False
    for i, line in enumerate(open(path, encoding="utf-8").read().split("\n"), 1):
        if line.startswith("```"):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        for target in LINK.findall(line):
            if re.match(r"^[a-z]+:", target) or target.startswith("<"):
                continue
            resolved = os.path.normpath(os.path.join(os.path.dirname(path), target))
            out.append((i, os.path.relpath(resolved, source_dir), f"link ({target})"))
        for ticked in TICKED.findall(line):
            candidate = ticked.rstrip(".,:;")
            candidate = re.sub(r":\d+(-\d+)?$", "", candidate)  # file.cc:120
            parts = candidate.split("/")
            if len(parts) < 2 or parts[0] not in dirs:
                continue
            if any(ch in candidate for ch in "*?{}<>$=|") or "..." in candidate:
                continue
            last = parts[-1]
            if "." in last and last.rsplit(".", 1)[1] in SOURCE_EXTENSIONS:
                out.append((i, candidate, "path"))
            elif candidate.endswith("/"):
                out.append((i, candidate.rstrip("/"), "path"))
    return out


def check_paths(doc, source_dir, dirs, failures):
    for line, rel, how in named_paths(doc, source_dir, dirs):
        if rel.startswith("..") or any(rel.startswith(g) or rel == g.rstrip("/")
                                       for g in GENERATED):
            continue  # outside the tree (../shared/data) or made by a build
        if not os.path.exists(os.path.join(source_dir, rel)):
            failures.append(f"{os.path.relpath(doc, source_dir)}:{line}: {how} names {rel}, "
                            "which does not exist")


def docs_of(source_dir):
    # docs/archive/ is history: its paths and flags are as they were then.
    files = glob.glob(os.path.join(source_dir, "docs", "*.md"))
    files += [os.path.join(source_dir, f) for f in
              ("README.md", "deploy/README.md", "client/python/README.md")]
    files += glob.glob(os.path.join(source_dir, "bench", "*", "README.md"))
    return sorted(f for f in files if os.path.isfile(f))


def run_checks(docs, source_dir, clickd, clickctl):
    failures = []
    dirs = top_dirs(source_dir)
    rows = 0
    cache = {}
    for doc in docs:
        check_anchors(doc, source_dir, failures, cache)
        found = flag_rows(doc)
        rows += len(found)
        check_flags(os.path.relpath(doc, source_dir), found, clickd, clickctl, failures)
        check_paths(doc, source_dir, dirs, failures)
    return failures, rows


def self_test(source_dir, clickd, clickctl):
    """The checks catch a wrong default, an unknown flag and missing paths."""
    with tempfile.TemporaryDirectory() as tmp:
        for d in top_dirs(source_dir):
            os.symlink(os.path.join(source_dir, d), os.path.join(tmp, d))
        os.makedirs(os.path.join(tmp, "docs_made_up"))
        doc = os.path.join(tmp, "docs_made_up", "made_up.md")
        with open(doc, "w") as f:
            f.write("| flag | default | meaning |\n|---|---|---|\n"
                    "| `--max_queued_calls` | `1023` | wrong default |\n"
                    "| `--no_such_flag_anywhere` | `1` | unknown flag |\n"
                    "| `--worker_threads` | `0` (four per core) | right |\n"
                    "| `--address` | `127.0.0.1:50051` | right |\n\n"
                    "See [gone](../server/no_such_file.cc) and `core/no_such_dir/x.h`;\n"
                    "but [this](../server/executor.h) and `server/executor.h` exist.\n\n"
                    "## A section\n\n[here](#a-section) but [not here](#no-section).\n")
        failures, _ = run_checks([doc], tmp, clickd, clickctl)
    expected = ["--max_queued_calls: documented default '1023'",
                "--no_such_flag_anywhere: no such flag", "server/no_such_file.cc",
                "core/no_such_dir/x.h", "link #no-section"]
    missed = [e for e in expected if not any(e in f for f in failures)]
    extra = [f for f in failures if not any(e in f for e in expected)]
    for m in missed:
        print(f"FAIL (self test): not reported: {m}")
    for x in extra:
        print(f"FAIL (self test): reported a right row: {x}")
    return not missed and not extra and len(failures) == len(expected)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--clickd", required=True)
    parser.add_argument("--clickctl", required=True)
    parser.add_argument("--source_dir", required=True)
    parser.add_argument("--self_test", action="store_true")
    args = parser.parse_args()
    source_dir = os.path.realpath(args.source_dir)
    clickd = helpfull_defaults(args.clickd)
    clickctl = helpfull_defaults(args.clickctl)
    if args.self_test:
        ok = self_test(source_dir, clickd, clickctl)
        print("ok: the checks report a wrong default, an unknown flag and missing paths"
              if ok else "self test failed")
        return 0 if ok else 1
    docs = docs_of(source_dir)
    failures, rows = run_checks(docs, source_dir, clickd, clickctl)
    for failure in failures:
        print("FAIL:", failure)
    if rows < 100:
        print(f"FAIL: only {rows} flag-table rows found in {len(docs)} docs: is the parser broken?")
        return 1
    if not failures:
        print(f"ok: {rows} flag-table rows in {len(docs)} docs match --helpfull; "
              "every named path exists")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
