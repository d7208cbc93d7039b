"""The one-line live status shown while a profiled cell runs: "step 4 · warmup · 0.21 s/step".

It updates in place through a display handle in a notebook, or as a plain
carriage-return line in a terminal, and disappears when the report is shown.
"""
from __future__ import annotations

import sys
import time
from typing import Any

_MIN_INTERVAL_S = 0.1  # at most ten updates a second, whatever the step rate


class LiveStatus:
    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self._handle: Any = None
        self._last = 0.0
        self._terminal = False
        self._shown = False

    def text(self, run: Any) -> str:
        per_step = run.last_step_s
        rate = f" · {per_step:.2f} s/step" if per_step is not None else ""
        return f"nbprofiler: step {run.steps_done} · {run.current_phase}{rate}"

    def update(self, run: Any) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last < _MIN_INTERVAL_S:
            return
        self._last = now
        text = self.text(run)
        if self._handle is None and not self._terminal:
            self._start(text)
        elif self._handle is not None:
            self._handle.update({"text/plain": text}, raw=True)
        else:
            sys.stdout.write("\r" + text)
            sys.stdout.flush()
        self._shown = True

    def _start(self, text: str) -> None:
        from IPython import get_ipython
        from IPython.display import display

        shell = get_ipython()
        if shell is not None and getattr(shell, "kernel", None) is not None:
            self._handle = display({"text/plain": text}, raw=True, display_id=True)
        else:
            self._terminal = True
            sys.stdout.write(text)
            sys.stdout.flush()

    def close(self) -> None:
        if not self._shown:
            return
        if self._handle is not None:
            self._handle.update({"text/plain": ""}, raw=True)
        elif self._terminal:
            sys.stdout.write("\r\x1b[2K")
            sys.stdout.flush()
