#!/usr/bin/env bash
# Checks the HTTP API against its OpenAPI document (docs/openapi.json) with
# schemathesis, a property-based API tester (issue 20): a pinned version in
# a cached virtualenv, run against a live `chronos dev` on the embedded
# broker, twice: an instance without credentials, and one with a tokens
# file and a token (its check ignored_auth also sends requests without
# it). All checks, every phase (examples, coverage, fuzzing, stateful), a
# fixed seed, bounded examples. Exits non-zero on any failure schemathesis
# reports.
#
#   testenv/schemathesis/run.sh                  # the CI run
#   CHRONOS_SCHEMATHESIS_SEED=7 testenv/schemathesis/run.sh   # another draw
#
# Needs python3 (3.9+) with venv and pip, Go, curl. The packages
# (requirements.txt: schemathesis and every dependency, pinned) live in
# ${CHRONOS_SCHEMATHESIS_CACHE:-$HOME/.cache/chronos-schemathesis}/<hash of
# requirements.txt>, so a changed pin gets a fresh install and an unchanged
# one costs nothing. Reports (JUnit XML, NDJSON events) go to
# ${CHRONOS_SCHEMATHESIS_REPORTS:-a temporary directory}.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
SEED="${CHRONOS_SCHEMATHESIS_SEED:-20}"
MAX_EXAMPLES="${CHRONOS_SCHEMATHESIS_MAX_EXAMPLES:-50}"

# --- the pinned schemathesis, installed once
hash="$(sha256sum "$HERE/requirements.txt" | cut -c1-12)"
VENV="${CHRONOS_SCHEMATHESIS_CACHE:-$HOME/.cache/chronos-schemathesis}/$hash"
if [[ ! -f "$VENV/.complete" ]]; then
  echo "schemathesis: installing into $VENV" >&2
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check --no-deps -r "$HERE/requirements.txt"
  "$VENV/bin/pip" check --disable-pip-version-check
  touch "$VENV/.complete"
fi
"$VENV/bin/schemathesis" --version

# --- chronos, built once for both instances
WORK="$(mktemp -d)"
REPORTS="${CHRONOS_SCHEMATHESIS_REPORTS:-$WORK/reports}"
mkdir -p "$REPORTS"
PIDS=()
cleanup() {
  rc=$?
  for pid in "${PIDS[@]}"; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  if [[ $rc != 0 ]]; then
    for log in "$WORK"/*.log; do [[ -f "$log" ]] && { echo "--- $log (tail)"; tail -n 20 "$log"; }; done
  fi
  rm -rf "$WORK/bin" "$WORK"/*-data
  [[ -n "${CHRONOS_SCHEMATHESIS_REPORTS:-}" ]] || rm -rf "$WORK"
  exit $rc
}
trap cleanup EXIT
(cd "$ROOT" && go build -o "$WORK/bin/chronos" ./cmd/chronos)

# free_port prints a loopback TCP port free right now.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# start NAME ARGS... starts `chronos dev` on fresh ports with ARGS, waits
# until /readyz answers 200 (at most 3 minutes) and sets URL.
start() {
  local name="$1"; shift
  local http kafka
  http="$(free_port)"; kafka="$(free_port)"
  "$WORK/bin/chronos" dev --http-addr "127.0.0.1:$http" --kafka-addr "127.0.0.1:$kafka" \
    --data-dir "$WORK/$name-data" --partitions 3 --log-level warn "$@" >"$WORK/$name.log" 2>&1 &
  PIDS+=($!)
  URL="http://127.0.0.1:$http"
  local deadline=$((SECONDS + 180))
  until curl -fs -o /dev/null "$URL/readyz"; do
    if ((SECONDS > deadline)) || ! kill -0 "${PIDS[-1]}" 2>/dev/null; then
      echo "schemathesis: chronos dev ($name) did not become ready" >&2
      return 1
    fi
    sleep 0.5
  done
}

# stop_last stops the instance started last.
stop_last() {
  local pid="${PIDS[-1]}"
  kill "$pid"
  wait "$pid" || true
  unset 'PIDS[-1]'
}

# check NAME ARGS... runs schemathesis against URL with ARGS.
check() {
  local name="$1"; shift
  echo "--- schemathesis against chronos dev ($name): seed $SEED, at most $MAX_EXAMPLES examples per operation"
  # From $WORK: nothing it writes lands in the repository.
  (cd "$WORK" && PYTHONPATH="$HERE" SCHEMATHESIS_HOOKS=hooks "$VENV/bin/schemathesis" --config-file "$HERE/schemathesis.toml" \
    run "$ROOT/docs/openapi.json" \
    --url "$URL" \
    --checks all \
    --phases examples,coverage,fuzzing,stateful \
    --mode all \
    --seed "$SEED" \
    --max-examples "$MAX_EXAMPLES" \
    --generation-database none \
    --generation-codec ascii \
    --workers 1 \
    --request-timeout 20 \
    --no-color \
    --report junit,ndjson --report-dir "$REPORTS/$name" \
    "$@")
}

start open
check open
stop_last

line="$("$WORK/bin/chronos" tokens new --name schemathesis --role admin)"
secret="$(sed -n 2p <<<"$line")"
sed -n 4p <<<"$line" >"$WORK/tokens"
start token --tokens-file "$WORK/tokens"
check token -H "Authorization: Bearer $secret"
stop_last
echo "schemathesis: no failures"
