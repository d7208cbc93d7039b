"""Python frames as torch names them, and which of them are the user's own code.

torch's Python tracer (``with_stack``) names a frame range ``file(line):
function`` (the line of the ``def``), 2021 traces keep the same form in each
operator's ``Call stack``, and builtins and module calls are named otherwise
(``<built-in method ...>``, ``nn.Module: Linear_0``). Where a sync happened and
where an operator was called from are both "the innermost frame of the user's
own code", so that test is written once, here.
"""
from __future__ import annotations

import re
from pathlib import Path

FRAME = re.compile(r"^(?P<file>.*)\((?P<line>\d+)\): (?P<func>.*)$")
# Files of library code: installed packages, the standard library, torch and its domain
# libraries by the relative paths torch's tracer writes, the notebook machinery, builtins,
# and nbprofiler itself (its step hooks wrap the optimizer's step; its magic runs the cell),
# by the relative path the tracer writes or where this copy of it lives.
_PACKAGE_DIR = re.escape(str(Path(__file__).resolve().parents[1]))
LIBRARY_FILE = re.compile(
    r"site-packages|dist-packages|/lib/python\d|^(torch|torchvision|torchaudio)[/\\]|^IPython/|^ipykernel/"
    rf"|^<built-in|^<frozen|^nbprofiler[/\\]|^{_PACKAGE_DIR}[/\\]"
)


def frame_file(name: str) -> str | None:
    """``file`` of a frame named ``file(line): function``; None for builtins and modules."""
    m = FRAME.match(str(name).strip())
    return None if m is None else m["file"]


def user_frame(name: str) -> re.Match[str] | None:
    """The frame's parts (``file``, ``line``, ``func``) when it is the user's own code, else None."""
    m = FRAME.match(str(name).strip())
    return m if m is not None and not LIBRARY_FILE.search(m["file"]) else None
