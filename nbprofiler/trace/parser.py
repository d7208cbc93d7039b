"""Chrome-trace bytes -> ``EventTable``. The only trace parser in nbprofiler.

Live runs export their trace and come through here too, so a figure never
depends on where the trace came from.

How it stays fast and small:

- Events are decoded by phase (``schema.PhasedEvent``): the phases kept are
  typed-decoded into structs of only the fields nbprofiler reads, and the
  others (a quarter of a torch trace is flow arrows) are skipped unread.
- A trace of up to ``ONE_PASS_MAX_EVENTS`` is decoded in one pass. A larger one
  is decoded in chunks of about ``CHUNK_BYTES``: its event list is read as one
  raw slice and cut where an event starts a line, so that only one chunk of
  Python objects is alive at once. Where the list cannot be cut so (a trace
  written on one line, or a cut that does not decode), its events are listed as
  raw slices and decoded ``BATCH`` at a time, each batch's slices let go once
  decoded. Loading the generated 1M-event trace (201 MB) rises 1.83x its size
  above the start, the file's bytes and the columns included; the shared 35 MB
  V100 trace, in one pass, 2.2x its size above the JSON already read.
- ``columns.ColumnBuilder`` writes each batch into preallocated columns,
  reading each arg only on the kinds of event that carry it.
- The cyclic garbage collector is paused meanwhile: it would otherwise
  re-traverse every live event struct many times per batch.

A file of more than ``START_BYTES`` is first checked by its start (``refuse_by_start``):
one that opens with a megabyte of blanks, or with no JSON at all, is refused at once, and
readers that decompress call the same check as soon as they have that megabyte.

A batch that fails validation is retried event by event and the malformed
events are dropped and counted, never allowed to crash the load; a trace that
fails the one-pass or chunked decode goes the batched way, which also mends
names with unescaped quotes and says what is wrong with a file it refuses.
"""
from __future__ import annotations

import contextlib
import gc
import re
from collections.abc import Iterator, Sequence
from typing import cast

import msgspec

from ..errors import TraceError
from .columns import ColumnBuilder, as_int, as_str
from .schema import DecodedEvent, Event, EventsUnread, Header, PhasedEvent, WholeTrace
from .table import DeviceInfo, EventTable, TraceMeta

BATCH = 20_000
# Traces of up to about this many events are decoded in one pass (the other ways first scan the
# bytes for the event list, a second pass); larger ones in chunks, to keep memory low: every
# event decoded at once holds about half a kilobyte until the columns are built.
ONE_PASS_MAX_EVENTS = 100_000
_SAMPLE_BYTES = 2 * 1024 * 1024

# A file larger than this is first checked by its first this many bytes (see refuse_by_start).
START_BYTES = 1 << 20
_BOM = b"\xef\xbb\xbf"  # a UTF-8 byte-order mark, as some editors save JSON
_DECODE_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, RecursionError, UnicodeDecodeError, OverflowError,
                  ValueError)
_NON_BLANK = re.compile(rb"\S")
_LOAD_TORCH_TRACE = "load a trace that prof.export_chrome_trace or tensorboard_trace_handler wrote"
_PROTOBUF_TRACE = ("a Perfetto protobuf trace, not a torch.profiler JSON trace; export the JSON with "
                   "prof.export_chrome_trace(path) or tensorboard_trace_handler")
# Other profilers' Chrome-format traces, told apart by what only they write.
_CHROMIUM_CATEGORIES = frozenset({"toplevel", "blink", "v8", "cc", "viz", "devtools.timeline", "loading",
                                  "navigation", "renderer.scheduler", "sequence_manager", "ipc", "mojom", "benchmark"})
_CHROMIUM_PROCESSES = frozenset({"Browser", "Renderer", "GPU Process", "Utility"})
_XLA_PROCESS_PREFIXES = ("/host:", "/device:", "/job:")  # TensorFlow's and JAX's profiler: /host:CPU, /device:GPU:0

_header_decoder = msgspec.json.Decoder(Header)
_whole_decoder = msgspec.json.Decoder(WholeTrace)
_phased_batch_decoder = msgspec.json.Decoder(list[PhasedEvent])
_phased_decoder = msgspec.json.Decoder(PhasedEvent)
_event_decoder = msgspec.json.Decoder(Event)
_event_batch_decoder = msgspec.json.Decoder(list[Event])
_FREED = msgspec.Raw()  # stands in for each event's raw JSON once its batch is decoded
_events_unread_decoder = msgspec.json.Decoder(EventsUnread)
# A large trace is decoded in chunks of about this many bytes, cut where an event starts a line.
CHUNK_BYTES = 4 * 1024 * 1024
# The start of an event on a new line, after the comma that ends the one before. JSON strings hold
# no raw newline, so this is never inside one; and a cut inside an event (in a list of objects of
# its args) leaves a chunk that is not valid JSON: a chunk that decodes was cut between events.
_EVENT_AT_LINE_START = re.compile(rb",[ \t\r]*\n[ \t\r\n]*\{")


def parse_trace(data: bytes | memoryview, source: str) -> EventTable:
    """Parse one torch.profiler Chrome trace; raise ``TraceError`` naming ``source``."""
    if bytes(data[:3]) == _BOM:
        data = memoryview(data)[3:]
    if len(data) > START_BYTES:
        refuse_by_start(data[:START_BYTES], source)
    if _NON_BLANK.search(data) is None:  # stops at the first byte of any real trace, however much whitespace leads
        raise TraceError(source, "the file is empty; export the trace again (prof.export_chrome_trace or --trace)")
    with _gc_paused():  # until every decoded event is freed again
        estimate = _about_how_many_events(data)
        built = _build_in_one_pass(data) if estimate <= ONE_PASS_MAX_EVENTS else _build_from_chunks(data, estimate)
        header: Header | WholeTrace | EventsUnread
        if built is not None:
            (header, builder), repaired = built, 0
        else:
            listed, data, repaired = _decode_header_mending_names(data, source)
            builder, header = _build_from_batches(listed, source), listed
    if builder.count == 0:
        raise TraceError(source, "the trace holds no profiler events (was the profiler stopped before any step?)")
    # torch writes schemaVersion and deviceProperties; a trace without them (cut by hand, or very old) is still
    # torch's if its events are. Chromium's, TensorFlow's and JAX's traces have none of these.
    if header.schemaVersion is None and header.deviceProperties is None and not builder.saw_torch_events():
        raise TraceError(source, _not_torch(data))
    meta = TraceMeta(
        source=source,
        schema="2021" if builder.old_schema else "current",
        devices=_devices(header, saw_hip=any(n.startswith("hip") for n in builder.name_index)),
        rank=as_int(header.distributedInfo.rank) if header.distributedInfo else None,
        world_size=as_int(header.distributedInfo.world_size) if header.distributedInfo else None,
        backend=as_str(header.distributedInfo.backend) if header.distributedInfo else None,
        thread_names=tuple(sorted(builder.thread_names.items())),
        skipped_events=builder.skipped,
        repaired_names=repaired,
        # An exact integer: ~1.7e18 ns would lose hundreds of ns through a float.
        base_time_ns=header.baseTimeNanoseconds if type(header.baseTimeNanoseconds) is int
        else (as_int(header.baseTimeNanoseconds) or 0),
    )
    return builder.table(meta)


def refuse_by_start(start: bytes | memoryview, source: str) -> None:
    """Refuse a file of more than ``START_BYTES`` whose first ``START_BYTES`` (``start``) already
    show it is no trace: only whitespace, or not JSON from its first byte (torch writes an
    object). Readers call it as soon as they have inflated that much, so a gzip of 900 MB of
    blanks is refused after a megabyte instead of once it is all read and scanned."""
    if bytes(start[:3]) == _BOM:
        start = memoryview(start)[3:]
    first = _NON_BLANK.search(start)
    if first is None:
        raise TraceError(source, f"not a trace: its first {START_BYTES >> 20} MB hold only whitespace (a trace "
                                 "starts with '{'); export the trace again (prof.export_chrome_trace or --trace)")
    opening = bytes(start[first.start():first.start() + 12])
    if opening[:1] not in (b"{", b"["):
        if _is_protobuf_trace(start):
            raise TraceError(source, _PROTOBUF_TRACE)
        raise TraceError(source, f"not JSON: it starts with {opening!r}, where a trace starts with '{{'; "
                                 f"{_LOAD_TORCH_TRACE}")


def _about_how_many_events(data: bytes | memoryview) -> float:
    """The events in ``data``, estimated from the ``"ph"`` keys in 2 MB of its middle (past any
    long header), or counted where it is smaller: a trace's bytes per event vary fivefold."""
    if len(data) <= _SAMPLE_BYTES:
        return bytes(data).count(b'"ph"')
    start = (len(data) - _SAMPLE_BYTES) // 2
    return bytes(data[start:start + _SAMPLE_BYTES]).count(b'"ph"') * len(data) / _SAMPLE_BYTES


def _build_in_one_pass(data: bytes | memoryview) -> tuple[WholeTrace, ColumnBuilder] | None:
    """The columns of a trace with every event decoded in one pass, or None where that decode
    fails: bad JSON, an event that is malformed or of a phase outside the format, or no event
    list. The batched path then decodes it again, and drops, mends or refuses what it must."""
    try:
        whole = _whole_decoder.decode(data)
    except _DECODE_ERRORS:
        return None
    if whole.traceEvents is None:
        return None
    events = cast("list[DecodedEvent]", whole.traceEvents)
    whole.traceEvents = None
    builder = ColumnBuilder(capacity=len(events))
    _add_in_batches(builder, events)
    return whole, builder


def _add_in_batches(builder: ColumnBuilder, events: list[DecodedEvent]) -> None:
    """``BATCH`` events at a time, so that each column's temporaries stay small."""
    for start in range(0, len(events), BATCH):
        builder.add(events[start:start + BATCH])


def _build_from_chunks(data: bytes | memoryview, estimate: float) -> tuple[EventsUnread, ColumnBuilder] | None:
    """The columns of a large trace decoded a chunk at a time: its event list, read as one raw
    slice, is cut at line starts into chunks of about ``CHUNK_BYTES``, each decoded whole, so
    that no object per event is made first (a batched decode's list of raw slices, which its
    memory keeps). None where the list cannot be cut so, or a chunk does not decode, or holds
    more events than estimated: the batched path then reads the trace."""
    try:
        header = _events_unread_decoder.decode(data)
    except _DECODE_ERRORS:
        return None
    events = memoryview(header.traceEvents)
    header.traceEvents = _FREED
    end = len(events) - 1  # the closing bracket
    if end < 1 or events[0] != ord("[") or events[end] != ord("]"):
        return None
    # Rows past the last one written are never touched: a generous capacity costs no memory.
    builder = ColumnBuilder(capacity=int(2 * estimate) + BATCH)
    capacity = len(builder.columns["kind"])
    start = 1
    while start < end:
        cut = _EVENT_AT_LINE_START.search(events, start + CHUNK_BYTES, end) if start + CHUNK_BYTES < end else None
        if cut is None and end - start > 2 * CHUNK_BYTES:  # written without line breaks: no chunk this size
            return None
        stop = end if cut is None else cut.start()
        try:
            chunk = _phased_batch_decoder.decode(b"".join((b"[", events[start:stop], b"]")))
        except _DECODE_ERRORS:
            return None
        if builder.count + len(chunk) > capacity:
            return None
        _add_in_batches(builder, cast("list[DecodedEvent]", chunk))
        start = end if cut is None else cut.start() + 1  # past the comma
    return header, builder


def _decode_header_mending_names(data: bytes | memoryview, source: str) -> tuple[Header, bytes | memoryview, int]:
    """The header with its events undecoded, the bytes it was read from, and how many
    name lines were mended to read it."""
    try:
        return _decode_header(data, source), data, 0
    except TraceError:
        # torch's exporter writes names as they are, so a record_function name with a
        # double quote makes invalid JSON. Mend such name lines once, and only then.
        mended, repaired = _escape_quotes_in_names(data)
        if not repaired:
            raise
        return _decode_header(mended, source), mended, repaired


def _build_from_batches(header: Header, source: str) -> ColumnBuilder:
    """The columns of a trace decoded ``BATCH`` events at a time, so that only one batch of
    Python objects is alive at once; each batch's raw slices are let go once decoded."""
    raws = header.traceEvents
    if raws is None:
        raise TraceError(source, "no 'traceEvents' list: not a Chrome trace from torch.profiler; load a file that "
                                 "prof.export_chrome_trace or tensorboard_trace_handler wrote")
    header.traceEvents = None
    builder = ColumnBuilder(capacity=len(raws))
    for start in range(0, len(raws), BATCH):
        stop = min(start + BATCH, len(raws))
        builder.add(_decode_batch(raws[start:stop]))
        raws[start:stop] = [_FREED] * (stop - start)
    return builder


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while events are decoded and read.

    Every decoded event is a tracked object, so each batch triggers collections
    that traverse all the batch's events again: more than half the decode time.
    Decoding creates no reference cycles, so reference counting frees everything
    the collector would have. The pause lasts until the events are freed: resumed
    while they live, the collector traverses them all once more at its next run.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


# A name line as torch writes it: `"name": "<anything>",` alone on its line.
_NAME_LINE = re.compile(rb'^(\s*"name": ")(.*)(",?\r?)$', re.MULTILINE)
_BARE_QUOTE = re.compile(rb'(?<!\\)"')


def _escape_quotes_in_names(data: bytes | memoryview) -> tuple[bytes, int]:
    """Escape unescaped double quotes inside name lines; returns the bytes and how many lines changed."""
    changed = 0

    def mend(match: re.Match[bytes]) -> bytes:
        nonlocal changed
        inner = match.group(2)
        fixed = _BARE_QUOTE.sub(rb'\\"', inner)
        if fixed != inner:
            changed += 1
        return match.group(1) + fixed + match.group(3)

    return _NAME_LINE.sub(mend, bytes(data)), changed


def _decode_header(data: bytes | memoryview, source: str) -> Header:
    try:
        return _header_decoder.decode(data)
    except msgspec.ValidationError as exc:
        if bytes(data[:64]).lstrip().startswith(b"["):
            raise TraceError(source, "a JSON list, not a torch.profiler trace object with 'traceEvents'; "
                                     "load a file that prof.export_chrome_trace wrote") from None
        raise TraceError(source, f"not a torch.profiler trace ({exc}); "
                                 "load a file that prof.export_chrome_trace wrote") from None
    except RecursionError:
        raise TraceError(source, "JSON nested too deeply to be a profiler trace; "
                                 "load a trace torch.profiler wrote") from None
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        if _is_protobuf_trace(data):
            raise TraceError(source, _PROTOBUF_TRACE) from None
        raise TraceError(source, f"not valid JSON, or truncated ({exc}); copy or export the trace again") from None


_CONTROL_BYTE = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]")


def _is_protobuf_trace(data: bytes | memoryview) -> bool:
    """Whether ``data`` opens as a Perfetto ``Trace`` message: ``repeated TracePacket packet = 1``.

    Each packet is the tag byte 0x0a, a varint length and that many bytes, so the
    packets in the first 4 KB must chain exactly; and JSON text never holds the raw
    control bytes that tags and varints do (a pretty-printed JSON file also starts
    lines with 0x0a, so the framing alone is not proof).
    """
    head = bytes(data[:4096])
    if not _CONTROL_BYTE.search(head):
        return False
    pos = 0
    while pos < len(head):
        if head[pos] != 0x0A:
            return False
        length, pos = _varint(head, pos + 1)
        if not length or pos + length > len(data):
            return False
        pos += length
    return True


def _varint(buf: bytes, pos: int) -> tuple[int | None, int]:
    """The protobuf varint at ``pos`` and the position after it; None when it runs off ``buf``."""
    value = shift = 0
    while pos < len(buf) and shift < 64:
        byte = buf[pos]
        value |= (byte & 0x7F) << shift
        pos += 1
        if byte < 0x80:
            return value, pos
        shift += 7
    return None, pos


def _not_torch(data: bytes | memoryview) -> str:
    """Why a Chrome-format trace with events, but no torch marker, is refused: whose it looks like.

    Only runs on the way to refusing a file, so it may decode the events a second time.
    """
    categories: set[str] = set()
    processes: set[str] = set()
    raws = _header_decoder.decode(data).traceEvents or []
    for start in range(0, len(raws), BATCH):
        for e in _decode_batch(raws[start:start + BATCH], by_phase=False):
            if e is None:
                continue
            if isinstance(e.cat, str):
                categories.update(e.cat.split(","))
            if e.ph == "M" and e.name == "process_name" and e.args is not None and isinstance(e.args.name, str):
                processes.add(e.args.name)
    xla = sorted(p for p in processes if p.startswith(_XLA_PROCESS_PREFIXES))
    if xla:
        return (f"a TensorFlow or JAX profiler trace (processes {', '.join(xla[:3])}), not a torch.profiler "
                f"trace; {_LOAD_TORCH_TRACE}")
    chromium_categories = sorted(categories & _CHROMIUM_CATEGORIES)
    chromium_processes = sorted(processes & _CHROMIUM_PROCESSES)
    if chromium_categories or chromium_processes:
        seen = (f"categories {', '.join(chromium_categories[:3])}" if chromium_categories
                else f"processes {', '.join(chromium_processes)}")
        return f"a Chromium browser trace ({seen}), not a torch.profiler trace; {_LOAD_TORCH_TRACE}"
    return ("not a torch.profiler trace (no schemaVersion, no torch event categories such as cpu_op or kernel, "
            f"no ProfilerStep ranges); {_LOAD_TORCH_TRACE}")


def _decode_batch(raws: Sequence[msgspec.Raw], by_phase: bool = True) -> Sequence[DecodedEvent | None]:
    """The batch's events, each decoded by its phase (``by_phase``: events of other phases
    come without fields) or each whole. Where the whole batch does not decode, it is
    decoded event by event: None for a malformed event, and an event of a phase outside
    the format read whole (then dropped as not kept)."""
    try:
        return (_phased_batch_decoder if by_phase else _event_batch_decoder).decode(b"[" + b",".join(raws) + b"]")
    except _DECODE_ERRORS:
        return [_decode_event(raw) if by_phase else _decode_whole_event(raw) for raw in raws]


def _decode_event(raw: msgspec.Raw) -> DecodedEvent | None:
    try:
        return _phased_decoder.decode(raw)
    except _DECODE_ERRORS:
        return _decode_whole_event(raw)  # an unknown or missing phase decodes whole; else it is malformed


def _decode_whole_event(raw: msgspec.Raw) -> DecodedEvent | None:
    try:
        return _event_decoder.decode(raw)
    except _DECODE_ERRORS:
        return None  # counted as skipped by the builder


def _devices(header: Header | WholeTrace | EventsUnread, saw_hip: bool) -> tuple[DeviceInfo, ...]:
    out: list[DeviceInfo] = []
    for i, p in enumerate(header.deviceProperties or ()):
        name = as_str(p.name) or f"device {i}"
        major, minor = as_int(p.computeMajor), as_int(p.computeMinor)
        rocm = saw_hip or "AMD" in name or "Radeon" in name or "Instinct" in name
        device_id = as_int(p.id)
        out.append(
            DeviceInfo(
                index=i if device_id is None else device_id,
                name=name,
                kind="rocm" if rocm else "cuda",
                total_memory_bytes=as_int(p.totalGlobalMem),
                compute_capability=None if major is None or minor is None else (major, minor),
                sm_count=as_int(p.numSms),
            )
        )
    return tuple(out)
