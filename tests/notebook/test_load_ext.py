"""``%load_ext nbprofiler`` costs a fresh kernel no torch import (seconds, hundreds of MB): torch is
imported when the first profiled cell runs, and that cell is profiled as usual."""
from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import sys
from IPython.core.interactiveshell import InteractiveShell

shell = InteractiveShell.instance()
shell.run_line_magic("load_ext", "nbprofiler")
print("torch" in sys.modules)
shell.run_cell('''%%torchprofile -q -o run --wait 0 --warmup 0 --active 2
import torch
model = torch.nn.Linear(8, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    loss = model(torch.randn(4, 8)).sum()
    opt.zero_grad(); loss.backward(); opt.step()
''').raise_error()
run = shell.user_ns["run"]
print(len(run.steps), run.run.step_source, "torch" in sys.modules)
"""


def test_load_ext_leaves_torch_unimported_until_a_cell_is_profiled():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300, check=True)
    after_load, after_cell = out.stdout.splitlines()[-2:]
    assert after_load == "False"
    assert after_cell == "3 optimizer True"
