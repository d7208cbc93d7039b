"""A step is one loop iteration: with two optimizers stepped in each (a GAN), and in
inference loops that end their steps with ``nbprofiler.step()``; each checked against
the loop's own timers and counts."""
from __future__ import annotations

import numpy as np
import pytest

BATCH, ITERATIONS = 32, 12

GAN_SETUP = f"""
import time
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
torch.manual_seed(0); torch.set_num_threads(1)
G = nn.Sequential(nn.Linear(16, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 64))
D = nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=2e-4)
opt_d = torch.optim.Adam(D.parameters(), lr=2e-4)
gan_loader = DataLoader(TensorDataset(torch.randn({BATCH * ITERATIONS}, 64)), batch_size={BATCH})
reals = [torch.randn({BATCH}, 64) for _ in range({ITERATIONS})]
ones, zeros = torch.ones({BATCH}, 1), torch.zeros({BATCH}, 1)

def gan_iteration(real):
    fake = G(torch.randn(len(real), 16))
    d_loss = (F.binary_cross_entropy_with_logits(D(real), ones)
              + F.binary_cross_entropy_with_logits(D(fake.detach()), zeros))
    opt_d.zero_grad(); d_loss.backward(); opt_d.step()
    g_loss = F.binary_cross_entropy_with_logits(D(fake), ones)
    opt_g.zero_grad(); g_loss.backward(); opt_g.step()
"""

# The cell times each iteration itself: from the top of the loop body (the fetch included)
# until the generator's optimizer has done its work (its own post-step hook, which runs
# before the profiler's step boundary, so the profiler's work at the boundary is in neither).
GAN_LOADER_CELL = f"""%%torchprofile -o run -q
starts, ends = [], []
timer = opt_g.register_step_post_hook(lambda *_: ends.append(time.perf_counter()))
it = iter(gan_loader)
for i in range({ITERATIONS}):
    starts.append(time.perf_counter())
    (real,) = next(it)
    gan_iteration(real)
timer.remove()
"""

GAN_TENSORS_CELL = """%%torchprofile -o run -q
for real in reals:
    gan_iteration(real)
"""


def test_a_gan_step_is_one_iteration_of_the_loop(shell):
    shell.run_cell(GAN_SETUP).raise_error()
    shell.run_cell(GAN_LOADER_CELL).raise_error()
    report, ns = shell.user_ns["run"], shell.user_ns
    assert len(report.steps) == ITERATIONS
    assert report.summary["samples_per_step"] == BATCH
    assert report.summary["batches_per_step"] == 1
    # The header's average step against the cell's own timer over the same iterations
    # (sums over the profiled steps: both clocks see the same pauses of a busy machine).
    user_ms = (np.array(ns["ends"]) - np.array(ns["starts"])) * 1e3
    profiled = list(report.step_window.steps)
    assert report.summary["avg_step_us"] / 1e3 * len(profiled) == pytest.approx(user_ms[profiled].sum(), rel=0.15)
    assert any("opt_d" in note and "opt_g" in note for note in report.notes)


def test_a_gan_over_premade_tensors_has_one_step_per_iteration(shell):
    shell.run_cell(GAN_SETUP).raise_error()
    shell.run_cell(GAN_TENSORS_CELL).raise_error()
    report = shell.user_ns["run"]
    assert len(report.steps) == ITERATIONS
    assert report.run.step_source == "optimizer"
    # Asked for by name, every optimizer.step() still ends a step.
    shell.run_cell(GAN_TENSORS_CELL.replace("-q", "-q --step-on optimizer")).raise_error()
    assert len(shell.user_ns["run"].steps) == 2 * ITERATIONS


INFERENCE_SETUP = f"""
import torch, torch.nn as nn
import nbprofiler
torch.manual_seed(0); torch.set_num_threads(1)
classifier = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 8)).eval()
images = torch.randn({BATCH * ITERATIONS}, 64)
"""

# No DataLoader: the loop slices its own tensors and says how many samples each step held.
INFERENCE_TENSORS_CELL = f"""%%torchprofile -o run -q
with torch.no_grad():
    for i in range(0, len(images), {BATCH}):
        x = images[i:i + {BATCH}]
        classifier(x)
        nbprofiler.step(samples=len(x))
"""


def test_inference_over_premade_tensors_counts_the_samples_given_to_step(shell):
    shell.run_cell(INFERENCE_SETUP).raise_error()
    shell.run_cell(INFERENCE_TENSORS_CELL).raise_error()
    report = shell.user_ns["run"]
    summary = report.summary
    assert len(report.steps) == ITERATIONS
    assert summary["samples_per_step"] == BATCH
    assert summary["samples_per_s"] == pytest.approx(BATCH / (summary["avg_step_us"] / 1e6))
    assert f"{BATCH} samples per step" in report.to_text()


def test_inference_over_premade_tensors_without_a_count_says_how_to_give_it(shell):
    shell.run_cell(INFERENCE_SETUP).raise_error()
    shell.run_cell(INFERENCE_TENSORS_CELL.replace("samples=len(x)", "")).raise_error()
    report = shell.user_ns["run"]
    assert report.summary["samples_per_s"] is None
    assert any("nbprofiler.step(samples=" in note for note in report.notes)


# The same inference over a DataLoader: its batches say how many samples each step held.
INFERENCE_LOADER_CELL = f"""%%torchprofile -o run -q
test_loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(images), batch_size={BATCH})
with torch.no_grad():
    for (x,) in test_loader:
        classifier(x)
        nbprofiler.step()
"""


def test_inference_over_a_dataloader_counts_its_batches(shell):
    shell.run_cell(INFERENCE_SETUP).raise_error()
    shell.run_cell(INFERENCE_LOADER_CELL).raise_error()
    report = shell.user_ns["run"]
    summary = report.summary
    assert len(report.steps) == ITERATIONS
    assert summary["samples_per_step"] == BATCH
    assert summary["samples_per_s"] == pytest.approx(BATCH / (summary["avg_step_us"] / 1e6))
    assert not any("samples/s is unknown" in note for note in report.notes)


def test_step_refuses_a_sample_count_that_is_not_a_whole_number():
    import nbprofiler

    with pytest.raises(nbprofiler.OptionError, match="^samples: must be a whole number"):
        nbprofiler.step(samples=2.5)


EPOCHS, EPOCH_BATCHES = 4, 6

# A loader with two workers over several short epochs: a modest wait per step, and each epoch's
# end shuts the workers down. The cell times each fetch around next() itself.
EPOCHS_SETUP = f"""
import time
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
torch.manual_seed(0); torch.set_num_threads(1)
net = nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 4))
net_opt = torch.optim.SGD(net.parameters(), lr=0.01)
worker_loader = DataLoader(TensorDataset(torch.randn({BATCH * EPOCH_BATCHES}, 64),
                                         torch.randint(0, 4, ({BATCH * EPOCH_BATCHES},))),
                           batch_size={BATCH}, num_workers=2)
"""

EPOCHS_CELL = f"""%%torchprofile -o run -q
fetch_s = []
for epoch in range({EPOCHS}):
    it = iter(worker_loader)
    while True:
        t = time.perf_counter()
        try:
            x, y = next(it)
        except StopIteration:
            break
        fetch_s.append(time.perf_counter() - t)
        loss = F.cross_entropy(net(x), y)
        net_opt.zero_grad(); loss.backward(); net_opt.step()
"""


def test_the_data_wait_is_what_the_loops_own_timer_around_next_reads(shell):
    shell.run_cell(EPOCHS_SETUP).raise_error()
    shell.run_cell(EPOCHS_CELL).raise_error()
    report, user_ms = shell.user_ns["run"], np.array(shell.user_ns["fetch_s"]) * 1e3
    steps = report.steps
    assert len(steps) == EPOCHS * EPOCH_BATCHES == len(user_ms)
    # Over every step, one fetch each: the same waiting as the cell's own timer.
    assert steps["dataloader_ms"].sum() == pytest.approx(user_ms.sum(), rel=0.2)
