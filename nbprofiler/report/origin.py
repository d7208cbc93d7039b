"""Where a Report came from, said once: a live run, a trace file, a folder of ranks, a saved
report or the run history.

What a report can show follows from it: only a run (live, or reopened from a saved file or the
history) has the sampler's every step, the cell's source and line marks and its options; only a
trace file of this machine is read again for its bytes; only a live run of this process is the
user's own. The Report's accessors (``ran_live``, ``sampled_steps``, ``cell_source``...) read
this, so that no analysis or renderer works it out again from which fields are None.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:
    from ..records import RunRecord


class Kind(Enum):
    LIVE = "live"  # captured by this process (``Report.from_live``)
    TRACE_FILE = "trace file"  # one trace file of this machine (``nbprofiler.load``)
    RANKS = "ranks"  # a folder of several ranks' trace files: the lowest rank's, with every rank's summary
    SAVED_FILE = "saved file"  # a ``.nbprof`` file (``Report.save``): a live run's, or a trace file's
    STORED_RUN = "stored run"  # a run kept in the history (``nbprofiler.stored_run``), without its trace


@dataclass(frozen=True, eq=False)
class Origin:
    """A Report's source and what came with it: the run record (None for a trace file), the
    trace's bytes as recorded (a live run's or a saved report's), the path it was read from
    (for a saved report, the sender's: a label, never read), and the tables the history kept."""

    kind: Kind
    run: "RunRecord | None" = None
    raw_trace: bytes | None = field(default=None, repr=False)
    source_path: str | None = None
    stored: Mapping[str, Any] = field(default_factory=dict, repr=False)  # see nbprofiler.history.stored

    @property
    def made_here(self) -> bool:
        """A live run captured by this process: the only report whose names and cell are the
        user's own, which suggestion code may copy unchecked and "Try it" may run."""
        return self.kind is Kind.LIVE

    @property
    def source_is_local(self) -> bool:
        """Whether ``source_path`` is a trace file of this machine, read again for the trace's
        bytes when the report is saved or exported. A saved report's is the path on the machine
        that saved it: a label, never read, since a received file could name any file."""
        return self.kind in (Kind.TRACE_FILE, Kind.RANKS)
