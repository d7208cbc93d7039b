"""Cells that use DataLoader workers, threads or torch.compile profile correctly.

Steps are counted once, by the thread that runs the cell; forked DataLoader
workers get torch's own classes and hooks back at the fork; a training loop in
another thread gets a note instead of a crash (torch.profiler may only be
stepped and stopped from the thread that started it).
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from IPython.utils.capture import capture_output

from conftest import ROOT, TRAIN_CELL, assert_nothing_left, temp_traces

pytestmark = pytest.mark.usefixtures("one_torch_thread")

# In each worker, __getitem__ lists what the fork left of nbprofiler (wrapped classes, global
# hooks, an active run; the copied profiler flag aside, which is torch's), then exercises what
# nbprofiler would patch (a DataLoader iterated, an optimizer stepped, nbprofiler.step()).
WORKER_DATASET = """
import nbprofiler
from conftest import leftover_state

class Probing(torch.utils.data.Dataset):
    def __len__(self): return 64
    def __getitem__(self, i):
        left = [p for p in leftover_state() if p != "the torch profiler is still running"]
        for _ in DataLoader(TensorDataset(torch.zeros(4, 1)), batch_size=2):
            pass
        w = torch.zeros(1, requires_grad=True)
        inner = torch.optim.SGD([w], lr=0.1)
        (w * 2).sum().backward(); inner.step()
        nbprofiler.step()
        return torch.randn(20), i % 4, len(left)
"""
WORKER_LOOP = """
left = []
for x, y, m in DataLoader(Probing(), batch_size=4, num_workers=2):
    left += m.tolist()
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""


def test_dataloader_workers_count_each_step_once_and_inherit_no_hooks(shell, private_tmp):
    shell.run_cell(WORKER_DATASET).raise_error()
    with capture_output():
        shell.run_cell_magic("torchprofile", "-q -o run", WORKER_LOOP)
    run = shell.user_ns["run"]
    assert len(shell.user_ns["left"]) == 64 and set(shell.user_ns["left"]) == {0}  # no worker saw a hook
    assert len(run.steps) == 16 and run.run.step_source == "optimizer"  # 16 batches, 16 optimizer steps
    assert list(run.trace_steps["step"]) == [2, 3, 4]
    (loader,) = run.run.loaders  # the loaders the workers iterated were not recorded
    assert loader.num_workers == 2 and loader.batches == 16
    assert_nothing_left([shell.user_ns["model"]])
    assert temp_traces() == []


# Each case would crash the interpreter (SIGSEGV in torch's trace export) if the profiler
# were stepped or stopped from a thread other than the one that started it; hence a
# subprocess, so that a regression fails this test instead of killing the test run.
THREAD_SCRIPT = textwrap.dedent("""
    import json, queue, threading, torch, torch.nn as nn
    from torch.utils.data import DataLoader, TensorDataset
    import nbprofiler
    torch.set_num_threads(1)

    def train(steps, opt_class=torch.optim.SGD):
        model = nn.Linear(8, 2)
        opt = opt_class(model.parameters(), lr=0.1)
        for _ in range(steps):
            loss = model(torch.randn(4, 8)).sum()
            opt.zero_grad(); loss.backward(); opt.step()

    def summary(run):
        r = run.report
        return {"steps": len(r.steps), "source": r.run.step_source, "trace": list(r.trace_steps["step"]),
                "notes": list(r.notes), "dataloader_ms": float(r.steps["dataloader_ms"].sum())}

    def profile_threads(n_threads, steps, **schedule):
        with nbprofiler.profile(**schedule) as run:
            threads = [threading.Thread(target=train, args=(steps,)) for _ in range(n_threads)]
            for t in threads: t.start()
            for t in threads: t.join()
        return summary(run)

    out = {
        "one_thread_recording_from_the_start": profile_threads(1, 12, wait=0, warmup=0, active=3),
        "one_thread_ending_mid_schedule": profile_threads(1, 4, wait=1, warmup=1, active=5),
        "two_threads": profile_threads(2, 60, wait=0, warmup=0, active=3),
    }

    # The cell's own loop beside a second training thread: only the cell's steps count.
    with nbprofiler.profile(wait=0, warmup=0, active=3) as run:
        side = threading.Thread(target=train, args=(30,)); side.start()
        train(12)
        side.join()
    out["cell_and_side_thread"] = summary(run)

    # A side thread inside optimizer.step() the whole time: the cell's steps still end
    # (one nesting depth shared by all threads would hold every one of them back).
    inside, release = threading.Event(), threading.Event()
    class Blocking(torch.optim.SGD):
        def step(self, closure=None):
            inside.set(); release.wait(30)
            return super().step(closure)
    with nbprofiler.profile(wait=0, warmup=0, active=3) as run:
        side = threading.Thread(target=train, args=(1, Blocking)); side.start()
        inside.wait(30)
        train(12)
        release.set(); side.join()
    out["side_thread_inside_step"] = summary(run)

    # A producer thread iterating the DataLoader while the cell trains: its fetches are not
    # the loop's steps (before the first optimizer step they would have ended steps, from
    # the wrong thread), and its fetch time is not the loop's wait.
    loader = DataLoader(TensorDataset(torch.randn(48, 8)), batch_size=4)
    batches = queue.Queue(maxsize=4)
    def produce():
        for batch in loader:
            batches.put(batch)
        batches.put(None)
    model = nn.Linear(8, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with nbprofiler.profile() as run:
        producer = threading.Thread(target=produce); producer.start()
        while (batch := batches.get()) is not None:
            loss = model(batch[0]).sum()
            opt.zero_grad(); loss.backward(); opt.step()
        producer.join()
    out["producer_thread"] = summary(run)
    print(json.dumps(out))
""")


def test_threads_count_the_cells_steps_once_and_never_crash():
    done = subprocess.run([sys.executable, "-c", THREAD_SCRIPT], capture_output=True, text=True, timeout=180, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    for case in ("one_thread_recording_from_the_start", "one_thread_ending_mid_schedule", "two_threads"):
        result = out[case]
        assert result["steps"] == 0 and result["source"] == "other thread", case
        (note,) = [n for n in result["notes"] if "another thread" in n]
        assert "run the training loop in the cell itself" in note
        assert not any("lower --wait" in n for n in result["notes"]), case  # the schedule is not the problem
    for case in ("cell_and_side_thread", "side_thread_inside_step"):
        assert out[case]["steps"] == 12 and out[case]["trace"] == [0, 1, 2], (case, out[case])
    producer = out["producer_thread"]
    assert producer["steps"] == 12 and producer["source"] == "optimizer" and producer["trace"] == [2, 3, 4]
    assert producer["dataloader_ms"] == 0 and not any("another thread" in n for n in producer["notes"])


COMPILED_CELL = """
compiled = torch.compile(model)
for x, y in train_loader:
    loss = F.cross_entropy(compiled(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""


def test_torch_compile_in_the_cell(shell):
    """The first step compiles (seconds); steps are still the 12 optimizer steps.

    No private temp dir here: inductor keeps its compile cache under the temp dir, and
    a fresh one would recompile every kernel with gcc (half a minute on this machine)."""
    from torch._dynamo.exc import BackendCompilerFailed

    try:
        with capture_output():
            shell.run_cell_magic("torchprofile", "-q -o run", COMPILED_CELL)
    except BackendCompilerFailed as exc:  # no usable C++ compiler, or inductor cannot build here
        pytest.skip(f"torch.compile (inductor) cannot compile on this machine: {str(exc)[:300]}")
    run = shell.user_ns["run"]
    assert len(run.steps) == 12 and run.run.step_source == "optimizer"
    assert list(run.trace_steps["step"]) == [2, 3, 4]
    assert run.steps["wall_ms"].iloc[0] > 10 * run.steps["wall_ms"].iloc[2:].median()  # step 0 compiled
    names = set(run.operators["name"])
    assert any("Compiled" in n for n in names), sorted(names)[:40]  # the compiled region ran in the profiled steps
    assert_nothing_left([shell.user_ns["model"]])
    with capture_output():
        shell.run_cell_magic("torchprofile", "-q -o again", TRAIN_CELL)
    assert len(shell.user_ns["again"].steps) == 12
