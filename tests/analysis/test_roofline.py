"""The roofline table (analysis/roofline.py): intensity against the ridge point, hand-checked."""
from __future__ import annotations

import json

import pytest
from conftest import shared_report

from nbprofiler.analysis.device_specs import device_spec
from nbprofiler.analysis.flops import flop_calls
from nbprofiler.analysis.operators import OperatorTree
from nbprofiler.analysis.roofline import ROOFLINE_COLUMNS, WHAT_FOLLOWS, roofline
from nbprofiler.trace.parser import parse_trace


def _op(name: str, dims: list, ts: float, dur: float) -> dict:
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur,
            "args": {"Input Dims": dims, "Input type": ["float"] * len(dims)}}


def test_classes_against_the_ridge_point():
    n = 4096
    events = [
        _op("aten::mm", [[n, n], [n, n]], 0, 1000),  # 2n^3 FLOPs over 3 n^2 floats: 683 FLOPs/byte
        _op("aten::bmm", [[64, n, 1], [64, 1, n]], 2000, 500),  # outer products: 2n^2 over ~n^2 floats written
        _op("aten::conv2d", [[1, 3, 8, 8], [4, 3, 3, 3]], 3000, 10),  # no backward: FLOPs unknown
    ]
    table = parse_trace(json.dumps({"traceEvents": events}).encode(), source="hand")
    spec = device_spec("Tesla V100-SXM2-32GB")
    rows = roofline(flop_calls(OperatorTree(table)), spec).set_index("operator")
    assert list(rows.reset_index().columns) == ROOFLINE_COLUMNS
    ridge = 15.7e12 / 900e9  # fp32 peak over HBM2 bandwidth (V100 data sheet)
    mm = rows.loc["aten::mm"]
    assert mm["intensity"] == pytest.approx(2 * n**3 / (3 * n * n * 4))
    assert mm["ridge"] == pytest.approx(ridge) and mm["bound"] == "compute-bound"
    assert mm["achieved_flops_per_s"] == pytest.approx(2 * n**3 / 1000e-6)  # host time: no device time here
    bmm = rows.loc["aten::bmm"]
    assert bmm["intensity"] == pytest.approx(2 * 64 * n * n / ((2 * 64 * n + 64 * n * n) * 4))
    assert bmm["bound"] == "memory-bound"
    assert rows.loc["aten::conv2d", "bound"] == "unknown"
    assert list(rows.index) == ["aten::mm", "aten::bmm", "aten::conv2d"]  # hottest first
    # Without a spec sheet nothing can be placed.
    assert set(roofline(flop_calls(OperatorTree(table)), None)["bound"]) == {"unknown"}


def test_v100_resnet50_roofline():
    report = shared_report("v100_resnet50_train_num_workers_0")
    rows = report.roofline.set_index("operator")
    assert rows["time_us"].is_monotonic_decreasing
    # The fc layer's weight-gradient mm [32, 1000] x [1000, 2048] in fp32, by hand, and its transpose's.
    flops = 2 * 32 * 1000 * 2048
    moved = (32 * 1000 + 1000 * 2048 + 32 * 2048) * 4
    assert rows.loc["aten::mm", "intensity"] == pytest.approx(flops / moved)
    assert rows.loc["aten::mm", "bound"] == "memory-bound"  # 15.3 FLOPs/byte under the V100's 17.4
    # ResNet-50's convolutions are far above the ridge on a V100 in fp32.
    assert rows.loc["aten::conv2d", "bound"] == "compute-bound"
    assert rows.loc["aten::conv2d", "achieved_flops_per_s"] < 15.7e12  # under the fp32 peak
    assert set(rows["bound"]) <= set(WHAT_FOLLOWS)
