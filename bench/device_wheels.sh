#!/usr/bin/env bash
# Collect, here (PyPI reachable), the wheels that the GPU machine's Python lacks to run
# nbprofiler, its cuda-marked tests and bench/device_check.sh. That machine reaches no
# package index: bench/device_check.sh installs from this folder with --no-index.
#
#   bench/device_wheels.sh [DIR]     (default bench/wheels, git-ignored; carried to the device)
#
# Its image has torch, numpy, pandas, matplotlib, psutil, pytest and hypothesis, but not
# IPython, ipywidgets or msgspec. Earlier wheels in DIR are removed first, so that the folder
# holds what this run resolved and nothing stale. Its Python version is not guaranteed (3.12 was seen), so the
# wheels are fetched for CPython 3.10, 3.11 and 3.12 on manylinux x86-64, each with its whole
# dependency closure: pip on the device then finds whatever a too-old installed package needs.
# Pure-Python wheels are the same file for the three versions, so the folder stays small;
# the carry limit is 64 MiB for the whole working tree, and the script fails above LIMIT_MIB.
#
# torch, numpy, pandas and matplotlib are never fetched (large, and already there: a second
# copy would replace the device's CUDA build or its ABI-matched numpy). Neither is ipykernel
# nor jupyter_client: neither nbprofiler nor the cuda tests import them (the widget path needs
# only ipywidgets and its comm), and with pyzmq, tornado and debugpy they would add ~15 MiB.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DIR="${1:-$ROOT/bench/wheels}"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
[ -x "$PYTHON" ] || PYTHON="$(command -v python3)"
LIMIT_MIB=24

# What nbprofiler needs beyond torch/numpy/pandas/matplotlib (pyproject.toml [project]
# dependencies), and what the cuda-marked tests import: pytest (pyproject.toml [test]) and
# comm (tests/conftest.py; ipywidgets brings it). hypothesis is left out: only the fuzz tests
# use it, the device has it, and its compiled wheels add 3.5 MiB. Keep in step with
# REQUIREMENTS in bench/device_check.sh.
REQUIREMENTS=("ipython>=8.0" "ipywidgets>=8.0" "msgspec>=0.18" "psutil>=5.9" "pytest>=8")
# Distributions the device has in its own build, whatever a requirement above pulls in.
EXCLUDE='^(torch|numpy|pandas|matplotlib|triton|nvidia_[a-z0-9_]+)-'

# python_for VERSION: an interpreter of that version here (PATH, then pyenv's), or nothing.
# pip download --python-version picks wheels for that version but evaluates the requirements'
# markers for the Python running it: run by 3.11, it would leave out what 3.10 alone needs
# (exceptiongroup and tomli, `python_version < "3.11"`).
python_for() {
  local candidate
  for candidate in "$(command -v "python$1")" "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$1".*/bin/"python$1"; do
    if [ -n "$candidate" ] && [ -x "$candidate" ] && "$candidate" -c 'import pip' 2>/dev/null; then
      echo "$candidate"
      return
    fi
  done
}

mkdir -p "$DIR"
rm -f "$DIR"/*.whl
for version in 3.10 3.11 3.12; do
  downloader="$(python_for "$version")"
  if [ -z "$downloader" ]; then
    downloader="$PYTHON"
    echo "no Python $version here: $("$PYTHON" -V) fetches for it; requirements marked for $version alone may be missing" >&2
  fi
  echo "== CPython $version, fetched by $downloader"
  "$downloader" -m pip download -q --dest "$DIR" --only-binary=:all: --implementation cp \
    --python-version "$version" --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux_2_28_x86_64 "${REQUIREMENTS[@]}"
done

# Nothing above should have pulled these in; if a future release does, drop them and say so.
for whl in "$DIR"/*.whl; do
  name="$(basename "$whl")"
  if [[ "$name" =~ $EXCLUDE ]]; then
    echo "dropping $name: the device has its own" >&2
    rm -f "$whl"
  fi
done

echo "== $(find "$DIR" -name '*.whl' | wc -l) wheels in $DIR"
ls -1 "$DIR"
size_kib="$(du -sk "$DIR" | cut -f1)"
echo "size: $((size_kib / 1024)) MiB ($size_kib KiB); carry limit for the whole tree: 64 MiB"
if [ "$size_kib" -gt $((LIMIT_MIB * 1024)) ]; then
  echo "the wheels take more than $LIMIT_MIB MiB: drop what the device does not need" >&2
  exit 1
fi
