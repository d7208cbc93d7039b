"""``Report.save`` and the reading side of ``nbprofiler.load`` for ``.nbprof`` files.

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
names, or null), and the plain fields as they are.

Nothing is pickled, since these files come from other people: everything is JSON
or a plain numeric array. A file from a newer format version is refused with a
message that says so, and the trace inside is held to the same size limit as a
trace file (``NBPROFILER_MAX_TRACE_BYTES``).
"""
from __future__ import annotations

import dataclasses
import io
import json
import os
import zipfile
import zlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Mapping, TypeVar

import numpy as np
import pandas as pd

from ..errors import TraceError
from ..options import ProfileOptions
from ..records import LineMarks, LoaderRecord, RunRecord
from ..trace.parser import parse_trace
from ..trace.sources import _too_big, max_trace_bytes
from ..trace.table import DeviceInfo, EventTable
from .rank_summary import RankSummary, RankTraces
from .report import Report

SUFFIX = ".nbprof"
FORMAT = "nbprofiler.report"
FORMAT_VERSION = 1
DOCUMENT = "nbprofiler.json"
_ZIP_MAGIC = b"PK\x03\x04"
# The fields of RunRecord stored as JSON values as they are; the others have codecs below.
_PLAIN_RUN_FIELDS = ("step_source", "error", "cell_source", "cell_filename", "cell_key", "notebook",
                     "sampler_bytes", "cpu_count", "intra_op_threads", "wall_s", "other_cores", "notes")
_LINE_ARRAYS = {"times_ns": np.dtype(np.int64), "lines": np.dtype(np.int32)}


def save_report(report: Report, path: str | os.PathLike[str]) -> Path:
    """Write ``report`` to ``path`` (which must end in ``.nbprof``) and return the path.

    The archive is written beside the target and moved over it only once complete,
    so a Ctrl-C or a full disk mid-save never leaves a truncated file where a good
    one was.
    """
    from .. import __version__

    target = Path(path).expanduser()
    if not target.name.endswith(SUFFIX):
        raise ValueError(f"the file name must end in {SUFFIX} (so that nbprofiler.load reads it as a saved "
                         f"report), got {os.fspath(path)!r}")
    target.parent.mkdir(parents=True, exist_ok=True)  # as --trace and export_chrome_trace do
    partial = target.with_name(target.name + ".partial")
    try:
        with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            document = {"format": FORMAT, "version": FORMAT_VERSION, "nbprofiler": __version__,
                        "report": _Writer(zf).report(report, "")}
            zf.writestr(DOCUMENT, json.dumps(document, indent=1))
        os.replace(partial, target)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return target


def read_report(path: Path) -> Report:
    """The Report saved in ``path``; anything wrong with the file is a one-line ``TraceError``."""
    return _reading(path, lambda reader: reader.top(reader.document()["report"]))


_T = TypeVar("_T")


def _reading(path: Path, read: Callable[["_Reader"], _T]) -> _T:
    """What ``read`` takes from the archive ``path``, anything wrong with it a one-line ``TraceError``."""
    try:
        with zipfile.ZipFile(path) as zf:
            return read(_Reader(zf, path))
    except TraceError:
        raise
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError):
        raise TraceError(path, _unreadable(path)) from None
    except OSError as exc:
        raise TraceError(path, f"cannot be read ({exc.strerror or exc}); check that you may read it") from None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise TraceError(path, f"a malformed saved report ({type(exc).__name__}: {exc}); save the report "
                               "again with Report.save") from None


def _unreadable(path: Path) -> str:
    """A zip that is cut short or damaged, told apart from a file that was never one."""
    with path.open("rb") as fh:
        is_zip = fh.read(len(_ZIP_MAGIC)) == _ZIP_MAGIC
    if is_zip:
        return "truncated or corrupt: the copy or download did not finish, so copy it again"
    return (f"not a report saved by nbprofiler (Report.save writes {SUFFIX} files as zip archives); "
            "load a trace file by its own name, or save the report again")


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
    )
    return doc


def run_from_json(doc: dict[str, Any], line_marks: LineMarks | None = None) -> RunRecord:
    """The RunRecord ``run_to_json`` wrote; ProfileOptions re-validates the options, as for any caller."""
    device = dict(doc["device"])
    if device["compute_capability"] is not None:
        device["compute_capability"] = tuple(device["compute_capability"])
    return RunRecord(
        options=ProfileOptions(**doc["options"]),
        device=DeviceInfo(**device),
        steps=frame_from_json(doc["steps"]),
        loaders=tuple(LoaderRecord(**{**loader, "wait_ms_by_step": {int(s): float(ms) for s, ms in
                                                                    loader["wait_ms_by_step"]}})
                      for loader in doc["loaders"]),
        line_marks=line_marks,
        # A field a file from before it existed lacks keeps the record's default.
        **{name: doc[name] for name in _PLAIN_RUN_FIELDS if name in doc},
    )


class _Writer:
    """Writes a Report's members into the archive and returns its JSON description."""

    def __init__(self, zf: zipfile.ZipFile) -> None:
        self.zf = zf
        self.traces: dict[str, str] = {}  # source path -> member: a distributed load's first rank is its top report

    def report(self, report: Report, prefix: str) -> dict[str, Any]:
        return {
            "trace": self.trace(report, prefix),
            "source_path": report.source_path,
            "load_notes": list(report.load_notes),
            "run": None if report.run is None else self.run(report.run, prefix),
            "ranks": [{"rank": number, "report": self.rank(report, rank, f"ranks/{number}/")}
                      for number, rank in report.ranks.items()],
        }

    def rank(self, report: Report, rank: RankSummary, prefix: str) -> dict[str, Any]:
        """A rank of a distributed load: its trace, read again from where ``report.rank_traces`` says."""
        return {"trace": self.member(rank.source_path, prefix, lambda: report.rank_traces.data(rank)),
                "source_path": rank.source_path, "load_notes": list(rank.load_notes), "run": None, "ranks": []}

    def trace(self, report: Report, prefix: str) -> str | None:
        """The member holding the trace as recorded; None for a run that ended before any active step."""
        if report.run is not None and report.raw_trace is None:
            return None
        if (report.raw_trace is None and report.source_path is not None and report.source_path not in self.traces
                and not Path(report.source_path).is_file()):
            # A trace file's report reads its bytes from the file again, and a report without
            # its trace could not be rebuilt: refuse rather than save half of it.
            raise TraceError(report.source_path, "this report's trace file is gone (moved or deleted), so the "
                                                 "report cannot be saved; load the trace from where it is now")
        return self.member(report.source_path, prefix, report._trace_bytes)

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
            key: self.array(f"{prefix}lines/{key}.npy", getattr(run.line_marks, key)) for key in _LINE_ARRAYS}
        return doc

    def array(self, member: str, values: np.ndarray) -> str:
        """A numeric array as an ``.npy`` member: line marks run to millions, too many for JSON."""
        buffer = io.BytesIO()
        np.save(buffer, values, allow_pickle=False)
        self.zf.writestr(member, buffer.getvalue())
        return member


class _Reader:
    """Reads an archive's members, each held to the trace size limit, back into a Report."""

    def __init__(self, zf: zipfile.ZipFile, path: Path) -> None:
        self.zf = zf
        self.path = path
        self.limit = max_trace_bytes()

    def member(self, name: str) -> bytes:
        """A member's bytes, refused when it decompresses to more than the limit (a lying
        size in the archive is caught by reading at most one byte past it)."""
        try:
            info = self.zf.getinfo(name)
        except KeyError:
            raise TraceError(self.path, f"the saved report names {name!r}, which the archive lacks; save the "
                                        "report again with Report.save") from None
        if info.file_size > self.limit:
            raise TraceError(self.path, _too_big(info.file_size, self.limit, compressed=True))
        with self.zf.open(info) as fh:
            data = fh.read(self.limit + 1)
        if len(data) > self.limit:
            raise TraceError(self.path, _too_big(len(data), self.limit, compressed=True))
        return data

    def document(self) -> dict[str, Any]:
        if DOCUMENT not in self.zf.namelist():
            raise TraceError(self.path, f"a zip archive, but not a report saved by nbprofiler (it holds no "
                                        f"{DOCUMENT}); load a trace file by its own name")
        doc = json.loads(self.member(DOCUMENT))
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise TraceError(self.path, f"{DOCUMENT} inside is not an nbprofiler report's; load a trace file "
                                        "by its own name")
        version = doc.get("version")
        if not isinstance(version, int) or version < 1:
            raise TraceError(self.path, f"a saved report without a valid format version ({version!r}); save the "
                                        "report again with Report.save")
        if version > FORMAT_VERSION:
            raise TraceError(self.path, f"saved by a newer nbprofiler ({doc.get('nbprofiler', 'unknown version')}, "
                                        f"format version {version}); this one reads up to version {FORMAT_VERSION}: "
                                        "upgrade nbprofiler (pip install -U nbprofiler)")
        return doc

    def top(self, doc: dict[str, Any]) -> Report:
        """The saved report with its ranks' summaries, made one rank at a time so that one rank's
        events at most are held beside the report's own; ``rank(n)`` reads a rank's trace again."""
        report = self.report(doc)
        members = {int(r["rank"]): r["report"]["trace"] for r in doc["ranks"]}
        ranks = {}
        for r in doc["ranks"]:
            number, rank = int(r["rank"]), r["report"]
            of = report if rank["trace"] == doc["trace"] else self.report(rank)
            ranks[number] = replace(RankSummary.of(number, of), load_notes=tuple(rank["load_notes"]))
        return replace(report, ranks=ranks, rank_traces=_ArchivedRanks(self.path, members))

    def report(self, doc: dict[str, Any]) -> Report:
        """One report of the archive without its ranks (``top`` adds them)."""
        run = None if doc["run"] is None else self.run(doc["run"])
        trace = None if doc["trace"] is None else self.member(doc["trace"])
        # A live run parses its trace on first use, as it did when it ran (an unreadable trace
        # is then its ``trace_problem`` again); a trace file's is parsed now, as load does.
        parsed = self.table(doc["trace"], trace, doc["source_path"]) if run is None and trace is not None else None
        return Report(parsed=parsed, run=run, raw_trace=trace, source_path=doc["source_path"],
                      load_notes=tuple(doc["load_notes"]))

    def table(self, member: str, trace: bytes, source_path: str | None) -> EventTable:
        """The trace parsed under its original name (the notes quote it), errors naming this file."""
        try:
            return parse_trace(trace, source=source_path or str(self.path))
        except TraceError as exc:
            raise TraceError(self.path, f"its {member}: {exc.problem}") from None

    def run(self, doc: dict[str, Any]) -> RunRecord:
        marks = doc["line_marks"]
        return run_from_json(doc, None if marks is None else self.line_marks(marks))

    def line_marks(self, members: dict[str, str]) -> LineMarks:
        """The marks, checked to be the integer arrays ``cell_lines`` indexes with."""
        arrays = {key: np.load(io.BytesIO(self.member(members[key])), allow_pickle=False) for key in _LINE_ARRAYS}
        for key, dtype in _LINE_ARRAYS.items():
            if arrays[key].dtype != dtype or arrays[key].ndim != 1 or len(arrays[key]) != len(arrays["lines"]):
                raise ValueError(f"line marks {key!r} are not one {dtype} value per mark")
        return LineMarks(**arrays)


@dataclass(frozen=True)
class _ArchivedRanks(RankTraces):
    """A reopened report's ranks read from its archive, since the files they came from may be gone;
    each rank's Report keeps its bytes, as the saved report's own does, so it can be exported."""

    path: Path
    members: Mapping[int, str]

    def data(self, rank: RankSummary) -> bytes:
        return _reading(self.path, lambda reader: reader.member(self.members[rank.rank]))

    def report(self, rank: RankSummary) -> Report:
        return _reading(self.path, lambda reader: reader.report(
            {"trace": self.members[rank.rank], "source_path": rank.source_path, "load_notes": rank.load_notes,
             "run": None}))
