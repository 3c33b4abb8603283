#!/usr/bin/env bash
# A real Apache Kafka broker (KRaft, one node that is broker and controller)
# for Chronos's tests, from Maven Central jars: no Docker, no tarball.
#
#   kafka.sh fetch          resolve the broker's jars into the cache (idempotent)
#   kafka.sh start [DIR]    start a broker on free loopback ports; prints host:port
#   kafka.sh stop  [DIR]    stop it (TERM, KILL after 20 s)
#   kafka.sh env   [DIR]    print "export CHRONOS_TEST_BROKERS=host:port"
#   kafka.sh restart [DIR]  stop the broker of DIR and start it again on the same
#                           ports and log dir (its topics and offsets kept)
#
# DIR (default ${CHRONOS_KAFKA_DIR:-/tmp/chronos-kafka}) holds server.properties,
# the log dir, broker.log, pid and brokers. Every start formats a fresh log dir.
# Needs Java 17+ and Maven (fetch only). The JVM heap is 512m unless
# KAFKA_HEAP_OPTS says otherwise.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VERSION="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$HERE/pom.xml")"
CACHE="${CHRONOS_KAFKA_CACHE:-$HOME/.cache/chronos-kafka/$VERSION}"
LIBS="$CACHE/libs"
DEFAULT_DIR="${CHRONOS_KAFKA_DIR:-/tmp/chronos-kafka}"
START_TIMEOUT="${CHRONOS_KAFKA_START_TIMEOUT:-120}"

die() { echo "kafka.sh: $*" >&2; exit 1; }

fetch() {
  if [[ -f "$LIBS/.complete" ]]; then
    return 0
  fi
  command -v mvn >/dev/null || die "mvn not found (apt-get install maven)"
  command -v java >/dev/null || die "java not found (Java 17+ is needed)"
  echo "kafka.sh: resolving org.apache.kafka:kafka_2.13:$VERSION into $LIBS" >&2
  rm -rf "$LIBS"
  mkdir -p "$LIBS"
  (cd "$HERE" && mvn -q -B dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$LIBS") >&2
  [[ -f "$LIBS/kafka_2.13-$VERSION.jar" ]] || die "kafka_2.13-$VERSION.jar missing after mvn"
  touch "$LIBS/.complete"
}

# free_port prints a loopback TCP port nobody listens on right now.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

java_cmd() { # java_cmd DIR MAINCLASS ARGS... (runs in the foreground)
  local dir="$1"; shift
  # shellcheck disable=SC2086
  java ${KAFKA_HEAP_OPTS:--Xms128m -Xmx512m} -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xshare:auto \
    -Djava.awt.headless=true \
    -Dlog4j2.configurationFile="$dir/log4j2.properties" -Dkafka.logs.dir="$dir" \
    -cp "$LIBS/*" "$@"
}

write_config() { # write_config DIR PORT CPORT
  local dir="$1" port="$2" cport="$3"
  cat >"$dir/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
log.dirs=$dir/data
num.partitions=12
default.replication.factor=1
auto.create.topics.enable=true
offsets.topic.replication.factor=1
offsets.topic.num.partitions=12
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=4
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
num.network.threads=2
num.io.threads=4
num.recovery.threads.per.data.dir=1
background.threads=4
log.retention.hours=24
log.segment.bytes=67108864
log.cleaner.dedupe.buffer.size=8388608
log.cleaner.threads=1
EOF
  cat >"$dir/log4j2.properties" <<EOF
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = $dir/broker.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.file.ref = file
logger.kafka.name = kafka
logger.kafka.level = info
logger.apache.name = org.apache.kafka
logger.apache.level = warn
logger.request.name = kafka.request.logger
logger.request.level = warn
logger.authorizer.name = kafka.authorizer.logger
logger.authorizer.level = warn
logger.cleaner.name = kafka.log.LogCleaner
logger.cleaner.level = warn
logger.log.name = kafka.log
logger.log.level = warn
logger.cluster.name = kafka.cluster
logger.cluster.level = warn
logger.coord.name = org.apache.kafka.coordinator
logger.coord.level = info
logger.raftserver.name = kafka.server.KafkaRaftServer
logger.raftserver.level = info
EOF
}

running() { # running DIR: is the broker of DIR alive?
  local dir="$1"
  [[ -f "$dir/pid" ]] && kill -0 "$(cat "$dir/pid")" 2>/dev/null
}

start() {
  local dir="${1:-$DEFAULT_DIR}"
  fetch
  mkdir -p "$dir"
  dir="$(cd "$dir" && pwd)"
  if running "$dir"; then
    cat "$dir/brokers"
    return 0
  fi
  rm -rf "$dir/data" "$dir/broker.log" "$dir/broker.out" "$dir/pid" "$dir/brokers"
  local port cport
  port="$(free_port)"
  cport="$(free_port)"
  while [[ "$cport" == "$port" ]]; do cport="$(free_port)"; done
  write_config "$dir" "$port" "$cport"
  local uuid
  uuid="$(java_cmd "$dir" kafka.tools.StorageTool random-uuid 2>>"$dir/broker.out")"
  java_cmd "$dir" kafka.tools.StorageTool format -t "$uuid" -c "$dir/server.properties" \
    >>"$dir/broker.out" 2>&1 || { tail -n 30 "$dir/broker.out" >&2; die "formatting $dir/data failed"; }
  # setsid: the broker outlives this script and a Ctrl-C in its terminal.
  setsid bash -c 'exec "$@"' _ java ${KAFKA_HEAP_OPTS:--Xms128m -Xmx512m} -XX:+UseSerialGC \
    -Djava.awt.headless=true -Dlog4j2.configurationFile="$dir/log4j2.properties" \
    -Dkafka.logs.dir="$dir" -cp "$LIBS/*" kafka.Kafka "$dir/server.properties" \
    </dev/null >>"$dir/broker.out" 2>&1 &
  echo $! >"$dir/pid"
  local deadline=$((SECONDS + START_TIMEOUT))
  until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null &&
        grep -q "Kafka Server started" "$dir/broker.log" 2>/dev/null; do
    if ! running "$dir"; then
      echo "--- $dir/broker.out" >&2; tail -n 40 "$dir/broker.out" >&2 || true
      echo "--- $dir/broker.log" >&2; tail -n 40 "$dir/broker.log" >&2 || true
      die "the broker exited during startup"
    fi
    if ((SECONDS >= deadline)); then
      echo "--- $dir/broker.out" >&2; tail -n 40 "$dir/broker.out" >&2 || true
      echo "--- $dir/broker.log" >&2; tail -n 40 "$dir/broker.log" >&2 || true
      stop "$dir" >&2 || true
      die "the broker was not ready within ${START_TIMEOUT}s"
    fi
    sleep 0.5
  done
  echo "127.0.0.1:$port" >"$dir/brokers"
  echo "127.0.0.1:$port"
}

stop() {
  local dir="${1:-$DEFAULT_DIR}"
  [[ -f "$dir/pid" ]] || return 0
  local pid
  pid="$(cat "$dir/pid")"
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    local i
    for ((i = 0; i < 200; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      echo "kafka.sh: broker $pid still running after 20s; KILL" >&2
      kill -KILL "$pid" 2>/dev/null || true
      while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
    fi
  fi
  rm -f "$dir/pid"
}

# restart stops the broker of DIR (if running) and starts it again with the
# same server.properties: same ports, same log dir, nothing formatted.
restart() {
  local dir="${1:-$DEFAULT_DIR}"
  [[ -f "$dir/server.properties" && -d "$dir/data" && -f "$dir/brokers" ]] ||
    die "no broker was started in $dir (kafka.sh start $dir)"
  dir="$(cd "$dir" && pwd)"
  stop "$dir"
  local port
  port="$(sed -n 's/^listeners=PLAINTEXT:\/\/127.0.0.1:\([0-9]*\),.*/\1/p' "$dir/server.properties")"
  [[ -n "$port" ]] || die "no PLAINTEXT port in $dir/server.properties"
  # The readiness check below looks for a fresh "Kafka Server started".
  if [[ -f "$dir/broker.log" ]]; then
    cat "$dir/broker.log" >>"$dir/broker.log.old"
    rm -f "$dir/broker.log"
  fi
  setsid bash -c 'exec "$@"' _ java ${KAFKA_HEAP_OPTS:--Xms128m -Xmx512m} -XX:+UseSerialGC \
    -Djava.awt.headless=true -Dlog4j2.configurationFile="$dir/log4j2.properties" \
    -Dkafka.logs.dir="$dir" -cp "$LIBS/*" kafka.Kafka "$dir/server.properties" \
    </dev/null >>"$dir/broker.out" 2>&1 &
  echo $! >"$dir/pid"
  local deadline=$((SECONDS + START_TIMEOUT))
  until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null &&
        grep -q "Kafka Server started" "$dir/broker.log" 2>/dev/null; do
    if ! running "$dir"; then
      echo "--- $dir/broker.out" >&2; tail -n 40 "$dir/broker.out" >&2 || true
      die "the broker exited while restarting"
    fi
    if ((SECONDS >= deadline)); then
      stop "$dir" >&2 || true
      die "the broker was not ready within ${START_TIMEOUT}s of its restart"
    fi
    sleep 0.5
  done
  cat "$dir/brokers"
}

env_cmd() {
  local dir="${1:-$DEFAULT_DIR}"
  running "$dir" || die "no broker running in $dir (kafka.sh start $dir)"
  echo "export CHRONOS_TEST_BROKERS=$(cat "$dir/brokers")"
}

case "${1:-}" in
  fetch) fetch ;;
  start) start "${2:-}" ;;
  stop) stop "${2:-}" ;;
  env) env_cmd "${2:-}" ;;
  restart) restart "${2:-}" ;;
  *) echo "usage: $0 fetch | start [DIR] | stop [DIR] | env [DIR] | restart [DIR]" >&2; exit 2 ;;
esac
