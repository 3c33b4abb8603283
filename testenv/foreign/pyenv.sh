#!/usr/bin/env bash
# Creates (once) a Python venv with the pinned requirements of the
# foreign-client test and prints the path of its python.
#
#   testenv/foreign/pyenv.sh            -> /root/.cache/chronos-py/<hash>/bin/python
#
# The venv lives in ${CHRONOS_PY_CACHE:-$HOME/.cache/chronos-py}/<hash of
# requirements.txt>, so a changed pin gets a fresh venv. Needs python3 (3.9+)
# with the venv module and PyPI.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REQ="$HERE/requirements.txt"
PY="${CHRONOS_PY:-python3}"
hash="$(sha256sum "$REQ" | cut -c1-12)"
VENV="${CHRONOS_PY_CACHE:-$HOME/.cache/chronos-py}/$hash"
if [[ ! -f "$VENV/.complete" ]]; then
  echo "pyenv.sh: creating $VENV" >&2
  rm -rf "$VENV"
  mkdir -p "$(dirname "$VENV")"
  "$PY" -m venv "$VENV" >&2
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$REQ" >&2
  "$VENV/bin/python" -c 'import confluent_kafka, pytest' >&2
  touch "$VENV/.complete"
fi
echo "$VENV/bin/python"
