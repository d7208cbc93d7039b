"""Ctrl-C while the first chart imports matplotlib, in a fresh interpreter.

An interrupted first import used to leave matplotlib half-run for the rest of the
kernel's life: every later report, and the user's own ``import matplotlib.pyplot``,
failed with ``module 'matplotlib' has no attribute 'get_data_path'``. Here a trace
function raises KeyboardInterrupt at the Nth line run in one file of the import,
as a Ctrl-C would; then a report must render with its charts, and pyplot import.
"""
from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import ROOT

SCRIPT = r"""
import json, sys
from nbprofiler.render.html import render_html
from nbprofiler.report import Report
from nbprofiler.trace.parser import parse_trace

events = [{"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}", "ts": i * 100, "dur": 90, "pid": 1,
           "tid": 1} for i in (1, 2)]
events += [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": i * 100 + 5, "dur": 50, "pid": 1, "tid": 1}
           for i in (1, 2)]
report = Report.from_trace(parse_trace(json.dumps({"traceEvents": events}).encode(), "synthetic"), "synthetic")
target, nth, seen = sys.argv[1], int(sys.argv[2]), 0

def interrupt_at_nth_line(frame, event, arg):
    global seen
    if event == "line":
        seen += 1
        if seen == nth:
            raise KeyboardInterrupt
    return interrupt_at_nth_line

sys.settrace(lambda frame, event, arg: interrupt_at_nth_line if frame.f_code.co_filename.endswith(target) else None)
try:
    render_html(report)
except KeyboardInterrupt:
    print("interrupted")
sys.settrace(None)
print("charts" if "data:image/png;base64," in render_html(report) else "no charts")
import matplotlib.pyplot as plt
plt.close(plt.figure())
print("pyplot")
"""


@pytest.mark.parametrize(("target", "nth"), [
    ("matplotlib/__init__.py", 50),  # early: before get_data_path is defined
    ("matplotlib/__init__.py", 20000),  # late, in rcParams' set-up
    ("PIL/Image.py", 100),  # in a package matplotlib imports
])
def test_a_report_and_pyplot_work_after_an_interrupted_first_import(target, nth):
    done = subprocess.run([sys.executable, "-c", SCRIPT, target, str(nth)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.stdout.split() == ["interrupted", "charts", "pyplot"], done.stdout + done.stderr[-2000:]
