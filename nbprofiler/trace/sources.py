"""Finding and reading trace files: plain or gzipped JSON, or TensorBoard directories.

Everything that touches the file system for traces is here; the parser only
sees bytes. Sizes are checked before anything large is read, so a 2 GB file
is refused up front with a message that says what to do, and what a gzip file
inflates to is counted while it inflates, so a small file that inflates to
gigabytes is refused at the limit.
"""
from __future__ import annotations

import os
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Iterable, Iterator

from ..errors import TraceError
from .parser import START_BYTES, refuse_by_start

# Decompressed JSON larger than this is refused; analysis needs about 3x this in RAM.
DEFAULT_MAX_TRACE_BYTES = 1 << 30
# Decompressed data is made and counted this much at a time (see read_capped).
PIECE_BYTES = 1 << 20
_TRACE_SUFFIXES = (".pt.trace.json", ".pt.trace.json.gz", ".json", ".json.gz")


@dataclass(frozen=True)
class TraceFile:
    path: Path
    data: bytes


def max_trace_bytes() -> int:
    """The size limit, overridable with ``NBPROFILER_MAX_TRACE_BYTES``."""
    raw = os.environ.get("NBPROFILER_MAX_TRACE_BYTES")
    try:
        return int(raw) if raw else DEFAULT_MAX_TRACE_BYTES
    except ValueError:
        return DEFAULT_MAX_TRACE_BYTES


def find_trace_files(path: str | os.PathLike[str]) -> list[Path]:
    """The trace files ``path`` names: itself, or those a directory holds (recursively)."""
    if os.fspath(path) == "":  # Path("") is the current folder, which would be searched recursively
        raise TraceError(None, "the path is empty (''); give a trace file or a directory of trace files")
    p = Path(path).expanduser()
    if not p.exists():
        raise TraceError(p, f"no such file or directory (a relative path starts in {Path.cwd()})")
    if p.is_file():
        return [p]
    if not p.is_dir():  # a FIFO or a device: reading it could block forever
        raise TraceError(p, "not a regular file or a directory; give a trace file or a directory of trace files")
    found = sorted(f for f in p.rglob("*") if f.is_file() and f.name.endswith(_TRACE_SUFFIXES))
    preferred = [f for f in found if ".pt.trace.json" in f.name]
    files = preferred or found
    if not files:
        raise TraceError(p, "the directory holds no trace files (*.pt.trace.json or *.json, optionally .gz)")
    return files


def read_trace_file(path: Path, limit: int | None = None) -> TraceFile:
    """Read and, if gzipped, decompress one trace, refusing anything over ``limit`` bytes."""
    limit = max_trace_bytes() if limit is None else limit
    try:
        size = path.stat().st_size
        # Unbuffered: a buffered reader's read() after a peek joins its buffer to the rest,
        # holding the whole file twice for a moment (2x its size at the load's peak).
        with path.open("rb", buffering=0) as fh:
            head = fh.read(2)
            fh.seek(0)
            if head == b"\x1f\x8b":
                data = read_capped(_gunzipped(fh, path), limit, path, too_big(limit), trace=True)
            else:
                if size > limit:
                    raise TraceError(path, too_big(limit, size))
                data = fh.read()
    except OSError as exc:
        raise TraceError(path, f"cannot be read ({exc.strerror or exc}); check that you may read it") from None
    return TraceFile(path, data)


def read_capped(pieces: Iterable[bytes], limit: int, path: str | os.PathLike[str], refusal: str,
                trace: bool = False) -> bytes:
    """The decompressed ``pieces`` joined, refused with ``refusal`` as soon as they pass ``limit``
    bytes: what a file inflates to is counted while it inflates, so a small file that would
    inflate to gigabytes costs the limit at most, and only the time to inflate that much.

    A ``trace`` is checked by its first bytes as soon as it has more than ``START_BYTES``
    (``parser.refuse_by_start``), so that a gzip of a gigabyte of blanks is refused after a
    megabyte rather than once it is all read.
    """
    chunks: list[bytes] = []
    total = 0
    unchecked = trace
    for piece in pieces:
        total += len(piece)
        if total > limit:
            raise TraceError(path, refusal)
        chunks.append(piece)
        if unchecked and total > START_BYTES:
            refuse_by_start(b"".join(chunks)[:START_BYTES], str(path))
            unchecked = False
    return b"".join(chunks)


def _gunzipped(fh: BinaryIO, path: Path) -> Iterator[bytes]:
    """Every gzip member decompressed in turn, as ``gzip`` and torch read them, in pieces of at
    most ``PIECE_BYTES`` (so that ``read_capped`` counts them before more is made).

    A file of several members (``.gz`` files concatenated, or a writer that
    flushed a member at a time) is one stream: stopping after the first member
    would cut the JSON in two and call a whole file truncated. Zero bytes after
    the last member (padding some copy tools add) are ignored, as gzip does.
    """
    inflater = zlib.decompressobj(wbits=47)  # gzip or zlib header, auto-detected
    try:
        while block := fh.read(1 << 20):
            while block:
                if inflater.eof:  # the bytes past a member's end start the next one
                    if not block.strip(b"\0"):
                        break
                    inflater = zlib.decompressobj(wbits=47)
                yield inflater.decompress(block, PIECE_BYTES)
                # What the piece's size left unread of this block, else the next member's start.
                block = inflater.unconsumed_tail or inflater.unused_data
        yield inflater.flush()
    except zlib.error as exc:
        raise TraceError(path, f"corrupt gzip data ({exc}); copy or download the file again") from None
    if not inflater.eof:
        raise TraceError(path, "truncated gzip file (the download or copy did not finish)")


def too_big(limit: int, size: int | None = None) -> str:
    """Why a trace over ``limit`` is refused: its ``size`` on disk, or (None) what it decompresses to."""
    what = "decompresses to more than" if size is None else f"is {_size(size)}, over"
    return (
        f"trace {what} the {_size(limit)} limit; profile fewer steps (e.g. --active 2) "
        "or raise NBPROFILER_MAX_TRACE_BYTES"
    )


def _size(n: int) -> str:
    """GB for the default limit's scale, MB below it (a small limit must not read "0.0 GB")."""
    return f"{n / 1e9:.1f} GB" if n >= 1e9 else f"{n / 1e6:.1f} MB"
