"""The torch.compile suggestion on CPU: it compiles the nn.Module the cell calls, counts only the
time inside it, and fires where what compiling removes (Python, per-call cost, unfused memory
passes, convolution layouts) makes the step faster, not where one large matmul fills it.

Each workload is profiled in the real IPython shell, as a user runs it. torch.compile itself is
never run here (a compile takes tens of seconds): bench/compile_gain.py times each shape
compiled against eager and prints the estimates beside the measurements.
"""
from __future__ import annotations

import statistics

import pytest
import torch
from IPython.utils.capture import capture_output

import nbprofiler
from nbprofiler.advice.rules import suggest, verdicts

COMPILE_CHECK = "many small operators on CPU"

FEATURIZE_SETUP = """
import time, zlib
import torch, torch.nn as nn
import nbprofiler
torch.manual_seed(0)
torch.set_num_threads(1)
words = [f"w{i}" for i in range(500)]
texts = [" ".join(words[(7 * i + j) % 500] for j in range(150)) for i in range(8 * 16)]

def featurize(text):
    counts = [0.0] * 64
    for token in text.split():
        counts[zlib.crc32(token.encode()) % 64] += 1.0
    return torch.tensor(counts)

model = nn.Sequential(*[nn.Sequential(nn.Linear(64, 64), nn.GELU(), nn.LayerNorm(64)) for _ in range(12)]).eval()
model_shares = []
"""

# The user's own timer: the share of each iteration the model call takes, to check the card's against.
FEATURIZE_CELL = """\
with torch.no_grad():
    for i in range(0, len(texts), 8):
        start = time.perf_counter()
        feats = torch.stack([featurize(t) for t in texts[i:i + 8]])
        t0 = time.perf_counter()
        out = model(feats)
        t1 = time.perf_counter()
        model_shares.append((t1 - t0) / (t1 - start))
        nbprofiler.step()
"""

INFERENCE_CELL = """\
with torch.no_grad():
    for (x,) in test_loader:
        out = model(x)
"""

_IMPORTS = """
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
torch.manual_seed(0)
torch.set_num_threads(1)
"""

RESNET_SETUP = _IMPORTS + """
class Basic(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout)
        self.c2, self.b2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)
        self.skip = nn.Sequential()
        if stride != 1 or cin != cout:
            self.skip = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        return F.relu(self.skip(x) + self.b2(self.c2(F.relu(self.b1(self.c1(x))))))

model = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU(), Basic(16, 16, 1),
                      Basic(16, 32, 2), Basic(32, 64, 2), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                      nn.Linear(64, 10)).eval()
test_loader = DataLoader(TensorDataset(torch.randn(8 * 12, 3, 48, 48)), batch_size=8)
"""

MLP12_SETUP = _IMPORTS + """
model = nn.Sequential(*[nn.Sequential(nn.Linear(64, 64), nn.GELU(), nn.LayerNorm(64)) for _ in range(12)]).eval()
test_loader = DataLoader(TensorDataset(torch.randn(8 * 40, 64)), batch_size=8)
"""

BIG_MATMUL_SETUP = _IMPORTS + """
model = nn.Linear(1024, 1024).eval()
test_loader = DataLoader(TensorDataset(torch.randn(256 * 8, 1024)), batch_size=256)
"""


def profiled(shell, setup: str, cell: str):
    """The report of ``cell`` profiled after ``setup``, in the shell."""
    with capture_output():
        shell.run_cell(setup).raise_error()
        shell.run_cell("%%torchprofile -q -o report --wait 1 --warmup 1 --active 8\n" + cell).raise_error()
    return shell.user_ns["report"]


def compile_cards(report):
    return [s for s in report.suggestions if s.kind == "compile"]


def test_a_featuriser_then_a_model_compiles_the_model_and_counts_only_its_time(shell, monkeypatch):
    """Compiled as pasted, ``featurize = torch.compile(featurize)`` ran 0.92x (dynamo breaks its graph on
    zlib.crc32), and the card counted the Python featuriser as 100% of the step: the model is what compiles."""
    report = profiled(shell, FEATURIZE_SETUP, FEATURIZE_CELL)
    (card,) = compile_cards(report)
    assert card.evidence["model"] == "model" and "Compile model" in card.title
    assert card.code.splitlines()[0].startswith("model = torch.compile(model)")
    assert "featurize" not in card.code
    # The share is the model's alone: near what the user's own timer gives it, far from the whole step.
    timed = statistics.median(shell.user_ns["model_shares"])
    assert card.evidence["model_share"] < 0.8, timed
    assert abs(card.evidence["model_share"] - timed) < 0.2, timed
    compiled = []
    monkeypatch.setattr(torch, "compile", lambda m, **kw: compiled.append(m) or m)
    model = shell.user_ns["model"]
    shell.run_cell(card.code).raise_error()
    assert compiled == [model]


def test_the_model_is_named_only_where_the_run_recorded_it_as_a_module(shell, tmp_path):
    """Saved and loaded again, the run keeps which of the cell's names are modules; without that
    record (a trace file) the card says in words what to compile and has no code to paste."""
    report = profiled(shell, FEATURIZE_SETUP, FEATURIZE_CELL)
    loaded = nbprofiler.load(report.save(tmp_path / "featurize.nbprof"))
    assert loaded.run.cell_modules == ("model",)  # featurize is called too, but is no module
    (card,) = [s for s in suggest(loaded) if s.kind == "compile"]
    assert card.code.splitlines()[0].startswith("model = torch.compile(model)")
    loaded.run.cell_modules = None
    (card,) = [s for s in suggest(loaded) if s.kind == "compile"]
    assert card.evidence["model"] is None and "the nn.Module your loop calls" in card.title
    assert card.guidance


@pytest.mark.parametrize("setup", [RESNET_SETUP, MLP12_SETUP], ids=["resnet", "mlp12"])
def test_compile_is_suggested_where_compiling_pays(shell, setup):
    """A CPU ResNet's operators average over a millisecond, and 12 x (Linear(64) + GELU + LayerNorm)
    makes 36 calls a step: the old limits (100 µs a call, 50 calls) hid both, which compiled ran 1.72x
    and 2.5x faster. The range's low end is no slowdown."""
    report = profiled(shell, setup, INFERENCE_CELL)
    (card,) = compile_cards(report)
    assert card.code.splitlines()[0].startswith("model = torch.compile(model)")
    assert card.gain_low >= 0.97 and card.gain >= 1.1


def test_no_compile_where_one_big_matmul_fills_the_step(shell):
    """A step that is one large matmul's compute gains nothing from compiling (measured 0.99x)."""
    report = profiled(shell, BIG_MATMUL_SETUP, INFERENCE_CELL)
    assert compile_cards(report) == []
    (check,) = [v for v in verdicts(report) if v.check == COMPILE_CHECK]
    assert check.state == "passed" and check.evidence["compile_gain"] < 1.1
