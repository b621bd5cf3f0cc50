#!/usr/bin/env bash
# Runs the Java ad-server example (dev.clickd.client.examples.AdServer)
# against a running clickd:
#   client/java/run_example.sh --server=HOST:PORT --model=M [--pages=N] [--token=T]
# The last line of stdout is a JSON object with "updates", "joined" and
# "duplicate". Builds offline from ~/.m2 (scripts/install_client_deps.sh
# fills it), so it does not download.
set -euo pipefail
cd "$(dirname "$0")"
mvn -B -q -o -Dstyle.color=never compile dependency:build-classpath -Dmdep.outputFile=target/classpath.txt >&2
exec java -cp "target/classes:$(cat target/classpath.txt)" dev.clickd.client.examples.AdServer "$@"
