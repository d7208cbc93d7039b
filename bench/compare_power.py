"""Can ``%%torchprofile --compare`` at default options see a 1.35× change, and does it leave an
unchanged cell alone?

In a real IPython shell with the extension loaded, one torch thread: a training loop of
``STEPS`` steps through a stack of Linear(256) + ReLU layers, batch 64. The "after" model has
20 layers where the "before" has 27, so each step does 1.35× less work, deterministically.
Each round profiles the before loop (``-o base``), then, in alternating order, the same loop
again and the after loop, each with ``--compare base`` at default options. Prints, over the
rounds, how often the change read "faster" and the unchanged loop "no measurable change", each
verdict, and the machine's load average. Target: both at least 9 in 10.

    .venv/bin/python bench/compare_power.py [ROUNDS] [STEPS]
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SETUP = """
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
torch.set_num_threads(1)

def stack(layers):
    return nn.Sequential(*[m for _ in range(layers) for m in (nn.Linear(256, 256), nn.ReLU())], nn.Linear(256, 10))

before_net, after_net = stack(27), stack(20)
batches = [(torch.randn(64, 256), torch.randint(0, 10, (64,))) for _ in range({steps})]
"""
CELL = """
opt = torch.optim.SGD(net.parameters(), lr=0.01)
for x, y in batches:
    loss = F.cross_entropy(net(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""


def main(rounds: int = 10, steps: int = 30) -> None:
    from IPython.testing.globalipapp import start_ipython
    from IPython.utils.capture import capture_output

    import nbprofiler

    shell = start_ipython()
    shell.run_line_magic("load_ext", "nbprofiler")
    shell.run_cell(SETUP.format(steps=steps)).raise_error()

    def profile(net: str, flags: str) -> nbprofiler.Comparison | None:
        shell.user_ns["net"] = shell.user_ns[net]
        with capture_output():
            shell.run_cell_magic("torchprofile", f"-q --no-history {flags}", CELL)
        return nbprofiler.last_comparison()

    verdicts: dict[str, list[str]] = {"same": [], "changed": []}
    started = time.perf_counter()
    for i in range(rounds):
        profile("before_net", "-o base")
        order = [("same", "before_net"), ("changed", "after_net")]
        for arm, net in order if i % 2 == 0 else order[::-1]:
            c = profile(net, "--compare base")
            assert c is not None and c.before is shell.user_ns["base"]
            verdicts[arm].append(c.verdict)
            print(f"round {i + 1} {arm:7s} {c.verdict}  [{c.steps_compared[1]}]", flush=True)
    faster = sum(v.split("(")[0].endswith("faster ") for v in verdicts["changed"])
    same = sum(v.startswith("no measurable change") for v in verdicts["same"])
    print(f"\n{rounds} rounds of {steps} steps, {time.perf_counter() - started:.0f} s, load average "
          f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    print(f"27 → 20 layers (1.35× less work) read faster: {faster}/{rounds}")
    print(f"unchanged loop read no measurable change: {same}/{rounds}")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
