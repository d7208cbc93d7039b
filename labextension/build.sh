#!/usr/bin/env bash
# Build the nbprofiler JupyterLab extension (labextension/ -> nbprofiler/labextension).
#
#   labextension/build.sh            build when the sources changed (needs Node.js >= 20.19)
#   labextension/build.sh --install  ...then install it into the venv, as `pip install` does
#   labextension/build.sh --test     ...then run the front-end unit tests (vitest)
#   labextension/build.sh --force    rebuild even when the output is newer than the sources
#
# Without Node.js it says so and exits 0 (the Python package works without the
# extension), unless NBPROFILER_REQUIRE_LABEXTENSION=1, when it fails.
# PYTHON picks the Python whose `jupyter-builder`/`jlpm` are used (default: .venv/bin/python).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(dirname "$HERE")"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
[ -x "$PYTHON" ] || PYTHON="$(command -v python3)"
BIN="$(dirname "$PYTHON")"
export PATH="$BIN:$PATH"

install=0; test=0; force=0
for arg in "$@"; do
  case "$arg" in
    --install) install=1 ;;
    --test) test=1 ;;
    --force) force=1 ;;
    *) echo "usage: $0 [--install] [--test] [--force]" >&2; exit 2 ;;
  esac
done

if ! command -v node >/dev/null 2>&1; then
  echo "labextension: Node.js not found; the JupyterLab extension is not built." >&2
  [ "${NBPROFILER_REQUIRE_LABEXTENSION:-0}" = 1 ] && exit 1
  exit 0
fi
if ! command -v jlpm >/dev/null 2>&1; then
  echo "labextension: jlpm not found next to $PYTHON; pip install jupyterlab (or jupyter_builder) there." >&2
  exit 1
fi

cd "$HERE"
# Install node modules when missing or older than the lock file.
if [ ! -d node_modules ] || [ yarn.lock -nt node_modules/.yarn-state.yml ] || [ package.json -nt node_modules/.yarn-state.yml ]; then
  jlpm install
fi

OUT="$ROOT/nbprofiler/labextension/static/style.js"
stale=$force
if [ ! -f "$OUT" ] || [ ! -f "$ROOT/nbprofiler/labextension/install.json" ]; then
  stale=1
elif [ -n "$(find src style schema package.json tsconfig.json -newer "$OUT" -print -quit)" ]; then
  stale=1
fi
if [ "$stale" = 1 ]; then
  jlpm build:prod
  touch "$OUT"
else
  echo "labextension: up to date ($OUT)"
fi

if [ "$test" = 1 ]; then
  jlpm test
fi

if [ "$install" = 1 ]; then
  # Same files as the wheel's shared-data: <prefix>/share/jupyter/labextensions/nbprofiler.
  DEST="$("$PYTHON" -c 'import sys; print(sys.prefix)')/share/jupyter/labextensions/nbprofiler"
  if [ -f "$DEST/install.json" ] && diff -rq "$ROOT/nbprofiler/labextension" "$DEST" -x install.json >/dev/null 2>&1; then
    echo "labextension: installed copy is current ($DEST)"
  else
    "$PYTHON" -m pip install -q --no-deps -e "$ROOT"
  fi
  "$PYTHON" -m jupyter labextension list 2>&1 | grep -E "nbprofiler.*enabled.*OK" || {
    echo "labextension: jupyter labextension list does not show nbprofiler enabled and OK" >&2; exit 1; }
fi
