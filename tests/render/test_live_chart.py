"""The live status chart of a ``--every`` run: what a user watching the cell sees while it runs."""
from __future__ import annotations

import re

import numpy as np
import pytest
import torch

import nbprofiler
from nbprofiler.render import frontend, live, live_chart
from nbprofiler.render.live import LiveStatus

pytestmark = pytest.mark.usefixtures("private_tmp")


@pytest.fixture(scope="module")
def watched_run():
    """A finished 100-step run with a cycle every 20 steps, its sampler still holding every step."""
    net = torch.nn.Linear(8, 2)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    with nbprofiler.profile(every=20, history=False) as run:
        for _ in range(100):
            net(torch.randn(4, 8)).sum().backward()
            opt.step()
    return run


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_chart_buckets_every_step_and_keeps_memorys_last_reading():
    values = np.arange(1000, dtype=np.float64)
    means = live_chart.buckets(values, 240)
    size = -(-1000 // 240)
    assert len(means) <= 240
    assert means[0] == pytest.approx(values[:size].mean())
    assert means[-1] == pytest.approx(values[(len(means) - 1) * size:].mean())
    assert live_chart.buckets(values, 240, last=True)[-1] == 999  # memory now, not a bucket's mean
    assert live_chart.sparkline(np.array([1.0, 2.0, 9.0])) == "▁▂█"


def test_a_terminal_shows_the_step_time_and_memory_as_text(watched_run, capsys, monkeypatch):
    monkeypatch.setattr(live.time, "monotonic", Clock())
    status = LiveStatus()
    status.update(watched_run)
    out = capsys.readouterr().out
    assert out.startswith("nbprofiler: step 100 · cycle 6 · ")
    line = re.search(r"step time ([▁▂▃▄▅▆▇█]+) \(max [\d.]+ [mµ]?s\) · RSS ([▁▂▃▄▅▆▇█]+) ([\d.]+ [KMG]iB)", out)
    assert line is not None, out
    assert len(line.group(1)) == 34  # 100 steps in buckets of 3, the fewest that fit 48 characters
    status.close()


def test_a_widget_front_end_draws_the_chart_with_every_cycle_marked(watched_run, monkeypatch):
    import IPython.display

    monkeypatch.setattr(frontend, "widget_frontend", lambda: True)
    monkeypatch.setattr(IPython.display, "display", lambda obj, **kw: None)
    monkeypatch.setattr(live.time, "monotonic", Clock())
    status = LiveStatus()
    status.update(watched_run)
    value = status._widget.value
    assert "step 100 · cycle 6" in value
    assert value.count("<polyline") == 2  # step time and memory
    marks = re.findall(r'<line x1="([\d.]+)"', value)
    assert len(marks) == 5  # cycles begin at steps 0, 20, 40, 60 and 80
    xs = [float(x) for x in marks]
    assert xs == sorted(xs) and np.allclose(np.diff(xs), xs[1] - xs[0], atol=0.2)  # evenly spaced, as the cycles are
    status.close()


def test_a_front_end_without_widgets_gets_text_and_html(watched_run):
    series = live._chart(watched_run)()
    bundle = live._status_bundle("nbprofiler: step 100", series)
    assert bundle["text/plain"].splitlines()[1].startswith("step time ")
    assert "<svg" in bundle["text/html"]


def test_the_chart_is_redrawn_at_most_once_a_second(watched_run, capsys, monkeypatch):
    clock = Clock()
    monkeypatch.setattr(live.time, "monotonic", clock)
    status = LiveStatus()
    status.update(watched_run)
    capsys.readouterr()
    for dt in (0.3, 0.9):
        clock.now = 100.0 + dt
        status.update(watched_run)
        assert capsys.readouterr().out == ""
    clock.now = 101.05
    status.update(watched_run)
    assert "step time" in capsys.readouterr().out
    status.close()


def test_a_run_without_every_keeps_its_plain_line(capsys, monkeypatch):
    net = torch.nn.Linear(8, 2)
    with nbprofiler.profile(history=False, step_on="manual") as run:
        for _ in range(6):
            net(torch.randn(4, 8)).sum().backward()
            nbprofiler.step()
    monkeypatch.setattr(live.time, "monotonic", Clock())
    status = LiveStatus()
    status.update(run)
    out = capsys.readouterr().out
    assert out.startswith("nbprofiler: step 6 · ") and "cycle" not in out and "step time" not in out
    status.close()
