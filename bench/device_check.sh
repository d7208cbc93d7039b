#!/usr/bin/env bash
# The live CUDA check, in one call on the GPU machine (no network there):
#
#   bash bench/device_check.sh [OUT_DIR]      (default: $OUT when set, else ./device_check_out)
#
# 1. setup: installs from bench/wheels (bench/device_wheels.sh collects them, here) the
#    requirements that the machine's Python lacks, with --no-index; puts the checkout on
#    PYTHONPATH (nbprofiler is used from the working tree, not installed); prints the facts
#    of torch, CUDA and the device.
# 2. pytest: the cuda-marked tests (`pytest -m cuda`, the test files that mark any).
# 3. workloads: bench/device_check.py (a CNN and a Transformer under %%torchprofile, checked
#    against torch.cuda's own counters; device_check.json and the two traces).
# 4. overhead: bench/overhead.py's measurement with its workload on the device, then the
#    magic's costliest functions (cProfile) in one more run.
#
# Each step has a time budget (timeout); a step that fails or runs out is recorded and the
# next one runs, so that one call brings back every figure. Without CUDA everything runs on
# the CPU and the CUDA-only checks read "skipped: no CUDA".
#
# OUT_DIR receives 8 files, the most that the device tool brings back: setup.log,
# pytest_cuda.log, device_check.log, device_check.json, overhead.log, steps.json and the two
# traces. The whole run stays under 8 minutes (the budgets below add up to 470 s).
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT_DIR="${1:-${OUT:-./device_check_out}}"
WHEELS="$ROOT/bench/wheels"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
[ -x "$PYTHON" ] || PYTHON="$(command -v python3)"
OVERHEAD_RUNS="${OVERHEAD_RUNS:-5}"
OVERHEAD_PROFILE="${OVERHEAD_PROFILE:-45}"  # the magic's costliest functions printed after the overhead
# Seconds per step (each can be set from the environment); the device tool allows 600 s a command.
SETUP_S="${SETUP_S:-60}" PYTEST_S="${PYTEST_S:-100}" WORKLOADS_S="${WORKLOADS_S:-210}" OVERHEAD_S="${OVERHEAD_S:-100}"
# Keep in step with REQUIREMENTS in bench/device_wheels.sh (torch, numpy, pandas and
# matplotlib are the machine's own and are never installed here).
REQUIREMENTS=("ipython>=8.0" "ipywidgets>=8.0" "msgspec>=0.18" "psutil>=5.9" "pytest>=8")

mkdir -p "$OUT_DIR"
OUT_DIR="$(cd "$OUT_DIR" && pwd)"
WORK="$(mktemp -d -t nbprofiler-device-XXXXXX)"  # history, IPython profile, pip target: not in OUT_DIR
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 MPLBACKEND=Agg \
  IPYTHONDIR="$WORK/ipython" NBPROFILER_HISTORY="$WORK/history.sqlite"
cd "$ROOT" || exit 1

STATUS=()  # one JSON object per step, for steps.json

# run_step NAME BUDGET_S LOG COMMAND...: runs COMMAND under its budget, output to LOG and to stdout.
run_step() {
  local name="$1" budget="$2" log="$3"
  shift 3
  echo "===== $name (budget ${budget}s) -> $(basename "$log")"
  local start end rc
  start="$(date +%s.%N)"
  timeout --kill-after=10 "$budget" "$@" 2>&1 | tee "$log"
  rc="${PIPESTATUS[0]}"
  end="$(date +%s.%N)"
  local seconds timed_out=false
  seconds="$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')"
  { [ "$rc" = 124 ] || [ "$rc" = 137 ]; } && timed_out=true
  STATUS+=("{\"step\": \"$name\", \"rc\": $rc, \"seconds\": $seconds, \"budget_s\": $budget, \"timed_out\": $timed_out, \"log\": \"$(basename "$log")\"}")
  echo "===== $name: rc=$rc in ${seconds}s$([ "$timed_out" = true ] && echo ' (TIMED OUT)')"
}

# compatible_wheels SRC DST: links into DST the wheels of SRC whose Requires-Python admits
# this Python. SRC holds wheels for 3.10 to 3.12 (ipython 8 and 9, say), and an older pip
# (23.0 does) stops at the first wheel of a local folder that needs another Python instead
# of taking an older release.
compatible_wheels() {
  mkdir -p "$2"
  "$PYTHON" - "$1" "$2" <<'EOF'
import os, pathlib, sys, zipfile
from pip._vendor.packaging.specifiers import SpecifierSet
src, dst = map(pathlib.Path, sys.argv[1:])
here = ".".join(map(str, sys.version_info[:3]))
for wheel in sorted(src.glob("*.whl")):
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        headers = z.read(meta).decode("utf-8").split("\n\n", 1)[0].splitlines()
    needs = next((h.split(":", 1)[1].strip() for h in headers if h.startswith("Requires-Python:")), "")
    if here in SpecifierSet(needs):
        os.symlink(wheel.resolve(), dst / wheel.name)
    else:
        print(f"left out {wheel.name}: it needs Python {needs}")
EOF
}

# install_missing REQUIREMENT...: pip leaves a requirement that is already met alone. When the
# environment cannot be written to, the packages go to a folder of their own on PYTHONPATH.
install_missing() {
  echo "python: $PYTHON ($("$PYTHON" -V 2>&1))"
  if [ ! -d "$WHEELS" ]; then
    echo "no $WHEELS: run bench/device_wheels.sh here and carry bench/wheels; installing nothing"
  else
    local links="$WORK/wheels"
    compatible_wheels "$WHEELS" "$links" || links="$WHEELS"
    local pip=("$PYTHON" -m pip install --no-index --find-links "$links" --disable-pip-version-check --no-cache-dir)
    if ! "${pip[@]}" "$@"; then
      echo "installing into the environment failed: installing into $WORK/site instead"
      "${pip[@]}" --target "$WORK/site" "$@" || return 1
      export PYTHONPATH="$PYTHONPATH:$WORK/site"
    fi
  fi
  "$PYTHON" - <<'EOF'
import importlib.metadata as md, json, subprocess, sys
import torch
import nbprofiler
def version(name):
    try:
        return md.version(name)
    except md.PackageNotFoundError:
        return "MISSING"
names = ("ipython", "ipywidgets", "msgspec", "psutil", "pytest", "numpy", "pandas", "matplotlib", "comm")
print("packages:", ", ".join(f"{n} {version(n)}" for n in names))
print("nbprofiler from", nbprofiler.__file__)
facts = {"python": sys.version.split()[0], "torch": torch.__version__, "torch.version.cuda": torch.version.cuda,
         "cuda available": torch.cuda.is_available()}
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    facts.update({"device": p.name, "capability": f"{p.major}.{p.minor}", "SMs": p.multi_processor_count,
                  "memory GiB": round(p.total_memory / 2**30, 1), "devices": torch.cuda.device_count(),
                  "cudnn": torch.backends.cudnn.version()})
print(json.dumps(facts, indent=1))
try:
    print(subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.max.sm",
                          "--format=csv"], capture_output=True, text=True, timeout=20).stdout)
except (OSError, subprocess.SubprocessError) as exc:
    print(f"nvidia-smi: {exc}")
EOF
}

# The test files that mark any test cuda (pytest -m cuda over all of tests/ would import
# every test module, and some need packages the device lacks, e.g. nbclient).
pytest_cuda() {
  local files
  mapfile -t files < <(grep -l 'mark\.cuda' tests/test_*.py)
  echo "cuda-marked tests in: ${files[*]}"
  "$PYTHON" -m pytest -m cuda -rA -p no:cacheprovider "${files[@]}"
}

export -f compatible_wheels install_missing pytest_cuda
export PYTHON WHEELS WORK

run_step setup "$SETUP_S" "$OUT_DIR/setup.log" bash -c 'install_missing "$@"' _ "${REQUIREMENTS[@]}"
# A fallback install under $WORK/site must reach the later steps too.
[ -d "$WORK/site" ] && export PYTHONPATH="$PYTHONPATH:$WORK/site"
run_step pytest_cuda "$PYTEST_S" "$OUT_DIR/pytest_cuda.log" bash -c pytest_cuda
run_step workloads "$WORKLOADS_S" "$OUT_DIR/device_check.log" "$PYTHON" bench/device_check.py "$OUT_DIR"
run_step overhead "$OVERHEAD_S" "$OUT_DIR/overhead.log" \
  "$PYTHON" bench/device_check.py "$OUT_DIR" --overhead "$OVERHEAD_RUNS" --profile "$OVERHEAD_PROFILE"

{
  echo "["
  for i in "${!STATUS[@]}"; do
    printf ' %s%s\n' "${STATUS[$i]}" "$([ "$i" -lt $((${#STATUS[@]} - 1)) ] && echo ,)"
  done
  echo "]"
} > "$OUT_DIR/steps.json"

echo "===== summary ($OUT_DIR)"
cat "$OUT_DIR/steps.json"
echo "pytest: $(grep -E '^=+ .*(passed|failed|skipped|error|deselected).* =+$' "$OUT_DIR/pytest_cuda.log" | tail -1)"
grep -E '^== checks:|^FAILED ' "$OUT_DIR/device_check.log"
grep -E 'overhead ratio' "$OUT_DIR/overhead.log"
files="$(find "$OUT_DIR" -type f | wc -l)"
echo "$files files in $OUT_DIR$([ "$files" -gt 8 ] && echo ' (more than the 8 the device tool brings back)')"
ls -l "$OUT_DIR"
rm -rf "$WORK"
# Failed when any step did.
! grep -q '"rc": [1-9]' "$OUT_DIR/steps.json"
