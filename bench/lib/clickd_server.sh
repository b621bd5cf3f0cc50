# Shell helpers for the benchmarks that start their own clickd: sourced,
# never run. The caller sets `build` (a build tree) and runs from the
# repository's root; `bench_setup NAME` then checks the binaries, makes a
# scratch directory ($dir) and stops the server (by PID) and removes $dir
# on exit.
#
#   source bench/lib/clickd_server.sh
#   bench_setup neighbours.sh
#   start_clickd --max_inline_update_features=0    # on a free loopback port: $server
#   ...
#   stop_clickd

source bench/lib/require_binaries.sh

# bench_setup NAME: sets clickd, clickctl, dir; exits 1 if a binary is missing.
bench_setup() {
  clickd=$build/server/clickd
  clickctl=$build/client/clickctl
  require_binaries "$1" "run 'bash scripts/build.sh release' or set BUILD_DIR" "$clickd" "$clickctl"
  dir=$(mktemp -d "${TMPDIR:-/tmp}/${1%.sh}.XXXXXX")
  clickd_pid=
  trap 'stop_clickd; rm -rf "$dir"' EXIT
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start_clickd FLAG...: starts clickd on a free port of 127.0.0.1 ($server,
# PID $clickd_pid, log $dir/clickd.log) and waits until it answers a
# health check (bounded: 100 tries).
start_clickd() {
  server=127.0.0.1:$(free_port)
  "$clickd" --address="$server" "$@" > "$dir/clickd.log" 2>&1 &
  clickd_pid=$!
  for attempt in $(seq 100); do
    "$clickctl" loadgen --server="$server" --method=health --warmup_s=0 --duration_s=1 \
      --max_requests=1 --deadline_ms=200 > /dev/null 2>&1 && return 0
    sleep 0.2
  done
  echo "clickd on $server did not answer; its log:" >&2
  cat "$dir/clickd.log" >&2
  exit 1
}

# stop_clickd: SIGTERM to the server started last, by its PID, and wait.
stop_clickd() {
  if [[ -n ${clickd_pid:-} ]]; then
    kill -TERM "$clickd_pid" 2>/dev/null || true
    wait "$clickd_pid" 2>/dev/null || true
    clickd_pid=
  fi
}

# json_field FILE KEY: a number of a loadgen --json line, rounded.
json_field() {
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(round(d[sys.argv[2]]))' "$1" "$2"
}
