#!/usr/bin/env bash
# Installs (once) the pinned npm packages of the Node.js foreign-client test
# (node/package.json and node/package-lock.json) and prints the path of the
# node_modules directory to give the test as NODE_PATH.
#
#   testenv/foreign/nodeenv.sh          -> /root/.cache/chronos-node/<hash>/node_modules
#
# The packages live in ${CHRONOS_NODE_CACHE:-$HOME/.cache/chronos-node}/<hash
# of the lockfile>, so a changed pin gets a fresh install and an unchanged
# one costs nothing. Needs node (18+) and npm with the npm registry.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
LOCK="$HERE/node/package-lock.json"
hash="$(cat "$HERE/node/package.json" "$LOCK" | sha256sum | cut -c1-12)"
DIR="${CHRONOS_NODE_CACHE:-$HOME/.cache/chronos-node}/$hash"
if [[ ! -f "$DIR/.complete" ]]; then
  echo "nodeenv.sh: installing into $DIR" >&2
  rm -rf "$DIR"
  mkdir -p "$DIR"
  cp "$HERE/node/package.json" "$LOCK" "$DIR/"
  (cd "$DIR" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error) >&2
  (cd "$DIR" && node -e 'require("kafkajs")') >&2
  touch "$DIR/.complete"
fi
echo "$DIR/node_modules"
