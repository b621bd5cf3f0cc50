# Sourced by bench/rpc/profile.sh and predict_stages.sh: starts $clickd under
# valgrind --tool=callgrind on a free port of 127.0.0.1, its dumps named
# DUMP_DIR/server.PID, its output in $out/clickd_callgrind.log; stops it by
# PID on exit. Defines $server, $clickd_pid and loadgen() (clickctl loadgen
# against it, JSON, no warmup), and returns once it answers a health check.
# stop_clickd stops whichever clickd $clickd_pid names; stage_phase (below)
# records one case for predict_stages.sh and update_stages.sh.
#
#   start_clickd_under_callgrind DUMP_DIR SCRIPT_NAME
start_clickd_under_callgrind() {
  local dump_dir=$1 script=$2
  local port
  port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  server=127.0.0.1:$port
  valgrind --tool=callgrind --callgrind-out-file="$dump_dir/server.%p" "$clickd" \
    --address="$server" > "$out/clickd_callgrind.log" 2>&1 &
  clickd_pid=$!
  trap stop_clickd EXIT
  local attempt
  for attempt in $(seq 120); do  # valgrind starts slowly: at most ~60 s
    if loadgen --method=health --max_requests=1 --deadline_ms=500 > /dev/null 2>&1; then return; fi
    if ! kill -0 "$clickd_pid" 2>/dev/null || [[ $attempt == 120 ]]; then
      echo "$script: clickd under callgrind did not become ready" >&2
      cat "$out/clickd_callgrind.log" >&2
      exit 1
    fi
    sleep 0.5
  done
}

stop_clickd() {
  kill -TERM "$clickd_pid" 2>/dev/null || true
  wait "$clickd_pid" 2>/dev/null || true
}

loadgen() {
  "$clickctl" loadgen --server="$server" --json --warmup_s=0 --duration_s=600 "$@"
}

# stage_phase NAME CALLS ARGS...: zeroes the counters, sends CALLS calls of
# `clickctl loadgen ARGS` (none may fail), dumps the counters as NAME and
# appends "NAME CALLS DUMP" to $out/index.txt (what predict_stages.py reads).
stage_phase() {
  local name=$1 calls=$2
  shift 2
  callgrind_control -z "$clickd_pid" > /dev/null 2>&1
  local line
  line=$(loadgen --max_requests="$calls" --deadline_ms=60000 "$@" | tail -1)
  callgrind_control -d "$name" "$clickd_pid" > /dev/null 2>&1
  /usr/bin/python3 -c "import json,sys; r=json.loads(sys.argv[1]); assert r['errors']==0, r" "$line"
  echo "$name $calls $(grep -l "^desc: Trigger: dump $name\$" "$out"/server.* | head -1)" \
    >> "$out/index.txt"
}
