"""The Python API for scripts: nbprofiler.profile, nbprofiler.step, nbprofiler.last."""
from __future__ import annotations

import os

import pytest
import torch
import torch.nn as nn

import nbprofiler


def _model():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 2))
    return model, torch.optim.Adam(model.parameters(), lr=1e-3)


def test_profile_context_manager_counts_optimizer_steps():
    model, opt = _model()
    with nbprofiler.profile(wait=0, warmup=1, active=2) as run:
        for _ in range(6):
            loss = model(torch.randn(4, 16)).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
    report = run.report
    assert report is nbprofiler.last()
    assert list(report.steps["phase"]) == ["warmup", "active", "active", "none", "none", "none"]
    assert list(report.trace_steps["step"]) == [1, 2]
    assert "Optimizer.step#Adam.step" in set(report.operators["name"])


def test_optimizer_range_does_not_straddle_steps():
    """The step ends after optimizer.step() returns, so its range lies inside one step."""
    model, opt = _model()
    with nbprofiler.profile(wait=0, warmup=0, active=3) as run:
        for _ in range(3):
            loss = model(torch.randn(4, 16)).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
    frame = run.report.table.frame()
    steps = run.report.trace_steps
    opt_ranges = frame[frame["name"] == "Optimizer.step#Adam.step"]
    assert len(opt_ranges) == 3
    for start, dur in zip(opt_ranges["ts"], opt_ranges["dur"]):
        inside = (steps["start_us"] <= start) & (start + dur <= steps["end_us"] + 1e-3)
        assert inside.sum() == 1


def test_manual_step_function():
    with nbprofiler.profile(step_on="manual", wait=0, warmup=0, active=2) as run:
        for _ in range(4):
            torch.randn(64, 64) @ torch.randn(64, 64)
            nbprofiler.step()
    assert len(run.report.steps) == 4
    assert "aten::mm" in set(run.report.operators["name"])


def test_step_outside_a_profile_does_nothing():
    nbprofiler.step()  # no run: nothing to end, no error
    assert nbprofiler.current_run() is None


def test_exception_in_api_keeps_report_and_propagates():
    model, opt = _model()
    with pytest.raises(RuntimeError, match="boom"):
        with nbprofiler.profile(wait=0, warmup=0, active=5) as run:
            for i in range(5):
                loss = model(torch.randn(4, 16)).sum()
                opt.zero_grad()
                loss.backward()
                opt.step()
                if i == 1:
                    raise RuntimeError("boom")
    assert run.report.partial and len(run.report.steps) == 2
    assert nbprofiler.current_run() is None


def test_bad_option_in_api_names_it():
    with pytest.raises(nbprofiler.OptionError, match="--active"):
        with nbprofiler.profile(active=0):
            pass
    with pytest.raises(nbprofiler.OptionError, match="^activ: is not an option; the options are .*active"):
        with nbprofiler.profile(activ=3):
            pass
    # A with block cannot be re-run: -n belongs to the magic, and saying so beats profiling nothing.
    with pytest.raises(nbprofiler.OptionError, match="^iterations: .*nbprofiler.step\\(\\)"):
        with nbprofiler.profile(iterations=3):
            pass
    assert nbprofiler.current_run() is None


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message shown without a GPU")
def test_asking_for_cuda_without_a_gpu_says_what_to_do():
    with pytest.raises(nbprofiler.OptionError, match="^--device: cuda was asked for.*use --device cpu$"):
        with nbprofiler.profile(device="cuda"):
            pass
    assert nbprofiler.current_run() is None


def test_skip_first_leaves_the_first_steps_unprofiled():
    with nbprofiler.profile(skip_first=2, wait=1, warmup=0, active=2, step_on="manual") as run:
        for i in range(7):
            with torch.profiler.record_function(f"work_{i}"):
                torch.ones(8).sum()
            nbprofiler.step()
    report = run.report
    assert list(report.steps["phase"]) == ["none", "none", "wait", "active", "active", "none", "none"]
    names = set(report.operators["name"])
    assert {"work_3", "work_4"} <= names and not names & {"work_0", "work_1", "work_2", "work_5", "work_6"}
    assert list(report.trace_steps["step"]) == [3, 4]


def test_an_unknown_tab_names_the_tabs():
    with nbprofiler.profile(wait=0, warmup=0, active=1, step_on="manual") as run:
        torch.ones(8).sum()
        nbprofiler.step()
    with pytest.raises(ValueError, match="no tab 'Nope'; its tabs are Overview, Operators"):
        run.report.explorer(tab="Nope")


@pytest.mark.cuda
def test_live_cuda_run_records_kernels_and_device_memory():
    model = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with nbprofiler.profile(wait=1, warmup=1, active=3) as run:
        for _ in range(6):
            loss = model(torch.randn(64, 256, device="cuda")).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
    report = run.report
    assert report.device.kind == "cuda"
    assert {"mem_allocated_bytes", "mem_peak_bytes", "mem_reserved_bytes"} <= set(report.steps.columns)
    assert (report.steps["mem_peak_bytes"] >= report.steps["mem_allocated_bytes"]).all()
    assert report.operators["device_self_us"].sum() > 0


@pytest.mark.cuda
def test_live_cuda_step_time_covers_queued_device_work():
    """A step that only queues kernels returns on the host at once; its wall time must still
    cover the device work (CUDA events, no synchronize in the loop), and the peak resets per step."""
    a = torch.randn(4096, 4096, device="cuda")
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(20):
        a @ a
    end.record()
    torch.cuda.synchronize()
    device_ms = start.elapsed_time(end)  # what one step's kernels take
    with nbprofiler.profile(wait=1, warmup=1, active=2, step_on="manual") as run:
        for i in range(6):
            big = torch.empty(256 << 20 if i == 2 else 1 << 20, dtype=torch.uint8, device="cuda")
            del big
            for _ in range(20):
                a @ a
            nbprofiler.step()
    steps = run.report.steps
    assert (steps["wall_ms"] > 0.7 * device_ms).all(), (steps["wall_ms"].tolist(), device_ms)
    peaks = steps["mem_peak_bytes"] - steps["mem_allocated_bytes"]
    assert peaks[2] >= 256 << 20 and (peaks.drop(2) < 256 << 20).all()


def test_names_with_double_quotes_survive_torchs_export():
    """torch writes record_function names unescaped; the parser mends those lines."""
    name = '<b class="x">step "one"</b>'
    with nbprofiler.profile(step_on="manual", wait=0, warmup=0, active=1) as run:
        with torch.profiler.record_function(name):
            torch.randn(8, 8) @ torch.randn(8, 8)
        nbprofiler.step()
    report = run.report
    assert name in set(report.operators["name"])
    assert any("unescaped quotes" in n for n in report.notes)
    assert name not in report.to_html() and "&lt;b class=&quot;x&quot;&gt;" in report.to_html()


def test_profiler_log_lines_are_kept_out_of_stderr_but_user_output_is_not(capfd):
    import ctypes

    libc = ctypes.CDLL(None)
    with nbprofiler.profile(step_on="manual", wait=0, warmup=0, active=2, memory=True):
        for _ in range(2):
            torch.randn(32, 32) @ torch.randn(32, 32)
            nbprofiler.step()
        message = b"from the user's C code\n"
        libc.write(2, message, len(message))
    err = capfd.readouterr().err
    assert "from the user's C code" in err
    assert "profiler_start" not in err and "profiler_stop" not in err


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_process_forked_during_a_run_keeps_writing_to_the_real_stderr(capfd):
    """A persistent DataLoader worker outlives the run: its stderr must not be the run's temp file."""
    go_r, go_w = os.pipe()
    with nbprofiler.profile(step_on="manual", wait=0, warmup=0, active=1):
        pid = os.fork()
        if pid == 0:  # the child: wait until the run is over, then write
            os.close(go_w)
            os.read(go_r, 1)
            os.write(2, b"from a worker after the run\n")
            os._exit(0)
        torch.ones(4).sum()
        nbprofiler.step()
    os.close(go_r)
    os.write(go_w, b"x")
    os.close(go_w)
    assert os.waitpid(pid, 0)[1] == 0
    assert "from a worker after the run" in capfd.readouterr().err


def test_a_live_trace_torch_wrote_badly_costs_its_tables_not_the_steps(monkeypatch):
    def broken_export(self, path):
        with open(path, "w") as fh:
            fh.write('{"traceEvents": [{"ph": "X", "name": ')  # cut short, as a crashed export leaves it

    monkeypatch.setattr(torch.profiler.profile, "export_chrome_trace", broken_export)
    model, opt = _model()
    with nbprofiler.profile(wait=0, warmup=0, active=2) as run:
        for _ in range(3):
            loss = model(torch.randn(4, 16)).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
    report = run.report
    assert len(report.steps) == 3 and not report.has_trace and len(report.table) == 0 and len(report.operators) == 0
    assert any("could not be read" in n and "truncated" in n for n in report.notes)
    assert "could not be read" in report.to_text()


def test_a_run_that_recorded_no_trace_has_every_table_empty_with_its_columns():
    """A cell that ends before its first active step has no trace; the Report still hands out
    every table, empty, with the columns a traced run of the same loop has, so user code
    that reads ``report.operators["host_self_us"]`` works on both. (Memory is off: its
    columns in the operator table say what the trace recorded, and an untraced run recorded none.)"""
    from nbprofiler.report.read_only import read_only_table

    def loop(wait: int) -> nbprofiler.Report:
        model, opt = _model()
        with nbprofiler.profile(wait=wait, warmup=0, active=2, memory=False) as run:
            for _ in range(3):
                loss = model(torch.randn(4, 16)).sum()
                opt.zero_grad()
                loss.backward()
                opt.step()
        return run.report

    untraced, traced = loop(wait=5), loop(wait=0)
    assert not untraced.has_trace and traced.has_trace and len(untraced.steps) == len(traced.steps) == 3
    assert len(untraced.operators) == 0 and len(traced.operators) > 0
    tables = [name for name, attr in vars(nbprofiler.Report).items() if isinstance(attr, read_only_table)]
    for name in tables:
        empty, full = getattr(untraced, name), getattr(traced, name)
        if isinstance(full, dict):
            assert empty.keys() == full.keys(), name
            continue
        assert list(empty.columns) == list(full.columns), name
        if name not in ("steps", "memory_steps", "memory_growth"):  # the per-step sampler fills these without a trace
            assert empty.empty, name
    assert "no step was profiled" in untraced.to_text()
