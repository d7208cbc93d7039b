"""What the measuring helpers show while and after they run: progress, figures, text.

In a notebook the progress bar is a widget and figures are PNG images; in a
terminal the bar is a carriage-return line on stderr and figures are not
shown (they are returned for saving). None of it may be what fails: without
ipywidgets, or outside a kernel, everything falls back to text.
"""
from __future__ import annotations

import io
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def in_kernel() -> bool:
    """Whether we run in a Jupyter kernel (a front end that can show widgets and images)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def show_figure(fig: "Figure", alt: str) -> None:
    """Display ``fig`` as a PNG with ``alt`` as its text/plain fallback, in a kernel only.

    A PNG mimebundle renders the same in every front end, nbconvert and GitHub,
    without depending on which matplotlib backend the kernel configured.
    """
    if not in_kernel():
        return
    from IPython.display import display

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    display({"image/png": buf.getvalue(), "text/plain": alt}, raw=True)


class Progress:
    """``update(done, label)`` out of ``total`` steps; ``close()`` when finished."""

    def __init__(self, total: int, title: str, enabled: bool = True) -> None:
        self.total = max(total, 1)
        self.title = title
        self.enabled = enabled
        self._bar: Any = None
        self._label: Any = None
        self._box: Any = None
        self._text = False
        if enabled:
            self._start()

    def _start(self) -> None:
        if in_kernel():
            try:
                import ipywidgets as widgets
                from IPython.display import display

                self._bar = widgets.IntProgress(value=0, min=0, max=self.total, description=self.title)
                self._label = widgets.Label(value="")
                self._box = widgets.HBox([self._bar, self._label])
                display(self._box)
                return
            except ImportError:
                pass
        self._text = sys.stderr.isatty()  # a log file gets no carriage-return noise

    def update(self, done: int, label: str) -> None:
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.value = min(done, self.total)
            self._label.value = label
        elif self._text:
            sys.stderr.write(f"\r{self.title} [{min(done, self.total)}/{self.total}] {label}\x1b[K")
            sys.stderr.flush()

    def close(self) -> None:
        if self._box is not None:
            self._box.close()
            self._box = self._bar = self._label = None
        elif self._text:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()
            self._text = False
