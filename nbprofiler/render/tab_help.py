"""The one line on top of each explorer tab that says how to read it."""
from __future__ import annotations

import ipywidgets as widgets

from .flame import FLAME_HOW
from .html import LINES_HOW, MODULES_HOW, esc

HOW = {
    "Overview": "The average step and its breakdown: one bar per profiled step, parts by device activity on a GPU, "
                "by training phase on a CPU. Below: the device, and the changes worth trying first.",
    "Operators": "One row per operator. Self time excludes the ops it calls, total includes them; device time is "
                 "the GPU work it launched. Click a header to sort; pick an operator below for its kernels and "
                 "call sites.",
    "Kernels": "GPU kernels by total time, with the operator that launched each, and that FLOP operator's "
               "achieved FLOP/s and what bounds it (a kernel has no FLOP count of its own; hover a header for "
               "more); the bars group kernel time by what the kernels compute.",
    "Memory": "Memory at the end of every step of the cell (wait, warmup and active shaded), then through the "
              "profiled steps, then which operators allocated it. A rising line across steps is a leak.",
    "Timeline": "The profiled steps on a time axis: a lane per host thread (operators nested by depth), the "
                "DataLoader, each GPU stream (kernels, copies, memsets, NCCL) and memory, with the steps' "
                "boundaries dashed. Open in Perfetto downloads the trace to look at it there.",
    "Cell lines": LINES_HOW,
    "Modules": MODULES_HOW,
    "Flame graph": f"{FLAME_HOW} Click a box to zoom into it, the top bar to zoom out; search highlights boxes "
                   "by name and says their share of the time.",
    "Suggestions": "Changes to try, largest expected gain first, each with the measurements behind it and code "
                   "to paste (Copy puts it on the clipboard).",
    "Export": "Save what this report holds: the Chrome trace (opens in ui.perfetto.dev or chrome://tracing), a "
              "TensorBoard log directory, this report as one standalone HTML file, or the whole report "
              "(.nbprof, which nbprofiler.load reads back). Each run has its own folder; an existing file gets a "
              "new name unless you tick Replace, and each save offers a download link.",
}


def how_html(tab: str) -> widgets.HTML:
    return widgets.HTML(f'<div class="nbp"><div class="how">{esc(HOW[tab])}</div></div>')
