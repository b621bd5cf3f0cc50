#!/usr/bin/env python3
"""Checks the layering the build declares (ctest `layers_check`).

1. A file of core/<layer>/ (tests left out) includes core/ headers only of
   its own layer and of the layers its clickd_core_layer(... DEPS ...) line
   in core/CMakeLists.txt names.
2. core/ includes nothing of the layers above it (server/, replication/,
   wire/, kafka/, client/) and neither gRPC nor NATS.
3. core/optim/ (outside dense/) does not include core/optim/dense/, which
   builds on it.
4. <nats/nats.h> is included only under replication/ (and by tests that
   start a NATS server): every other file reaches NATS through replication/.
5. Outside replication/ and the tests, only the files that start or drive a
   replica (REACHES_NATS) reach <nats/nats.h> at all, through any chain of
   includes: the service, its ModelWriter and the status pages see
   replication/replica_status.h, not replication/replica.h.

Usage: layers_check.py [ROOT]   (ROOT: the repository, default: this file's
../..). Prints every violation with file:line and exits 1 if there is one.
"""
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(__file__), "..", ".."))
SKIPPED_DIRS = {"build", ".git", "target", "node_modules", "bench/out"}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


# The files outside replication/ that may see NATS's headers (rule 5).
REACHES_NATS = {
    "server/main.cc", "server/server_settings.cc",
    "server/replication_setup.h", "server/replication_setup.cc",
    "server/replicated_model_writer.h", "server/replicated_model_writer.cc",
    "embedded/embedded_replica.cc",
}


def includes_of(path):
    with open(os.path.join(ROOT, path), errors="replace") as f:
        return [m.group(2) for m in (INCLUDE.match(line) for line in f) if m]


def reaching_nats(paths):
    """The files among `paths` that include <nats/...>, directly or not."""
    includes = {p: includes_of(p) for p in paths}
    memo = {}

    def reaches(path, seen):
        if path in memo:
            return memo[path]
        found = any(h.startswith("nats/") or
                    (h in includes and h not in seen and reaches(h, seen | {h}))
                    for h in includes[path])
        memo[path] = found
        return found

    return {p for p in paths if reaches(p, {p})}


def declared_layers():
    text = open(os.path.join(ROOT, "core", "CMakeLists.txt")).read()
    layers = {}
    for m in re.finditer(r"^clickd_core_layer\((\w+)(?:\s+DEPS\s+([\w\s]+))?\)", text, re.M):
        layers[m.group(1)] = set((m.group(2) or "").split())
    if not layers:
        sys.exit("layers_check: no clickd_core_layer(...) lines in core/CMakeLists.txt")
    return layers


def sources():
    for root, dirs, files in os.walk(ROOT):
        rel_root = os.path.relpath(root, ROOT)
        dirs[:] = [d for d in dirs
                   if os.path.normpath(os.path.join(rel_root, d)) not in SKIPPED_DIRS
                   and not d.startswith(".")]
        for f in files:
            if f.endswith((".h", ".cc")):
                yield os.path.normpath(os.path.join(rel_root, f))


def is_test(path):
    return path.endswith(("_test.cc", "_fuzz.cc")) or path.startswith("tests/")


def main():
    layers = declared_layers()
    problems = []
    for path in sources():
        parts = path.split(os.sep)
        in_core = parts[0] == "core" and len(parts) > 2
        layer = parts[1] if in_core else None
        if in_core and layer not in layers:
            problems.append(f"{path}: core/{layer}/ has no clickd_core_layer line in core/CMakeLists.txt")
            continue
        with open(os.path.join(ROOT, path), errors="replace") as f:
            for number, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                header = m.group(2)
                where = f"{path}:{number}: #include {m.group(1)}{header}"
                if header.startswith("nats/") and parts[0] not in ("replication",) \
                        and not is_test(path):
                    problems.append(f"{where}: NATS is reached through replication/ only")
                if not in_core or is_test(path):
                    continue
                top = header.split("/")[0]
                if top in ("server", "replication", "wire", "kafka", "client") or \
                        header.startswith(("grpc", "nats/")):
                    problems.append(f"{where}: core/ may not include {top}/ (a layer above it)")
                elif top == "core":
                    if header.startswith("core/optim/dense/") and \
                            path.startswith("core/optim/") and \
                            not path.startswith("core/optim/dense/"):
                        problems.append(f"{where}: core/optim/dense builds on core/optim, "
                                        "not the other way round")
                    other = header.split("/")[1]
                    if other != layer and other not in layers[layer]:
                        allowed = ", ".join(sorted(layers[layer])) or "nothing"
                        problems.append(f"{where}: core/{layer} may include core/ layers "
                                        f"{allowed} (core/CMakeLists.txt), not core/{other}")
    all_sources = set(sources())
    for path in sorted(reaching_nats(all_sources)):
        if path.split(os.sep)[0] in ("replication", "tests") or is_test(path) or \
                path.startswith(("bench/", "fuzz/")) or path in REACHES_NATS:
            continue
        problems.append(f"{path}: reaches <nats/nats.h> through its includes; only the files "
                        "that start or drive a replica may (REACHES_NATS in this script)")
    for p in problems:
        print(p)
    print(f"layers_check: {len(problems)} violation(s) in {ROOT}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
