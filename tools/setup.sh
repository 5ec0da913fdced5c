#!/usr/bin/env bash
# Make the course environment: system packages (apt, as root), then .venv with infopt and its pinned
# dependencies. Idempotent and quick when nothing changed: the install is stamped with pyproject's hash.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null 2>&1 || PY=python3
if ! "$PY" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
  echo "setup: Python 3.11 is required (found $("$PY" --version 2>&1)); install python3.11 or set PYTHON=/path/to/python3.11" >&2
  exit 1
fi

# System packages the course needs: clang (tinygrad's CPU backend), chromium (the browser tests),
# bubblewrap (the grader's sandbox). Installed with apt when running as root; otherwise we say what to run.
need=()
command -v clang    >/dev/null 2>&1 || need+=(clang)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v bwrap    >/dev/null 2>&1 || need+=(bubblewrap)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing system packages: ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null || echo "setup: apt-get update failed; trying the install anyway" >&2
    apt-get install -y -qq "${need[@]}" >/dev/null || echo "setup: could not install ${need[*]}; the units that need them will say so" >&2
  else
    echo "setup: missing system packages: ${need[*]}. Install them with: sudo apt-get install -y ${need[*]}" >&2
  fi
fi

stamp_id=$(cat pyproject.toml | sha256sum | cut -c1-16)
stamp=.venv/.installed-$stamp_id
if [ ! -f "$stamp" ]; then
  if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv"
    "$PY" -m venv .venv
  fi
  echo "setup: installing infopt and its pinned dependencies into .venv (a few minutes the first time)"
  .venv/bin/python -m pip install -q --upgrade pip 2> >(grep -v "WARNING: Location" >&2)
  .venv/bin/python -m pip install -q -e . 2> >(grep -v "WARNING: Location" >&2)
  rm -f .venv/.installed-*
  touch "$stamp"
fi
