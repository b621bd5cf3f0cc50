#!/usr/bin/env bash
# A single-node Apache Kafka broker (KRaft: broker and controller in one
# JVM) on loopback, for the Kafka source's tests and benchmark
# (docs/kafka.md).
#
#   scripts/kafka_broker.sh start DIR PORT   start it on 127.0.0.1:PORT with its data in
#                                            DIR; returns once it accepts producers
#   scripts/kafka_broker.sh stop DIR         stop it by its PID (DIR/broker.pid)
#   scripts/kafka_broker.sh start DIR PORT SASL_PORT
#                                            also a SASL_PLAINTEXT listener on
#                                            127.0.0.1:SASL_PORT (mechanism PLAIN) for the
#                                            users of DIR/sasl_users, one NAME:PASSWORD a
#                                            line
#
# The first start fetches org.apache.kafka:kafka_2.13 and its runtime
# dependencies from Maven Central with Maven (scripts/kafka/pom.xml) into
# $CLICKD_KAFKA_CACHE (default ~/.cache/clickd/kafka-<version>), where later
# runs find them. A restart over the same DIR keeps the topics (the broker
# restart test). The JVM gets a small heap ($CLICKD_KAFKA_HEAP, default
# 256m): the machine is shared. Needs Java 17+, Maven, kcat.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version=4.1.0
cache=${CLICKD_KAFKA_CACHE:-$HOME/.cache/clickd/kafka-$version}
heap=${CLICKD_KAFKA_HEAP:-256m}

usage() {
  echo "usage: $0 start DIR PORT [SASL_PORT] | stop DIR" >&2
  exit 2
}

fetch() {
  [ -f "$cache/libs/kafka_2.13-$version.jar" ] && return 0
  echo "kafka_broker: fetching Kafka $version through Maven into $cache" >&2
  mkdir -p "$cache"
  local tmp="$cache/libs.tmp.$$"
  rm -rf "$tmp"
  mvn -q -B -f "$here/kafka/pom.xml" -Dkafka.version="$version" \
    dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp" >&2
  rm -rf "$cache/libs"
  mv "$tmp" "$cache/libs"
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

running() {  # DIR
  [ -f "$1/broker.pid" ] && kill -0 "$(cat "$1/broker.pid")" 2>/dev/null
}

start() {
  local dir=$1 port=$2 sasl_port=${3:-}
  [[ "$port" =~ ^[0-9]+$ ]] && [ "$port" -ge 1 ] && [ "$port" -le 65535 ] || {
    echo "kafka_broker: PORT is \"$port\"; must be 1..65535" >&2
    exit 2
  }
  if [ -n "$sasl_port" ]; then
    [[ "$sasl_port" =~ ^[0-9]+$ ]] && [ "$sasl_port" -ge 1 ] && [ "$sasl_port" -le 65535 ] || {
      echo "kafka_broker: SASL_PORT is \"$sasl_port\"; must be 1..65535" >&2
      exit 2
    }
    [ -s "$dir/sasl_users" ] || {
      echo "kafka_broker: SASL_PORT needs $dir/sasl_users (NAME:PASSWORD a line)" >&2
      exit 2
    }
  fi
  command -v java >/dev/null || { echo "kafka_broker: java not found (Java 17+ needed)" >&2; exit 1; }
  command -v kcat >/dev/null || { echo "kafka_broker: kcat not found (scripts/install_deps.sh)" >&2; exit 1; }
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  if running "$dir"; then
    echo "kafka_broker: already running in $dir (pid $(cat "$dir/broker.pid"))" >&2
    exit 1
  fi
  fetch
  # The controller's port is kept with the data: a restart reuses it.
  [ -f "$dir/controller.port" ] || free_port >"$dir/controller.port"
  local cport
  cport=$(cat "$dir/controller.port")
  local listeners="PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport"
  local advertised="PLAINTEXT://127.0.0.1:$port"
  local protocols="PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
  local sasl_props=""
  if [ -n "$sasl_port" ]; then
    listeners+=",SASL_PLAINTEXT://127.0.0.1:$sasl_port"
    advertised+=",SASL_PLAINTEXT://127.0.0.1:$sasl_port"
    protocols+=",SASL_PLAINTEXT:SASL_PLAINTEXT"
    local plain_users="" name password
    while IFS=: read -r name password; do
      [ -n "$name" ] || continue
      plain_users+=" user_$name=\"$password\""
    done <"$dir/sasl_users"
    sasl_props="sasl.enabled.mechanisms=PLAIN
listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN
listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required$plain_users;"
  fi
  cat >"$dir/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=$listeners
advertised.listeners=$advertised
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=$protocols
$sasl_props
log.dirs=$dir/data
num.partitions=1
auto.create.topics.enable=true
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
num.network.threads=2
num.io.threads=2
num.recovery.threads.per.data.dir=1
background.threads=2
log.retention.hours=-1
PROPS
  cat >"$dir/log4j2.properties" <<PROPS
rootLogger.level=WARN
rootLogger.appenderRef.file.ref=file
appender.file.type=File
appender.file.name=file
appender.file.fileName=$dir/broker.log
appender.file.layout.type=PatternLayout
appender.file.layout.pattern=[%d] %p %m (%c)%n
PROPS
  local cp="$cache/libs/*"
  local jvm=(java "-Xmx$heap" "-Xms$heap" -XX:+UseSerialGC -XX:TieredStopAtLevel=1
    -Djava.awt.headless=true "-Dlog4j2.configurationFile=$dir/log4j2.properties" -cp "$cp")
  if [ ! -f "$dir/data/meta.properties" ]; then
    local id
    id=$(python3 -c 'import base64, uuid; print(base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("="))')
    "${jvm[@]}" kafka.tools.StorageTool format -t "$id" -c "$dir/server.properties" \
      >"$dir/format.log" 2>&1 || { cat "$dir/format.log" >&2; exit 1; }
  fi
  # Its own session: the caller's process group may be killed when it ends.
  setsid nohup "${jvm[@]}" kafka.Kafka "$dir/server.properties" >>"$dir/broker.out" 2>&1 </dev/null &
  echo $! >"$dir/broker.pid"
  # Up once a record is acknowledged (bounded: 90 s).
  local deadline=$((SECONDS + 90))
  while [ $SECONDS -lt $deadline ]; do
    if ! running "$dir"; then
      echo "kafka_broker: the broker exited; $dir/broker.out and broker.log say why:" >&2
      tail -20 "$dir/broker.out" "$dir/broker.log" >&2 2>/dev/null || true
      exit 1
    fi
    if echo probe | timeout 10 kcat -P -b "127.0.0.1:$port" -t clickd-broker-probe \
      -X message.timeout.ms=5000 >/dev/null 2>&1; then
      echo "kafka_broker: Kafka $version up on 127.0.0.1:$port (pid $(cat "$dir/broker.pid"), data $dir)" >&2
      return 0
    fi
    sleep 0.5
  done
  echo "kafka_broker: the broker did not accept a record within 90 s" >&2
  stop "$dir"
  exit 1
}

stop() {
  local dir=$1
  [ -f "$dir/broker.pid" ] || { echo "kafka_broker: no broker.pid in $dir" >&2; return 0; }
  local pid
  pid=$(cat "$dir/broker.pid")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    for _ in $(seq 1 60); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.5
    done
    if kill -0 "$pid" 2>/dev/null; then
      echo "kafka_broker: pid $pid still up after 30 s; SIGKILL" >&2
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  rm -f "$dir/broker.pid"
}

case "${1:-}" in
  start) [ $# -eq 3 ] || [ $# -eq 4 ] || usage; start "$2" "$3" "${4:-}" ;;
  stop) [ $# -eq 2 ] || usage; stop "$2" ;;
  *) usage ;;
esac
