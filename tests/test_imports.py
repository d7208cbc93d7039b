"""``import nbprofiler`` and reading a trace file do not import torch (hundreds of MB, seconds):
a user who only reads traces, or a CI job that renders them, never pays for it."""
from __future__ import annotations

import subprocess
import sys

from conftest import shared_trace


def test_loading_and_rendering_a_trace_imports_no_torch():
    trace = shared_trace("v100_resnet50_train_num_workers_4")
    script = f"""
import sys
import nbprofiler
report = nbprofiler.load({str(trace)!r})
report.to_text(); report.to_html(); report.suggestions; report._repr_mimebundle_()
report.explorer("Memory")
assert nbprofiler.last() is None
print(sorted(m for m in sys.modules if m == "torch" or m.startswith("torch.")))
import nbprofiler.advice
nbprofiler.profile  # the capture side is still one attribute away
print("torch" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True)
    loaded, after = out.stdout.splitlines()[-2:]
    assert loaded == "[]", loaded
    assert after == "True"
