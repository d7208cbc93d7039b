"""Shared fixtures: a real IPython shell with the extension loaded, and the shared traces."""
from __future__ import annotations

import gzip
import json
import os
import sys
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

import comm
import pytest

ROOT = Path(__file__).resolve().parents[1]
# The tests sit in one folder per layer (trace/, analysis/, advice/, ...), and some import
# another's helpers by module name (``from test_streams import live_cpu_report``): every
# folder is on sys.path, so one test file runs alone as it runs in the whole suite.
sys.path[1:1] = [str(folder) for folder in sorted(Path(__file__).parent.iterdir())
                 if folder.is_dir() and any(folder.glob("test_*.py")) and str(folder) not in sys.path]
# Real traces from real machines, kept in the repository so that a clone runs every test
# (tests/data/traces/README.md says where each comes from): the GPU ones, then the CPU one.
TRACES = ROOT / "tests" / "data" / "traces"
# Notebook 05 looks for the workplace's shared folder beside the project, as a user's would.
SHARED_TRACES = ROOT.parent / "shared" / "traces"
GPU_TRACE_FILES = [
    "v100_resnet50_train_num_workers_0.pt.trace.json.gz",
    "v100_resnet50_train_num_workers_4.pt.trace.json.gz",
    "v100_resnet_ns_timestamps.pt.trace.json.gz",
    "a100_train.pt.trace.json.gz",
    "a100_nccl_distributed.pt.trace.json.gz",
    "a100_alexnet_small.pt.trace.json.gz",
    "mi250_rocm_toy_train.pt.trace.json.gz",
]
TRACE_FILES = [*GPU_TRACE_FILES, "cpu_only.pt.trace.json.gz"]

SETUP_CELL = """
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
train_ds = TensorDataset(torch.randn(96, 20), torch.randint(0, 4, (96,)))
train_loader = DataLoader(train_ds, batch_size=8)   # 12 batches
"""

TRAIN_CELL = """
for x, y in train_loader:
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""


def leftover_state(modules: Iterable[Any] = ()) -> list[str]:
    """Everything a finished profiled cell could have left behind, as readable problems.

    Checks what nbprofiler installs (optimizer post-step hook, optimizer class ``step``
    wrappers, DataLoader patches) and what it must never leave on: the torch profiler,
    the active run, global module and optimizer hooks, and hooks on ``modules``.
    """
    return [*_wrapped_methods(), *_global_hooks(), *_module_hooks(modules), *_running_state()]


def _wrapped_methods() -> list[str]:
    """DataLoader and optimizer methods still wrapped by nbprofiler's hooks."""
    from torch.utils.data import DataLoader
    from torch.utils.data.dataloader import _BaseDataLoaderIter

    from nbprofiler.capture import hooks

    def ours(fn: Any) -> bool:  # an nbprofiler wrapper anywhere in a functools.wraps chain
        while fn is not None:
            code = getattr(fn, "__code__", None)
            if code is not None and code.co_filename == hooks.__file__:
                return True
            fn = getattr(fn, "__wrapped__", None)
        return False

    patched = [(DataLoader, "__iter__"), (_BaseDataLoaderIter, "__next__")]
    patched += [(cls, "step") for cls in hooks._optimizer_classes() if "step" in cls.__dict__]
    return [f"{cls.__name__}.{attr} is still wrapped" for cls, attr in patched if ours(cls.__dict__[attr])]


def _global_hooks() -> list[str]:
    """torch's global optimizer and module hook registries that are not empty."""
    import torch.nn.modules.module as module_hooks
    import torch.optim.optimizer as optimizer_hooks

    problems: list[str] = []
    for holder, prefix in ((optimizer_hooks, "_global_optimizer_"), (module_hooks, "_global_")):
        for name in dir(holder):
            value = getattr(holder, name)
            if name.startswith(prefix) and name.endswith("hooks") and len(value):
                problems.append(f"{holder.__name__}.{name} holds {len(value)} hook(s)")
    return problems


def _module_hooks(modules: Iterable[Any]) -> list[str]:
    """Hooks left on ``modules`` or any of their submodules."""
    problems: list[str] = []
    for module in modules:
        for sub in module.modules():
            for name, value in vars(sub).items():
                if name.endswith("hooks") and isinstance(value, dict) and value:
                    problems.append(f"{type(sub).__name__}.{name} holds {len(value)} hook(s)")
    return problems


def _running_state() -> list[str]:
    """What must stop with the run: the torch profiler, the active run, the line tracer, the stderr filter."""
    import torch

    from nbprofiler.capture import session, stderr_filter
    from nbprofiler.capture.lines import LineRecorder

    problems: list[str] = []
    if torch.autograd.profiler._is_profiler_enabled or torch._C._autograd._profiler_enabled():
        problems.append("the torch profiler is still running")
    if session._active is not None:
        problems.append("a ProfileRun is still marked active")
    if isinstance(getattr(sys.gettrace(), "__self__", None), LineRecorder):
        problems.append("the --stack line tracer is still installed")
    if stderr_filter._filtering is not None:
        problems.append("stderr is still redirected to the profiler-noise filter")
    return problems


def assert_nothing_left(modules: Iterable[Any] = ()) -> None:
    """Fail with the full list of leftovers (see ``leftover_state``)."""
    problems = leftover_state(modules)
    assert not problems, "; ".join(problems)


def temp_traces() -> list[str]:
    """nbprofiler's temporary trace files in the current temp directory."""
    import tempfile

    return sorted(p.name for p in Path(tempfile.gettempdir()).glob("nbprofiler-*.json"))


@pytest.fixture()
def private_tmp(tmp_path, monkeypatch) -> Path:
    """A temp directory of this test's own, so leftover temp files are ours to count
    (other test runs on the machine write nbprofiler-*.json to /tmp as well)."""
    import tempfile

    path = tmp_path / "tmp"
    path.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(path))
    return path


@pytest.fixture()
def one_torch_thread():
    """Run torch ops on one intra-op thread: tiny models on a shared 2-core machine are
    10x slower with two spinning OpenMP threads, and the thread count changes no result."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def shared_trace(name: str) -> Path:
    """A real trace of tests/data/traces by file name, or by its stem (``"cpu_only"``)."""
    path = TRACES / (name if name.endswith(".gz") else f"{name}.pt.trace.json.gz")
    assert path.is_file(), f"{path} is missing: the real traces are part of the repository"
    return path


@lru_cache(maxsize=None)
def shared_report(name: str):
    """The Report of a shared trace, loaded once per test session."""
    import nbprofiler

    return nbprofiler.load(shared_trace(name))


@lru_cache(maxsize=None)
def shared_raw_events(name: str) -> list[dict]:
    """A shared trace's complete ("X") events as plain dicts, for independent reference checks."""
    raw = json.loads(gzip.decompress(shared_trace(name).read_bytes()))
    return [e for e in raw["traceEvents"] if e.get("ph") == "X"]


@pytest.fixture(scope="session", autouse=True)
def session_history(tmp_path_factory) -> Iterable[Path]:
    """Every run the tests profile is kept in a run history of this test session's own, never in
    the user's (~/.local/share/nbprofiler); kernels and notebooks the tests start inherit it. A
    test that needs a history file of its own sets NBPROFILER_HISTORY itself."""
    path = tmp_path_factory.mktemp("history") / "history.sqlite"
    before = os.environ.get("NBPROFILER_HISTORY")
    os.environ["NBPROFILER_HISTORY"] = str(path)
    yield path
    if before is None:
        os.environ.pop("NBPROFILER_HISTORY", None)
    else:
        os.environ["NBPROFILER_HISTORY"] = before


@pytest.fixture()
def history_file(tmp_path, monkeypatch) -> Path:
    """A history file of this test's own (not yet created), where every run and measurement goes."""
    path = tmp_path / "history.sqlite"
    monkeypatch.setenv("NBPROFILER_HISTORY", str(path))
    return path


@pytest.fixture(scope="session")
def ip():
    """One real IPython shell for the session, with nbprofiler loaded and rich output on."""
    from IPython.testing.globalipapp import start_ipython

    shell = start_ipython()
    shell.run_line_magic("load_ext", "nbprofiler")
    shell.display_formatter.active_types = ["text/plain", "text/html", "application/vnd.nbprofiler.report+json"]
    return shell


@pytest.fixture()
def shell(ip):
    """The shell with a fresh small model, optimizer and DataLoader in its namespace, and ``_``
    the last output again: an earlier test's ``for _ in ...`` would make IPython treat ``_`` as
    the user's own variable, which it then never updates with a cell's output."""
    result = ip.run_cell(SETUP_CELL)
    result.raise_error()
    for unders in ("_", "__", "___"):
        ip.user_ns[unders] = getattr(ip.displayhook, unders)
    return ip


def pytest_collection_modifyitems(config, items):
    """Tests marked ``cuda`` need a live GPU: skip them cleanly without one."""
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a live CUDA device (torch.cuda.is_available() is False)")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)


def execute_notebook(name: str, timeout: int = 300):
    """Execute ``notebooks/<name>`` with nbclient, from the notebooks folder, and return it."""
    import nbformat
    from nbclient import NotebookClient

    path = ROOT / "notebooks" / name
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=timeout, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    return nb


def cell_outputs(nb, startswith: str) -> list[dict]:
    """The outputs of the first code cell whose source starts with ``startswith``."""
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.source.lstrip().startswith(startswith):
            return list(cell.get("outputs", []))
    raise AssertionError(f"no cell starts with {startswith!r}")



class RecordingComm(comm.DummyComm):
    """A widget's comm that keeps what the kernel side sends, in place of a front end (the
    ``recording`` fixture installs it)."""

    sent: list[tuple[str, dict]] = []

    def publish_msg(self, msg_type, data=None, metadata=None, buffers=None, **keys):
        RecordingComm.sent.append((msg_type, data or {}))


@pytest.fixture()
def recording(monkeypatch):
    """What widgets send to the front end, as (msg_type, data) pairs."""
    RecordingComm.sent = []
    monkeypatch.setattr(comm, "create_comm", RecordingComm)
    return RecordingComm.sent


def front_end(widget: Any, **state: Any) -> None:
    """A state change coming from the browser."""
    widget.comm.handle_msg({"content": {"data": {"method": "update", "state": state}}, "buffers": []})
