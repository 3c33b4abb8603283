#!/usr/bin/env bash
# deploy/compose-test.sh: run the project's own docker-compose.yml and
# Dockerfile on a real Docker engine and check the system they bring up.
# Called by .ci/run; runnable by hand as root on a Debian machine:
#
#   bash deploy/compose-test.sh
#
# 1. The engine and images: deploy/docker/local-images.sh installs Debian's
#    docker.io (and Compose v2), starts dockerd in the background if none
#    runs, and builds local stand-ins under the image names the compose file
#    and the Dockerfile use (nothing is pulled: no container registry is
#    reachable). Grafana's image cannot be made that way, so every service
#    but grafana is started.
# 2. `docker compose up -d --build --wait` of kafka, chronos-1, chronos-2 and
#    prometheus (the healthchecks of the compose file decide "healthy").
# 3. Through the ports published on 127.0.0.1 only: put 24 jobs (every 1s,
#    so that some are on chronos-2's partitions whatever the assignment)
#    over HTTP (`chronos jobs put --api http://127.0.0.1:8081`), read its
#    dispatch events from the host through Kafka (`chronos tail --brokers
#    127.0.0.1:29092`), check that Prometheus scrapes both replicas (targets
#    up) and has loaded every alert rule of deploy/prometheus/alerts.yml;
#    promtool passes the rules' unit tests (deploy/prometheus/alerts_test.yml).
# 4. `docker kill` chronos-2; chronos-1 must own every partition and the
#    clock; restart chronos-2 and wait until it is healthy and owns
#    partitions again.
# 5. Audit: every second from each job's first fire to the end of the run
#    has its dispatch event (no fire is missing across the kill and
#    restart), none is before the put, and some fires due between the kill
#    and the takeover were dispatched late (the kill moved partitions with
#    due fires: the audit tested a takeover, not only an idle replica).
# 6. On exit (trap): `docker compose down -v`, and the dockerd this script
#    started is stopped. Images and build caches stay (~/.cache/chronos-docker
#    and the engine's /var/lib/docker) so the next run is warm.
#
# Time: cold (nothing cached) ~55 min on a busy 2-core machine, mostly compiling Compose
# v2 and Prometheus; warm ~6 min (image build, stack, checks). Knobs: CHRONOS_DOCKER_CACHE (default
# ~/.cache/chronos-docker), COMPOSE_TEST_KEEP=1 (leave the stack up and the
# engine running for a look; `docker compose -p chronos-compose-test down -v`
# later).
set -euo pipefail
cd "$(dirname "$0")/.."
export WORK=${CHRONOS_DOCKER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/chronos-docker}
export COMPOSE_PROJECT_NAME=chronos-compose-test
mkdir -p "$WORK"
tmp=$(mktemp -d)
log() { printf '\n--- [%s] compose-test: %s\n' "$(date +%T)" "$*"; }
t0=$(date +%s)

engine_ours=""
if ! docker info >/dev/null 2>&1; then engine_ours=1; fi
stack_up=""
tail_pid=""
cleanup() {
  rc=$?
  set +e
  if [[ -n "$tail_pid" ]]; then kill "$tail_pid" 2>/dev/null; wait "$tail_pid" 2>/dev/null; fi
  if [[ -n "$stack_up" ]]; then
    if [[ $rc != 0 ]]; then
      log "FAILED (exit $rc): container states and log tails"
      docker compose ps -a
      docker compose logs --no-color --tail 40 kafka chronos-1 chronos-2 prometheus
    fi
    if [[ -z "${COMPOSE_TEST_KEEP:-}" ]]; then docker compose down -v --remove-orphans; fi
  fi
  if [[ -n "$engine_ours" && -z "${COMPOSE_TEST_KEEP:-}" && -f "$WORK/dockerd.pid" ]]; then
    pid=$(cat "$WORK/dockerd.pid")
    log "stopping the dockerd this test started (pid $pid)"
    kill "$pid" 2>/dev/null
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
    rm -f "$WORK/dockerd.pid"
  fi
  rm -rf "$tmp"
  log "done in $(( $(date +%s) - t0 ))s (exit $rc)"
  exit $rc
}
trap cleanup EXIT

fail() { echo "compose-test: FAIL: $*" >&2; exit 1; }

# wait_for DESCRIPTION SECONDS COMMAND...: run COMMAND every second until it
# succeeds, fail after SECONDS.
wait_for() {
  local what=$1 secs=$2; shift 2
  local deadline=$(( $(date +%s) + secs ))
  until "$@"; do
    (( $(date +%s) < deadline )) || fail "$what: not within ${secs}s"
    sleep 1
  done
}

log "1. engine and local images (deploy/docker/local-images.sh; engine ours: ${engine_ours:-no})"
command -v jq >/dev/null || { apt-get update -qq; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends jq >/dev/null; }
SKIP_PROMETHEUS=${SKIP_PROMETHEUS:-} bash deploy/docker/local-images.sh >"$WORK/local-images.log" 2>&1 \
  || { tail -n 60 "$WORK/local-images.log"; fail "local-images.sh (log: $WORK/local-images.log)"; }
grep '^=== ' "$WORK/local-images.log"
docker info --format 'engine {{.ServerVersion}}'
docker compose version

log "2. chronos CLI for the host side"
go build -o "$tmp/chronos" ./cmd/chronos
chronos=$tmp/chronos

log "3. docker compose up -d --build --wait (every service but grafana)"
stack_up=1
# No DOCKER_BUILDKIT here: the Dockerfile builds with the engine's default builder.
unset DOCKER_BUILDKIT
docker compose up -d --build --wait --wait-timeout 300 kafka chronos-1 chronos-2 prometheus
docker compose ps
for p in $(docker compose ps --format '{{range .Publishers}}{{if .PublishedPort}}{{.URL}}:{{.PublishedPort}} {{end}}{{end}}'); do
  [[ $p == 127.0.0.1:* ]] || fail "a port is published on $p, not on 127.0.0.1 only"
done

api1=http://127.0.0.1:8081 api2=http://127.0.0.1:8082 prom=http://127.0.0.1:9090 brokers=127.0.0.1:29092
metric() { curl -fsS "$1/metrics" | awk -v m="$2" '$1==m {print $2}'; }
partitions=12   # docker-compose.yml sets no CHRONOS_PARTITIONS: the default of --partitions

log "4. jobs over HTTP, their dispatch events through Kafka from the host"
# $njobs jobs, not one: a single job sits on one of chronos-2's partitions
# only about half the time, and then the kill of step 6 moves nothing that
# has due fires and the audit of step 8 proves nothing. With 24 jobs on 12
# partitions, some are on chronos-2's (step 8 checks that fires due during
# the takeover were dispatched late, i.e. that the kill mattered).
njobs=24
run=compose-$(date +%s)
"$chronos" tail --brokers "$brokers" --from-beginning >"$tmp/dispatch.jsonl" 2>"$tmp/tail.err" &
tail_pid=$!
put_at=$(date -u +%s)
for (( i = 0; i < njobs; i++ )); do
  "$chronos" jobs put "$run-$i" --every 1s --payload '{"from":"compose-test"}' --api "$api1" >/dev/null
done
last_put=$(date -u +%s)
in_view2() { "$chronos" jobs get "$run-$(( njobs - 1 ))" --api "$api2" >/dev/null 2>&1; }
wait_for "$run-$(( njobs - 1 )) in chronos-2's job view" 30 in_view2
# fire_lines: one "job scheduled_at" line per distinct fire of this run's jobs.
fire_lines() { jq -r --arg r "$run-" 'select(.job_id | startswith($r)) | "\(.job_id) \(.scheduled_at)"' "$tmp/dispatch.jsonl" 2>/dev/null | sort -u; }
fires() { fire_lines | wc -l; }
have_fires() { (( $(fires) >= $1 )) && (( $(fire_lines | cut -d' ' -f1 | sort -u | wc -l) == njobs )); }
wait_for "5 dispatch events of each of $njobs jobs read from the host" 60 have_fires $(( 5 * njobs ))
echo "read $(fires) dispatch events of $njobs jobs $run-* on $brokers"

log "5. Prometheus scrapes both replicas and has loaded the alert rules"
targets_up() {
  curl -fsS "$prom/api/v1/targets" | jq -e '[.data.activeTargets[] | select(.labels.job == "chronos" and .health == "up") | .labels.instance] | sort == ["chronos-1:8080","chronos-2:8080"]' >/dev/null
}
wait_for "both chronos targets up in Prometheus" 90 targets_up
want_rules=$(grep -c '^ *- alert:' deploy/prometheus/alerts.yml)
have_rules=$(curl -fsS "$prom/api/v1/rules?type=alert" | jq '[.data.groups[].rules[]] | length')
[[ "$have_rules" == "$want_rules" ]] || fail "Prometheus loaded $have_rules alert rules, alerts.yml has $want_rules"
curl -fsS "$prom/api/v1/query?query=chronos_ready" | jq -c '[.data.result[] | {instance: .metric.instance, ready: .value[1]}]'
echo "targets up: chronos-1:8080 chronos-2:8080; alert rules loaded: $have_rules"
# The clock alerts' unit tests, with the promtool local-images.sh built next
# to the Prometheus it runs.
promtool="$WORK/images/prometheus/promtool"
[[ -x "$promtool" ]] || fail "no promtool at $promtool (deploy/docker/local-images.sh builds it with the Prometheus image)"
(cd deploy/prometheus && "$promtool" test rules alerts_test.yml) || fail "promtool test rules deploy/prometheus/alerts_test.yml"

log "6. docker kill chronos-2: chronos-1 takes every partition and the clock"
owned_all() {
  [[ "$(metric "$api1" chronos_partitions_owned)" == "$partitions" ]] || return 1
  local lag; lag=$(metric "$api1" chronos_clock_lag_seconds)
  [[ -n "$lag" && "$lag" != NaN ]] && awk -v l="$lag" 'BEGIN {exit !(l < 5)}'
}
docker kill "$(docker compose ps -q chronos-2)" >/dev/null
killed_at=$(date +%s)
wait_for "chronos-1 owns all $partitions partitions and announces time" 120 owned_all
owned_at=$(date +%s)
echo "chronos-1 owns $partitions partitions and the clock $(( $(date +%s) - killed_at ))s after the kill"
"$chronos" lag --brokers "$brokers" | tail -n 1
before=$(fires)
wait_for "fires go on with one replica" 30 have_fires $(( before + 3 * njobs ))

log "7. restart chronos-2"
docker compose start chronos-2
healthy2() { [[ "$(docker inspect -f '{{.State.Health.Status}}' "$(docker compose ps -q chronos-2)")" == healthy ]]; }
wait_for "chronos-2 healthy again" 180 healthy2
shares() { local n; n=$(metric "$api2" chronos_partitions_owned); [[ -n "$n" && "$n" -gt 0 ]]; }
wait_for "chronos-2 owns partitions again" 120 shares
echo "chronos-2 owns $(metric "$api2" chronos_partitions_owned), chronos-1 $(metric "$api1" chronos_partitions_owned) of $partitions"
before=$(fires)
wait_for "fires go on with both replicas" 30 have_fires $(( before + 3 * njobs ))

log "8. audit: every second from each job's first fire to the end has its dispatch event"
end=$(( $(date -u +%s) - 3 ))   # fires due before this have had 3 s to arrive
rfc() { date -u -d @"$1" +%Y-%m-%dT%H:%M:%SZ; }
all_fired_at() { (( $(fire_lines | grep -c " $(rfc "$1")\$") == njobs )); }
wait_for "the fires due at $(rfc "$end") read" 30 all_fired_at "$end"
kill "$tail_pid"; wait "$tail_pid" 2>/dev/null || true; tail_pid=""
fire_lines >"$tmp/fires"
: >"$tmp/want"
for (( i = 0; i < njobs; i++ )); do
  first_t=$(awk -v j="$run-$i" '$1 == j {print $2; exit}' "$tmp/fires")
  first=$(date -u -d "$first_t" +%s)
  (( first >= put_at - 1 )) || fail "first fire of $run-$i $first_t is before the puts began at $(date -u -d @"$put_at" +%T)"
  (( first <= last_put + 5 )) || fail "first fire of $run-$i $first_t is more than 5 s after the puts"
  for (( s = first; s <= end; s++ )); do echo "$run-$i $(rfc "$s")"; done >>"$tmp/want"
done
sort -u -o "$tmp/want" "$tmp/want"
missing=$(comm -23 "$tmp/want" "$tmp/fires" | wc -l)
comm -23 "$tmp/want" "$tmp/fires" | head -n 20 | sed 's/^/missing fire: /'
due=$(wc -l <"$tmp/want")
# The kill mattered: fires due between it and chronos-1's takeover on
# chronos-2's partitions (or all, if chronos-2 had the clock) can only be
# dispatched once chronos-1 took over, seconds late.
late=$(jq -r --arg r "$run-" --argjson k "$killed_at" --argjson o "$owned_at" '
  select(.job_id | startswith($r)) | (.scheduled_at | fromdate) as $s
  | select($s >= $k and $s <= $o)
  | ((.fired_at | sub("\\.[0-9]+Z$"; "Z") | fromdate) - $s) | select(. >= 3)' "$tmp/dispatch.jsonl" | wc -l)
echo "AUDIT compose: $njobs jobs $run-*, $due fires due up to $(rfc "$end"), $(( due - missing )) dispatched, $missing missing; $(jq -r --arg r "$run-" 'select(.job_id | startswith($r)) | .fire_id' "$tmp/dispatch.jsonl" | wc -l) events read (duplicates allowed); $late fires due during the takeover dispatched 3 s late or more"
(( missing == 0 )) || fail "$missing fires missing"
(( late > 0 )) || fail "no fire due between the kill and the takeover was late: the kill moved no partition with due fires, so the audit tested no takeover"
log "PASS"
