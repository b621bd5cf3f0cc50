#!/usr/bin/env bash
# Examples/s into one model from a Kafka topic (the model's Kafka source)
# against the same records through UpdateStream (`clickctl replay --server`,
# UpdateStreamAcked in batches of --batch_size), in one run, on one clickd
# with a data directory (update log + snapshots, the durable default).
#
#   bash bench/kafka/run.sh [EXAMPLES]      (default 300000)
#
# Starts its own broker (scripts/kafka_broker.sh) and clickd on free
# loopback ports and stops both by PID. The records are produced before the
# model is created, so the Kafka figure is the source's catch-up rate:
# time from CreateModel until the model has learned them all (and, apart,
# the rate after the first examples were learned: without the group join).
# Prints one JSON line.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD_DIR:-build/release}
n=${1:-300000}
source bench/lib/clickd_server.sh
bench_setup kafka_run.sh
broker_dir=$dir/broker
broker_port=$(free_port)
trap 'stop_clickd; bash scripts/kafka_broker.sh stop "$broker_dir" >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
t0=$SECONDS
bash scripts/kafka_broker.sh start "$broker_dir" "$broker_port"
broker_start_s=$((SECONDS - t0))
python3 - "$dir/clicks.vw" "$n" <<'PY'
import random, sys
r = random.Random(7)
with open(sys.argv[1], "w") as f:
    for _ in range(int(sys.argv[2])):
        u, a, s = r.randrange(500), r.randrange(60), r.randrange(40)
        click = r.random() < (1 / 3 if (u + a) % 7 == 0 else 1 / 25)
        f.write(f"{int(click)} |user u{u} |ad a{a} c{a % 6} |site s{s}\n")
PY
kcat -P -b "127.0.0.1:$broker_port" -t clicks -l "$dir/clicks.vw"
start_clickd --data_dir="$dir/data" --metrics_port=0

updates() {  # MODEL
  "$clickctl" models get --server="$server" --model="$1" --json |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["updates"])'
}

# UpdateStream first (the broker idles meanwhile), then the Kafka source.
start=$(date +%s.%N)
"$clickctl" replay --server="$server" --model=stream --create_model --format=vw \
  --batch_size=1000 --json "$dir/clicks.vw" > "$dir/replay.json"
stream_s=$(python3 -c "import time; print(time.time() - $start)")
start=$(date +%s.%N)
"$clickctl" models create --server="$server" --model=kafka \
  --kafka_brokers="127.0.0.1:$broker_port" --kafka_topic=clicks --json > /dev/null
# The first examples learned: the group join and the first fetch are over.
for _ in $(seq 600); do
  first=$(updates kafka)
  [ "$first" -gt 0 ] && break
  sleep 0.05
done
first_at=$(date +%s.%N)
for _ in $(seq 6000); do
  [ "$(updates kafka)" -ge "$n" ] && break
  sleep 0.05
done
steady_s=$(python3 -c "import time; print(time.time() - $first_at)")
kafka_s=$(python3 -c "import time; print(time.time() - $start)")
[ "$(updates kafka)" -eq "$n" ] || { echo "kafka: model has $(updates kafka) of $n" >&2; exit 1; }
broker_rss_mb=$(ps -o rss= -p "$(cat "$broker_dir/broker.pid")" | awk '{print int($1/1024)}')
python3 - <<PY
import json
n, ks, ss = $n, $kafka_s, $stream_s
print(json.dumps({"examples": n, "kafka_examples_per_s": round(n / ks),
                  "kafka_after_first_examples_per_s": round((n - $first) / $steady_s), "kafka_join_s": round(ks - $steady_s, 2), "update_stream_examples_per_s": round(n / ss),
                  "ratio": round(ss / ks, 2), "broker_start_s": $broker_start_s, "broker_rss_mb": $broker_rss_mb}))
PY
