"""The reading side of ``nbprofiler.load`` for ``.nbprof`` files (the format: ``saved.py``).

The file may come from anyone: each member is held to its size limit while it inflates, the
document is decoded straight into the types the writer writes, and no path named inside it is
ever read (``source_path`` is a label; a trace is the archive's member or nothing).
"""
from __future__ import annotations

import io
import os
import zipfile
import zlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Mapping, Sequence, TypeVar

import msgspec
import numpy as np

from ..errors import TraceError
from ..records import LineMarks, RunRecord
from ..trace.parser import parse_trace
from ..trace.sources import PIECE_BYTES, max_trace_bytes, read_capped, too_big
from ..trace.table import EventTable
from .origin import Kind, Origin
from .rank_summary import RankSummary
from .report import RankTraces, Report
from .saved import (DOCUMENT, FORMAT, FORMAT_VERSION, LINE_ARRAYS, MAX_DOCUMENT_BYTES, MAX_MEMBERS, SUFFIX,
                    LineMarksJSON, RunJSON, run_record)

_Scalar = str | int | float | bool | None
_ZIP_MAGIC = b"PK\x03\x04"
_ENCRYPTED = 0x1  # a zip entry's flag bit: zipfile would ask for a password
_NPY_HEADERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
_END_RECORD = b"PK\x05\x06"  # the zip's end of central directory record: its entry count at offset 10
_END_RECORD_SPAN = 22 + 0xFFFF  # the record and the longest comment after it
_DETAIL_CHARS = 200  # of an error's text quoted in a message


class _Envelope(msgspec.Struct):
    """The document's outer object; its report is decoded once its format and version are known."""

    format: _Scalar = None
    version: _Scalar = None
    nbprofiler: _Scalar = "unknown version"
    report: msgspec.Raw = msgspec.Raw(b"null")


class _RankReportJSON(msgspec.Struct):
    """A rank's REPORT: its trace member, the path it was read from (a label) and its notes."""

    trace: str
    source_path: str | None
    load_notes: list[str]


class _RankJSON(msgspec.Struct):
    """One rank of a distributed load: its number and its REPORT."""

    rank: int
    report: _RankReportJSON


class _ReportJSON(msgspec.Struct):
    """The REPORT of the module's docstring."""

    trace: str | None
    source_path: str | None
    load_notes: list[str]
    run: msgspec.Raw  # a RUN (``RunJSON``) or null
    ranks: list[_RankJSON]


_envelope_decoder = msgspec.json.Decoder(_Envelope)
_report_decoder = msgspec.json.Decoder(_ReportJSON)
_run_decoder = msgspec.json.Decoder(RunJSON | None)


def read_report(path: Path) -> Report:
    """The Report saved in ``path``; anything wrong with the file is a one-line ``TraceError``.

    The file may come from anyone: each member is held to its size limit while it
    inflates, every value of the document is checked to be of the type the writer
    writes, and no path named inside it is ever read (``source_path`` is a label).
    """
    return _reading(path, lambda reader: reader.top(reader.document()))


_T = TypeVar("_T")


def _reading(path: Path, read: Callable[["_Reader"], _T]) -> _T:
    """What ``read`` takes from the archive ``path``, anything wrong with it a one-line ``TraceError``."""
    try:
        _refuse_many_members(path)
        with zipfile.ZipFile(path) as zf:
            return read(_Reader(zf, path))
    except TraceError:
        raise
    except (zipfile.BadZipFile, zlib.error, EOFError):
        raise TraceError(path, _unreadable(path)) from None
    except NotImplementedError as exc:  # a compression method or encryption zipfile does not read
        raise TraceError(path, f"a zip archive that nbprofiler cannot read ({_one_line(exc)}), which Report.save "
                               "never writes; not a report nbprofiler saved") from None
    except OSError as exc:
        raise TraceError(path, f"cannot be read ({exc.strerror or exc}); check that you may read it") from None
    except RecursionError:
        raise TraceError(path, "a malformed saved report (its JSON is nested too deeply to be one nbprofiler "
                               "wrote); save the report again with Report.save") from None
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:  # msgspec's errors included
        raise TraceError(path, f"a malformed saved report ({type(exc).__name__}: {_one_line(exc)}); save the "
                               "report again with Report.save") from None


def _refuse_many_members(path: Path) -> None:
    """Refuse an archive listing more than ``MAX_MEMBERS`` entries, from its end record alone.
    A zip64 archive (its 16-bit count reads 0xFFFF) lists at least 65,535: refused too. An
    archive with no end record is left to ``zipfile``, which says it is damaged."""
    with path.open("rb") as fh:
        size = fh.seek(0, os.SEEK_END)
        fh.seek(max(0, size - _END_RECORD_SPAN))
        tail = fh.read()
    at = tail.rfind(_END_RECORD)
    if at < 0 or len(tail) < at + 12:
        return
    entries = int.from_bytes(tail[at + 10:at + 12], "little")
    if entries > MAX_MEMBERS:
        listed = "at least 65,535" if entries == 0xFFFF else f"{entries:,}"
        raise TraceError(path, f"a zip archive listing {listed} entries, more than the {MAX_MEMBERS:,} of any report "
                               "Report.save writes; not a report nbprofiler saved")


def _unreadable(path: Path) -> str:
    """A zip that is cut short or damaged, told apart from a file that was never one."""
    with path.open("rb") as fh:
        is_zip = fh.read(len(_ZIP_MAGIC)) == _ZIP_MAGIC
    if is_zip:
        return "truncated or corrupt: the copy or download did not finish, so copy it again"
    return (f"not a report saved by nbprofiler (Report.save writes {SUFFIX} files as zip archives); "
            "load a trace file by its own name, or save the report again")


def _one_line(text: object, chars: int = _DETAIL_CHARS) -> str:
    """``text`` (an error, a value from the file) on one line and at most ``chars`` long,
    whatever the file put in it, so that a message stays one line."""
    line = " ".join(str(text).split())
    return line if len(line) <= chars else line[:chars] + "..."


def _quoted(value: object) -> str:
    """A name or value from the file as Python writes it (quotes and escapes), on one line and short."""
    return _one_line(repr(value), 80)


class _Reader:
    """Reads an archive's members, each held to its size limit, back into a Report."""

    def __init__(self, zf: zipfile.ZipFile, path: Path) -> None:
        self.zf = zf
        self.path = path
        self.limit = max_trace_bytes()

    def member(self, name: str, limit: int | None = None, trace: bool = False) -> bytes:
        """A member's bytes, refused when it inflates to more than ``limit`` (the trace limit by
        default): at once when the archive says so, else as soon as the count while inflating
        passes it. A ``trace`` is also refused early by its start (``sources.read_capped``)."""
        limit = self.limit if limit is None else limit
        try:
            info = self.zf.getinfo(name)
        except KeyError:
            raise TraceError(self.path, f"the saved report names {_quoted(name)}, which the archive lacks; save "
                                        "the report again with Report.save") from None
        refusal = too_big(limit) if trace else (f"inflates to more than {limit >> 20} MiB, more than Report.save "
                                                 "writes there, so the file is no report nbprofiler saved")
        if info.flag_bits & _ENCRYPTED:
            raise TraceError(self.path, f"its {_quoted(name)} is encrypted, which Report.save never does; not a report "
                                        "nbprofiler saved")
        try:
            if info.file_size > limit:
                raise TraceError(self.path, refusal)
            with self.zf.open(info) as fh:
                return read_capped(iter(lambda: fh.read(PIECE_BYTES), b""), limit, self.path, refusal, trace=trace)
        except TraceError as exc:
            raise TraceError(self.path, f"its {_quoted(name)}: {exc.problem}") from None

    def document(self) -> _ReportJSON:
        """The saved report's description, once its format and version say this nbprofiler reads it."""
        if DOCUMENT not in self.zf.namelist():
            raise TraceError(self.path, f"a zip archive, but not a report saved by nbprofiler (it holds no "
                                        f"{DOCUMENT}); load a trace file by its own name")
        try:
            envelope = _envelope_decoder.decode(self.member(DOCUMENT, MAX_DOCUMENT_BYTES))
        except msgspec.ValidationError:
            envelope = _Envelope()  # not an object, or one whose format is no string: not nbprofiler's
        if envelope.format != FORMAT:
            raise TraceError(self.path, f"{DOCUMENT} inside is not an nbprofiler report's; load a trace file "
                                        "by its own name")
        version = envelope.version
        if type(version) is not int or version < 1:
            raise TraceError(self.path, f"a saved report without a valid format version ({_quoted(version)}); save "
                                        "the report again with Report.save")
        if version > FORMAT_VERSION:
            raise TraceError(self.path, f"saved by a newer nbprofiler ({_one_line(envelope.nbprofiler, 40)}, format "
                                        f"version {_one_line(version, 20)}); this one reads up to version "
                                        f"{FORMAT_VERSION}: upgrade nbprofiler (pip install -U nbprofiler)")
        return _report_decoder.decode(envelope.report)

    def top(self, doc: _ReportJSON) -> Report:
        """The saved report with its ranks' summaries, made one rank at a time so that one rank's
        events at most are held beside the report's own (each trace member parsed once, however
        many ranks name it); ``rank(n)`` reads a rank's trace again."""
        run = _run_decoder.decode(doc.run)
        if run is None and doc.trace is None:
            raise TraceError(self.path, "a saved report with neither a trace nor a run, so nothing to show (Report."
                                        "save always writes one); save the report again with Report.save")
        report = self.report(doc.trace, doc.source_path, doc.load_notes,
                             None if run is None else self.run(run))
        by_member = {doc.trace: report}
        ranks = {}
        for r in doc.ranks:
            rank = r.report
            if rank.trace not in by_member:
                by_member[rank.trace] = self.report(rank.trace, rank.source_path, rank.load_notes, None)
            ranks[r.rank] = replace(RankSummary.of(r.rank, by_member[rank.trace]), source_path=str(rank.source_path),
                                    load_notes=tuple(rank.load_notes))
        members = {r.rank: r.report.trace for r in doc.ranks}
        return replace(report, ranks=ranks, rank_traces=_ArchivedRanks(self.path, members))

    def report(self, member: str | None, source_path: str | None, load_notes: Sequence[str],
               run: RunRecord | None) -> Report:
        """One report of the archive without its ranks (``top`` adds them). ``source_path`` is
        the sender's path, kept as a label: the trace is the archive's member, never that file."""
        trace = parsed = None
        if member is not None:
            trace = self.member(member, trace=True)
            # A live run parses its trace on first use, as it did when it ran (an unreadable trace
            # is then its ``trace_problem`` again); a trace file's is parsed now, as load does.
            parsed = self.table(member, trace, source_path) if run is None else None
        return Report(parsed=parsed, origin=Origin(Kind.SAVED_FILE, run=run, raw_trace=trace, source_path=source_path),
                      load_notes=tuple(load_notes))

    def table(self, member: str, trace: bytes, source_path: str | None) -> EventTable:
        """The trace parsed under its original name (the notes quote it), errors naming this file."""
        try:
            return parse_trace(trace, source=source_path or str(self.path))
        except TraceError as exc:
            raise TraceError(self.path, f"its {_quoted(member)}: {exc.problem}") from None

    def run(self, run: msgspec.Struct) -> RunRecord:
        """The RunRecord of a checked run (``RunJSON``), with its line marks read from their members."""
        marks = getattr(run, "line_marks", None)
        return run_record(run, None if not marks else self.line_marks(marks))

    def line_marks(self, members: LineMarksJSON) -> LineMarks:
        """The marks, checked to be the integer arrays ``cell_lines`` indexes with."""
        arrays = {key: self.array(getattr(members, key), dtype) for key, dtype in LINE_ARRAYS.items()}
        if len(arrays["times_ns"]) != len(arrays["lines"]):
            raise ValueError("the line marks' times and lines differ in length")
        return LineMarks(**arrays)

    def array(self, member: str, dtype: np.dtype) -> np.ndarray:
        """A one-dimensional ``.npy`` member of ``dtype``, its declared shape checked against its
        bytes before anything is allocated (``np.load`` allocates what the header says)."""
        data = self.member(member)
        fh = io.BytesIO(data)
        version = np.lib.format.read_magic(fh)
        read_header = _NPY_HEADERS.get(version)
        if read_header is None:
            raise ValueError(f"{_quoted(member)} is an .npy file of version {version}, which Report.save never "
                             "writes")
        shape, _, found = read_header(fh)
        if found != dtype or len(shape) != 1 or shape[0] * dtype.itemsize != len(data) - fh.tell():
            raise ValueError(f"{_quoted(member)} is not one {dtype} value per line mark")
        return np.frombuffer(data, dtype=dtype, count=shape[0], offset=fh.tell())


@dataclass(frozen=True)
class _ArchivedRanks(RankTraces):
    """A reopened report's ranks read from its archive, since the files they came from may be gone
    (and a path a received file names is never read); each rank's Report keeps its bytes, as the
    saved report's own does, so it can be exported."""

    path: Path
    members: Mapping[int, str]

    def data(self, rank: RankSummary) -> bytes:
        return _reading(self.path, lambda reader: reader.member(self.members[rank.rank], trace=True))

    def report(self, rank: RankSummary) -> Report:
        return _reading(self.path, lambda reader: reader.report(self.members[rank.rank], rank.source_path,
                                                                rank.load_notes, None))
