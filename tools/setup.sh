#!/usr/bin/env bash
# Make the course environment: system packages (apt, as root; the list is tools/system-packages.txt), then
# .venv with infopt and its pinned dependencies. `--test` also installs the test-only packages (the `test` extra:
# pytest, xdist, hypothesis, playwright), which `make test` needs and a student's `make lab` does not.
# Idempotent and quick when nothing changed: the install is stamped with pyproject's hash and the extras.
set -euo pipefail
cd "$(dirname "$0")/.."

extras=""
for arg in "$@"; do
  case "$arg" in
    --test) extras="test" ;;
    *) echo "setup: unknown option $arg (use --test to add the test-only packages)" >&2; exit 2 ;;
  esac
done

PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null 2>&1 || PY=python3
if ! "$PY" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
  echo "setup: Python 3.11 is required (found $("$PY" --version 2>&1)); install python3.11 or set PYTHON=/path/to/python3.11" >&2
  exit 1
fi

# System packages: a package is missing when the command (or file) that proves it is absent.
need=()
while read -r pkg probe _; do
  case "$pkg" in ''|'#'*) continue ;; esac
  if [[ "$probe" == /* ]]; then [ -e "$probe" ] || need+=("$pkg")
  else command -v "$probe" >/dev/null 2>&1 || need+=("$pkg"); fi
done < tools/system-packages.txt
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

stamp_id=$( (cat pyproject.toml; echo "extras=$extras") | sha256sum | cut -c1-16)
stamp=.venv/.installed-$stamp_id
if [ ! -f "$stamp" ]; then
  if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv"
    "$PY" -m venv .venv
  fi
  target="."
  [ -n "$extras" ] && target=".[$extras]"
  echo "setup: installing infopt${extras:+ with its $extras extra} and its pinned dependencies into .venv (a few minutes the first time)"
  .venv/bin/python -m pip install -q --upgrade pip 2> >(grep -v "WARNING: Location" >&2)
  .venv/bin/python -m pip install -q -e "$target" 2> >(grep -v "WARNING: Location" >&2)
  # the plain install's stamp stays valid after a test install (it is a superset); a test install is redone
  # after a plain one changed pyproject
  rm -f .venv/.installed-*
  touch "$stamp"
  if [ -n "$extras" ]; then
    touch ".venv/.installed-$( (cat pyproject.toml; echo "extras=") | sha256sum | cut -c1-16)"
  fi
fi
