"""``Report.save``, the ``.nbprof`` format, and the codecs of a run that the history shares.

A trace file holds only what torch recorded; a live run also measured every step
the cell ran, its DataLoaders, the time per cell line and its notes, and a
report rebuilt from the trace alone would lose those tables and suggestions. An
``.nbprof`` file keeps both, so a run can be reopened, shared or compared later.

The format (version ``FORMAT_VERSION``) is a zip archive, readable without nbprofiler:

- ``nbprofiler.json``: ``{"format": "nbprofiler.report", "version": 1, "nbprofiler":
  "<version that wrote it>", "report": REPORT}``, where REPORT is
  ``{"trace": member or null, "source_path", "load_notes": [...], "run": RUN or null,
  "ranks": [{"rank": r, "report": REPORT}, ...]}``;
- ``trace.json`` (``ranks/<r>/trace.json`` for the other ranks of a distributed load,
  whose REPORT has only ``trace``, ``source_path`` and ``load_notes`` to say, and
  ``"run": null, "ranks": []``): the Chrome trace exactly as torch.profiler recorded
  it, so unzipping it gives a file Perfetto and TensorBoard open;
- ``lines/times_ns.npy``, ``lines/lines.npy``: the ``--stack`` line marks, as
  ``.npy`` arrays of int64 and int32 (read with ``allow_pickle=False``).

RUN has one key per ``RunRecord`` field: ``options`` (ProfileOptions' fields),
``device`` (DeviceInfo's), ``steps`` (one ``{"name", "dtype", "values"}`` per
column, missing values as null), ``loaders`` (LoaderRecord's fields, with
``wait_ms_by_step`` as ``[step, ms]`` pairs), ``line_marks`` (the two members'
names, or null), ``facts`` (CaptureFacts' fields, each unwritten output an object of
UnwrittenOutput's; absent from a file written before they were recorded, whose
``notes`` hold the capture's notes in words), ``cycles`` (a ``--every`` run's ``report.cycles``,
column by column as ``steps``, or null), ``measured`` (StoredMeasurement's fields, one object
each), and the plain fields as they are.

Nothing is pickled, since these files come from other people: everything is JSON
or a plain numeric array, and reading one trusts nothing in it. A file from a newer
format version is refused with a message that says so. Each member is held to a size
while it inflates: the trace (and line marks) to the trace file limit
(``NBPROFILER_MAX_TRACE_BYTES``), ``nbprofiler.json`` to ``MAX_DOCUMENT_BYTES``. The
document is decoded straight into the types the writer writes, so a value of another
type is refused with its place, and keys it does not know are skipped unread.
``source_path`` is the sender's path, kept as a label: the reader never reads a file
a received report names (a trace is the archive's member or nothing). The reading side is
``saved_reader.py``.
"""
from __future__ import annotations

import dataclasses
import functools
import io
import json
import operator
import os
import types
import typing
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Callable, Literal, Mapping

import msgspec
import numpy as np
import pandas as pd

from ..analysis.cycles import cycle_table
from ..records import CaptureFacts, LineMarks, LoaderRecord, RunRecord, StoredMeasurement
from ..version import __version__

if TYPE_CHECKING:
    from .rank_summary import RankSummary
    from .report import Report

SUFFIX = ".nbprof"
FORMAT = "nbprofiler.report"
FORMAT_VERSION = 1
DOCUMENT = "nbprofiler.json"
# The fields of RunRecord stored as JSON values as they are; the others have codecs below.
_PLAIN_RUN_FIELDS = ("step_source", "error", "cell_source", "cell_modules", "cell_filename", "cell_key", "notebook",
                     "sampler_bytes", "cpu_count", "intra_op_threads", "wall_s", "other_cores", "notes")
LINE_ARRAYS: dict[str, np.dtype] = {"times_ns": np.dtype(np.int64), "lines": np.dtype(np.int32)}
MAX_DOCUMENT_BYTES = 32 << 20
"""The most ``nbprofiler.json`` may inflate to. A run's document grows by about 220 bytes per
step the cell ran on a GPU (its steps table, and one DataLoader's wait in that step; 175 on a
CPU), so this holds some 150,000 steps, 75 times a long cell's 2,000: a larger one is no run
nbprofiler saved. The cap also bounds what decoding costs: the worst document under it (a
list of millions of ``[0, 0]`` waits) makes Python objects of 13 times its size, and its
load peaks some 440 MiB above the start (bench/hostile_files.py), where a 64 MiB cap let
one peak at 650."""
MAX_MEMBERS = 10_000
"""The most entries a saved report's archive may list. ``Report.save`` writes the document, one
trace per rank and two line-mark arrays: 10,000 holds a run of some 9,990 ranks. The count is
read from the archive's end record before ``zipfile`` reads its directory, which costs about
8 µs and 0.5 KiB an entry (300,000 empty entries in a 26 MB file: 2.4 s and 161 MiB)."""
# -- what the document may hold: every value of the type the writer writes ----------------------
# Decoded by msgspec into these types, a value of another type is refused with its place in
# the document ("Expected `int`, got `str` - at `$.cpu_count`"), and any other key is skipped
# unread, so that nothing the writer does not write costs memory.

class _Column(msgspec.Struct):
    """A table column as ``frame_to_json`` writes it (the dtypes a run's steps table has)."""

    name: str
    dtype: Literal["int64", "float64", "bool", "object", "str", "string"]
    values: list[int | float | str | bool | None]


class LineMarksJSON(msgspec.Struct):
    """The members holding the line marks' arrays."""

    times_ns: str
    lines: str








def _fields_checked(record: type, written_as: Mapping[str, Any]) -> type[msgspec.Struct]:
    """A Struct of the dataclass ``record``'s fields, each of the type ``record`` declares (or
    ``written_as`` gives, where the document holds it otherwise) or absent (``UNSET``); its
    numbers at least ``_AT_LEAST`` says, else 0, since each counts, sizes or times something."""
    hints = typing.get_type_hints(record)
    return msgspec.defstruct(f"{record.__name__}JSON", [
        (f.name, written_as.get(f.name, _at_least(hints[f.name], _AT_LEAST.get(f.name, 0))) | msgspec.UnsetType,
         msgspec.UNSET) for f in dataclasses.fields(record)], kw_only=True)


def _at_least(hint: Any, low: int) -> Any:
    """``hint`` with its ``int`` and ``float`` held to ``>= low`` (in a union too)."""
    if hint in (int, float):
        return Annotated[hint, msgspec.Meta(ge=low)]
    if isinstance(hint, types.UnionType):
        return functools.reduce(operator.or_, (_at_least(arg, low) for arg in typing.get_args(hint)))
    return hint


# Where a record's number is more than 0: a process uses a core, and torch one thread and batches of one sample.
_AT_LEAST = {"cpu_count": 1, "intra_op_threads": 1, "batch_size": 1}
_LoaderJSON = _fields_checked(LoaderRecord, {"wait_ms_by_step": list[tuple[Annotated[int, msgspec.Meta(ge=0)],
                                                                           Annotated[float, msgspec.Meta(ge=0)]]]})
# (A list of a Struct made at run time, which mypy cannot see as a type.)
_FactsJSON = _fields_checked(CaptureFacts, {})
_MeasuredJSON = _fields_checked(StoredMeasurement, {})
RunJSON = _fields_checked(RunRecord, {"steps": list[_Column], "loaders": list[_LoaderJSON],  # type: ignore[valid-type]
                                       "line_marks": LineMarksJSON | None, "facts": _FactsJSON,
                                       "cycles": list[_Column] | None,
                                       "measured": list[_MeasuredJSON]})  # type: ignore[valid-type]
# The columns every run's steps table has (the sampler's), each with the check of its values.
_STEP_COLUMNS: dict[str, Callable[[pd.Series], bool]] = {
    "step": pd.api.types.is_integer_dtype, "phase": pd.api.types.is_string_dtype,
    **dict.fromkeys(("wall_ms", "dataloader_ms"), pd.api.types.is_numeric_dtype)}
# The batches and samples each step consumed: a run saved before the sampler counted them has
# neither (its throughput is then unknown); the analyses read the two together.
_THROUGHPUT_COLUMNS = ("batches", "samples")

def save_report(report: "Report", path: str | os.PathLike[str]) -> Path:
    """Write ``report`` to ``path`` (which must end in ``.nbprof``) and return the path.

    The archive is written beside the target and moved over it only once complete,
    so a Ctrl-C or a full disk mid-save never leaves a truncated file where a good
    one was.
    """
    target = Path(path).expanduser()
    if not target.name.endswith(SUFFIX):
        raise ValueError(f"the file name must end in {SUFFIX} (so that nbprofiler.load reads it as a saved "
                         f"report), got {os.fspath(path)!r}")
    target.parent.mkdir(parents=True, exist_ok=True)  # as --trace and export_chrome_trace do
    partial = target.with_name(target.name + ".partial")
    try:
        with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            document = json.dumps({"format": FORMAT, "version": FORMAT_VERSION, "nbprofiler": __version__,
                                   "report": _Writer(zf).report(report, "")}, indent=1)
            if len(document) > MAX_DOCUMENT_BYTES:  # ASCII: as many bytes as characters
                raise ValueError(f"this report's run is too long to save: its description takes "
                                 f"{len(document) / 2**20:.1f} MiB, over the {MAX_DOCUMENT_BYTES / 2**20:.1f} MiB "
                                 "nbprofiler.load reads back; export its trace with export_chrome_trace instead")
            zf.writestr(DOCUMENT, document)
        os.replace(partial, target)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return target


def frame_to_json(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """A table column by column with its dtype, so the frame read back has the same dtypes (an
    all-missing column stays object, not float); missing values are null."""
    return [{"name": c, "dtype": str(frame[c].dtype), "values": _values(frame[c])} for c in frame.columns]


def _values(column: pd.Series) -> list[Any]:
    """A column's values as plain Python values, missing ones as None (a plain ``tolist`` and a
    mask: an object ``where`` per column cost ~2 ms each, 0.1 s for a run kept in the history)."""
    values = column.tolist()
    missing = column.isna().to_numpy()
    return [None if gone else v for v, gone in zip(values, missing)] if missing.any() else values


def frame_from_json(columns: list[dict[str, Any]]) -> pd.DataFrame:
    """The table ``frame_to_json`` wrote."""
    return pd.DataFrame({c["name"]: pd.Series(c["values"], dtype=c["dtype"]) for c in columns})


def run_to_json(run: RunRecord) -> dict[str, Any]:
    """A RunRecord as plain JSON data, all but its line marks (which run to millions, too many for
    JSON: the archive keeps them as ``.npy`` members, the run history not at all)."""
    doc: dict[str, Any] = {name: getattr(run, name) for name in _PLAIN_RUN_FIELDS}
    doc.update(
        options=dataclasses.asdict(run.options),
        device=dataclasses.asdict(run.device),
        steps=frame_to_json(run.steps),
        loaders=[{**dataclasses.asdict(loader), "wait_ms_by_step": list(loader.wait_ms_by_step.items())}
                 for loader in run.loaders],
        line_marks=None,
        facts=dataclasses.asdict(run.facts),
        cycles=None if run.cycles is None else frame_to_json(run.cycles),
        measured=[dataclasses.asdict(m) for m in run.measured],
    )
    return doc


def run_from_json(doc: dict[str, Any], line_marks: LineMarks | None = None) -> RunRecord:
    """The RunRecord ``run_to_json`` wrote, each value checked to be of its field's type."""
    return run_record(msgspec.convert(doc, RunJSON), line_marks)


def run_record(run: msgspec.Struct, line_marks: LineMarks | None) -> RunRecord:
    """The RunRecord of a checked run document; ProfileOptions re-validated the options, as for any caller."""
    given = _given(run)
    if "facts" in given:
        given["facts"] = CaptureFacts(**_given(given["facts"]))
    if "measured" in given:
        given["measured"] = tuple(StoredMeasurement(**_given(m)) for m in given["measured"])
    if given.get("cycles") is not None:  # held to the columns and dtypes report.cycles has
        given["cycles"] = cycle_table(frame_from_json([msgspec.structs.asdict(c) for c in given["cycles"]]))
    given.update(steps=_steps(given["steps"]), line_marks=line_marks,
                 loaders=tuple(LoaderRecord(**{**_given(loader), "wait_ms_by_step": dict(loader.wait_ms_by_step)})
                               for loader in given["loaders"]))
    return RunRecord(**given)


def measurement_from_json(doc: Any) -> StoredMeasurement:
    """A StoredMeasurement from JSON data written by someone else (a history row), each value checked."""
    return StoredMeasurement(**_given(msgspec.convert(doc, _MeasuredJSON)))


def _given(checked: msgspec.Struct) -> dict[str, Any]:
    """A checked record's fields that the document gives: a field a file from before it existed
    lacks keeps the record's default."""
    return {name: value for name, value in msgspec.structs.asdict(checked).items() if value is not msgspec.UNSET}


def _steps(columns: list[_Column]) -> pd.DataFrame:
    """The run's steps table, refused unless it has the sampler's columns (the throughput pair
    may be absent together), each of its kind, and numbers its steps 0, 1, 2... as the sampler
    does (the analyses look steps up by number)."""
    if len({len(c.values) for c in columns}) > 1:
        raise ValueError("the steps table's columns differ in length")
    frame = frame_from_json([msgspec.structs.asdict(c) for c in columns])
    if len(frame) and "step" in frame and not np.array_equal(frame["step"].to_numpy(), np.arange(len(frame))):
        raise ValueError("the steps table's steps are not numbered 0, 1, 2...")
    present = [name for name in _THROUGHPUT_COLUMNS if name in frame.columns]
    if present and len(present) < len(_THROUGHPUT_COLUMNS):
        raise ValueError(f"the steps table has its {present[0]!r} column without the other of {_THROUGHPUT_COLUMNS}")
    kinds = {**_STEP_COLUMNS, **dict.fromkeys(present, pd.api.types.is_numeric_dtype)}
    for name, is_kind in kinds.items():
        if name not in frame.columns:
            raise ValueError(f"the steps table lacks its {name!r} column")
        if len(frame) and not is_kind(frame[name]):
            raise ValueError(f"the steps table's {name!r} column holds {frame[name].dtype} values")
    return frame


class _Writer:
    """Writes a Report's members into the archive and returns its JSON description."""

    def __init__(self, zf: zipfile.ZipFile) -> None:
        self.zf = zf
        self.traces: dict[str, str] = {}  # source path -> member: a distributed load's first rank is its top report

    def report(self, report: "Report", prefix: str) -> dict[str, Any]:
        return {
            "trace": self.trace(report, prefix),
            "source_path": report.source_path,
            "load_notes": list(report.load_notes),
            "run": None if report.run is None else self.run(report.run, prefix),
            "ranks": [{"rank": number, "report": self.rank(report, rank, f"ranks/{number}/")}
                      for number, rank in report.ranks.items()],
        }

    def rank(self, report: "Report", rank: "RankSummary", prefix: str) -> dict[str, Any]:
        """A rank of a distributed load: its trace, read again from where ``report.rank_traces`` says."""
        return {"trace": self.member(rank.source_path, prefix, lambda: report.rank_traces.data(rank)),
                "source_path": rank.source_path, "load_notes": list(rank.load_notes), "run": None, "ranks": []}

    def trace(self, report: "Report", prefix: str) -> str | None:
        """The member holding the trace as recorded; None for a run that ended before any active step.
        A report whose trace is gone is refused rather than saved half (``Report._trace_bytes``)."""
        if report.ran_live and report.raw_trace is None:
            return None
        return self.member(report.source_path, prefix, lambda: report._trace_bytes("save"))

    def member(self, source_path: str | None, prefix: str, data: Callable[[], bytes]) -> str:
        """The member holding the trace from ``source_path``, written once: a distributed load's
        first rank is its top report."""
        if source_path in self.traces:
            return self.traces[source_path]
        member = prefix + "trace.json"
        self.zf.writestr(member, data())
        if source_path is not None:
            self.traces[source_path] = member
        return member

    def run(self, run: RunRecord, prefix: str) -> dict[str, Any]:
        """Every RunRecord field, the line marks as ``.npy`` members."""
        doc = run_to_json(run)
        doc["line_marks"] = None if run.line_marks is None else {
            key: self.array(f"{prefix}lines/{key}.npy", getattr(run.line_marks, key)) for key in LINE_ARRAYS}
        return doc

    def array(self, member: str, values: np.ndarray) -> str:
        """A numeric array as an ``.npy`` member: line marks run to millions, too many for JSON."""
        buffer = io.BytesIO()
        np.save(buffer, values, allow_pickle=False)
        self.zf.writestr(member, buffer.getvalue())
        return member
