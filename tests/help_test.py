#!/usr/bin/env python3
"""`clickd --help` and `clickctl [COMMAND] --help` list every flag of the binary.

The flags a binary defines are read from its `--helpfull` (Abseil's list of
every flag, by source file), keeping those defined in a file of this source
tree, so that the test cannot go stale when a flag is added. Each must appear
in `--help` with the same default; Abseil's own flags (--flagfile, ...) must
not; `--help` exits 0.

  help_test.py --clickd=PATH --clickctl=PATH --source_dir=DIR
"""

import argparse
import os
import re
import subprocess
import sys

FAILURES = []

CLICKCTL_COMMANDS = {
    # command: flags its --help must list (besides the network flags, which
    # every one of these takes)
    "predict": ["context", "candidates", "request_json", "request_id"],
    "update": ["context", "example", "label", "importance", "request_json"],
    "models": ["config_json", "optimizer", "alpha", "bits"],
    "replay": ["offline", "format", "passes", "test_file", "batch_size", "create_model",
               "skip_examples", "optimizer"],
    "loadgen": ["method", "concurrency", "qps", "duration_s", "candidates", "batch_size"],
}
NETWORK_FLAGS = ["server", "model", "deadline_ms", "json"]


def check(condition, message):
    if not condition:
        FAILURES.append(message)
    return condition


def run(binary, *args):
    """(exit code, stdout) of `binary args`; stderr must be empty."""
    p = subprocess.run([binary, *args], capture_output=True, text=True, timeout=30)
    check(p.stderr == "", f"{os.path.basename(binary)} {' '.join(args)} wrote to stderr: "
          f"{p.stderr[:500]}")
    return p.returncode, p.stdout


def flag_entries(text):
    """{name: (file, default)} from Abseil's flag format:

        Flags from FILE:                       (--helpfull; --help's group titles vary)
          --name (help, possibly wrapped
            onto more lines); default: VALUE;
    """
    entries = {}
    current_file = None
    current = None
    for line in text.splitlines():
        header = re.match(r"^  Flags from (.*):$", line)
        if header:
            current_file, current = header.group(1), None
            continue
        start = re.match(r"^    --([A-Za-z0-9_]+)( |$)", line)
        if start:
            current = start.group(1)
            check(current not in entries, f"--{current} listed twice")
            entries[current] = [current_file, line.strip()]
        elif current is not None and line.startswith("      "):
            entries[current][1] += " " + line.strip()
        else:
            current = None
    result = {}
    for name, (file, entry) in entries.items():
        _, found, default = entry.rpartition(" default: ")
        check(found and default.endswith(";"), f"--{name}: no default in {entry!r}")
        result[name] = (file, default[:-1])
    return result


def in_source_tree(file, source_dir):
    """Whether FILE, as __FILE__ named it when compiled, is under source_dir.

    Abseil's help strips a path's leading slashes (its NormalizeFilename), so
    an absolute __FILE__ (a build outside ccache's base_dir, as in CI) shows as
    "check/work/main/server/main.cc"; it is tried with the slash put back.
    """
    root = os.path.realpath(source_dir) + os.sep
    if os.path.isabs(file) or os.path.realpath("/" + file).startswith(root):
        return os.path.realpath("/" + file.lstrip("/")).startswith(root)
    parts = file.split("/")
    while parts and parts[0] in (".", ".."):
        parts.pop(0)
    return bool(parts) and os.path.isfile(os.path.join(source_dir, *parts))


def own_flags(binary, source_dir):
    """{name: default} of the flags defined in this source tree, per --helpfull."""
    _, text = run(binary, "--helpfull")  # Abseil 20220623 exits 1 after --helpfull
    all_flags = flag_entries(text)
    own = {n: d for n, (f, d) in all_flags.items() if in_source_tree(f, source_dir)}
    check(len(own) >= 10, f"{binary} --helpfull: only {len(own)} flags from {source_dir}: "
          f"{sorted(own)} (files: {sorted({f for f, _ in all_flags.values()})})")
    check("flagfile" in all_flags and "flagfile" not in own,
          f"{binary} --helpfull: --flagfile missing or counted as the project's")
    return own, set(all_flags) - set(own)


def check_help(binary, args, expected, abseil_flags):
    """`binary args` exits 0 and lists each flag in `expected` with its default."""
    what = f"{os.path.basename(binary)} {' '.join(args)}"
    code, text = run(binary, *args)
    check(code == 0, f"{what}: exit code {code}")
    check(text.startswith("usage:") or text.startswith("clickctl "),
          f"{what}: does not start with the usage: {text[:200]!r}")
    listed = {n: d for n, (_, d) in flag_entries(text).items()}
    for name, default in sorted(expected.items()):
        if check(name in listed, f"{what}: --{name} missing"):
            check(listed[name] == default,
                  f"{what}: --{name} default {listed[name]!r}, --helpfull says {default!r}")
    for name in sorted(abseil_flags & set(listed)):
        check(False, f"{what}: lists Abseil's --{name} (it belongs in --helpfull)")
    return listed


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--clickd", required=True)
    parser.add_argument("--clickctl", required=True)
    parser.add_argument("--source_dir", required=True)
    args = parser.parse_args()

    flags, abseil = own_flags(args.clickd, args.source_dir)
    for help_args in (["--help"], ["-h"]):
        check_help(args.clickd, help_args, flags, abseil)

    flags, abseil = own_flags(args.clickctl, args.source_dir)
    check_help(args.clickctl, ["--help"], flags, abseil)
    check_help(args.clickctl, ["help"], flags, abseil)
    for command, names in CLICKCTL_COMMANDS.items():
        expected = {n: flags.get(n, "(not in --helpfull)") for n in names + NETWORK_FLAGS}
        for help_args in ([command, "--help"], ["help", command]):
            listed = check_help(args.clickctl, help_args, expected, abseil)
            check(set(listed) <= set(flags),
                  f"clickctl {' '.join(help_args)}: lists unknown flags "
                  f"{sorted(set(listed) - set(flags))}")
    # A command's help is that command's: predict does not take model flags.
    _, text = run(args.clickctl, "predict", "--help")
    check("--optimizer" not in text, "clickctl predict --help lists --optimizer")

    for failure in FAILURES:
        print("FAIL:", failure)
    if not FAILURES:
        print("ok: --help lists every flag with its default")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
