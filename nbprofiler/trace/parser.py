"""Chrome-trace bytes -> ``EventTable``. The only trace parser in nbprofiler.

Live runs export their trace and come through here too, so a figure never
depends on where the trace came from.

How it stays fast and small: the header is decoded with ``traceEvents`` as a
list of ``msgspec.Raw`` slices (no objects built per event), then events are
typed-decoded in batches of ``BATCH`` into ``schema.Event`` structs and written
into preallocated columns, so only one batch of Python objects is alive at a
time, and each batch's raw slices are released once decoded. The cyclic garbage
collector is paused meanwhile: it would otherwise re-traverse every live event
struct many times per batch. Peak memory is about twice the JSON size, the JSON
itself included. A batch that fails validation is retried event by event and
the malformed events are dropped and counted, never allowed to crash the load.
"""
from __future__ import annotations

import contextlib
import gc
import math
import re
from collections.abc import Iterator, Sequence
from itertools import repeat
from typing import cast

import msgspec
import numpy as np
import pandas as pd

from ..errors import TraceError
from .schema import ABSENT, Args, Event, Header
from .table import DEVICE_KINDS, FLOAT_COLUMNS, INT_COLUMNS, MISSING, DeviceInfo, EventTable, Kind, TraceMeta

BATCH = 20_000

_CATEGORY_KIND: dict[object, Kind] = {
    "Operator": Kind.CPU_OP,
    "cpu_op": Kind.CPU_OP,
    "user_annotation": Kind.USER_ANNOTATION,
    "python_function": Kind.PYTHON_FUNCTION,
    "Runtime": Kind.RUNTIME,
    "cuda_runtime": Kind.RUNTIME,
    "cuda_driver": Kind.RUNTIME,
    "Kernel": Kind.KERNEL,
    "kernel": Kind.KERNEL,
    "Memcpy": Kind.MEMCPY,
    "gpu_memcpy": Kind.MEMCPY,
    "Memset": Kind.MEMSET,
    "gpu_memset": Kind.MEMSET,
    "gpu_user_annotation": Kind.GPU_ANNOTATION,
    "cuda_sync": Kind.SYNC,
    "Trace": Kind.TRACE_SPAN,
}
_OLD_SCHEMA_CATEGORIES = {"Operator", "Runtime", "Kernel", "Memcpy", "Memset"}
_KEPT_PHASES = {"X", "i", "I"}
_DECODE_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, RecursionError, UnicodeDecodeError, OverflowError,
                  ValueError)
_EMPTY_ARGS = Args()
# Integers past this are not ids or byte counts a trace can really hold.
_INT_LIMIT = float(2**62)

_NON_BLANK = re.compile(rb"\S")
_LOAD_TORCH_TRACE = "load a trace that prof.export_chrome_trace or tensorboard_trace_handler wrote"
# Other profilers' Chrome-format traces, told apart by what only they write.
_CHROMIUM_CATEGORIES = frozenset({"toplevel", "blink", "v8", "cc", "viz", "devtools.timeline", "loading",
                                  "navigation", "renderer.scheduler", "sequence_manager", "ipc", "mojom", "benchmark"})
_CHROMIUM_PROCESSES = frozenset({"Browser", "Renderer", "GPU Process", "Utility"})
_XLA_PROCESS_PREFIXES = ("/host:", "/device:", "/job:")  # TensorFlow's and JAX's profiler: /host:CPU, /device:GPU:0

_header_decoder = msgspec.json.Decoder(Header)
_batch_decoder = msgspec.json.Decoder(list[Event])
_event_decoder = msgspec.json.Decoder(Event)
_FREED = msgspec.Raw()  # stands in for each event's raw JSON once its batch is decoded


def parse_trace(data: bytes | memoryview, source: str) -> EventTable:
    """Parse one torch.profiler Chrome trace; raise ``TraceError`` naming ``source``."""
    if bytes(data[:3]) == b"\xef\xbb\xbf":  # a UTF-8 byte-order mark, as some editors save JSON
        data = memoryview(data)[3:]
    if _NON_BLANK.search(data) is None:  # stops at the first byte of any real trace, however much whitespace leads
        raise TraceError(source, "the file is empty; export the trace again (prof.export_chrome_trace or --trace)")
    try:
        header = _decode_header(data, source)
        repaired = 0
    except TraceError:
        # torch's exporter writes names as they are, so a record_function name with a
        # double quote makes invalid JSON. Mend such name lines once, and only then.
        data, repaired = _escape_quotes_in_names(data)
        if not repaired:
            raise
        header = _decode_header(data, source)
    raws = header.traceEvents
    if raws is None:
        raise TraceError(source, "no 'traceEvents' list: not a Chrome trace from torch.profiler; load a file that "
                                 "prof.export_chrome_trace or tensorboard_trace_handler wrote")
    builder = _ColumnBuilder(capacity=len(raws))
    with _gc_paused():
        for start in range(0, len(raws), BATCH):
            stop = min(start + BATCH, len(raws))
            builder.add(_decode_batch(raws[start:stop]))
            raws[start:stop] = [_FREED] * (stop - start)  # free each batch's slices once decoded
    del raws
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
        rank=_as_int(header.distributedInfo.rank) if header.distributedInfo else None,
        world_size=_as_int(header.distributedInfo.world_size) if header.distributedInfo else None,
        backend=_as_str(header.distributedInfo.backend) if header.distributedInfo else None,
        thread_names=tuple(sorted(builder.thread_names.items())),
        skipped_events=builder.skipped,
        repaired_names=repaired,
        # An exact integer: ~1.7e18 ns would lose hundreds of ns through a float.
        base_time_ns=header.baseTimeNanoseconds if type(header.baseTimeNanoseconds) is int
        else (_as_int(header.baseTimeNanoseconds) or 0),
    )
    return builder.table(meta)


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while batches are decoded.

    Every decoded event is a tracked object, so each batch triggers collections
    that traverse all the batch's events again: more than half the decode time.
    Decoding creates no reference cycles, so reference counting frees everything
    the collector would have.
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
            raise TraceError(source, "a Perfetto protobuf trace, not a torch.profiler JSON trace; export the JSON "
                                     "with prof.export_chrome_trace(path) or tensorboard_trace_handler") from None
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
        for e in _decode_batch(raws[start:start + BATCH]):
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


def _decode_batch(raws: Sequence[msgspec.Raw]) -> Sequence[Event | None]:
    """The batch's events; None for each one that does not decode, when the whole batch does not."""
    try:
        return _batch_decoder.decode(b"[" + b",".join(raws) + b"]")
    except _DECODE_ERRORS:
        events: list[Event | None] = []
        for raw in raws:
            try:
                events.append(_event_decoder.decode(raw))
            except _DECODE_ERRORS:
                events.append(None)  # counted as skipped by the builder
        return events




class _ColumnBuilder:
    """Accumulates decoded batches as per-column arrays.

    Per batch, each column is pulled out with one list comprehension (a plain
    attribute read per event: about twice as fast as transposing per-event tuples
    with ``zip``, which hops across thousands of iterators per row) and converted
    by numpy; names and categories are coded through dict lookups.
    """

    def __init__(self, capacity: int) -> None:
        # Columns are allocated once for every event the trace could keep and filled in
        # place: pages past the last kept row are never touched, so they take no memory,
        # and there is no final concatenation that would hold every column twice.
        self.columns: dict[str, np.ndarray] = {
            "kind": np.empty(capacity, dtype=np.int8),
            "name_code": np.empty(capacity, dtype=np.int32),
            **{c: np.empty(capacity, dtype=np.int64) for c in INT_COLUMNS},
            **{c: np.empty(capacity, dtype=np.float64) for c in FLOAT_COLUMNS},
        }
        # Input shapes and stacks are rare: kept as (row offset, values) only for batches that have any.
        self.dims_parts: list[tuple[int, np.ndarray]] = []
        self.types_parts: list[tuple[int, np.ndarray]] = []
        self.concrete_parts: list[tuple[int, np.ndarray]] = []
        self.stack_parts: list[tuple[int, np.ndarray]] = []
        self.collective_parts: list[tuple[int, np.ndarray]] = []
        self.comm_dtype_parts: list[tuple[int, np.ndarray]] = []
        self.name_index: dict[str, int] = {}
        # Interned shapes and stacks; empty ones map to None.
        self.text_index: dict[object, object] = {b"": None, "": None, None: None}
        self.thread_names: dict[int, str] = {}
        self.tid_index: dict[str, int] = {}
        self.count = 0
        self.skipped = 0
        self.old_schema = False

    def add(self, batch: Sequence[Event | None]) -> None:
        events = self._keep(batch)
        if not events:
            return
        n = len(events)
        codes = self._name_codes([e.name for e in events])
        kinds = self._kinds([e.cat for e in events])
        memory_code = self.name_index.get("[memory]")
        if memory_code is not None:
            kinds[codes == memory_code] = Kind.MEMORY
        ts_arr = _floats([e.ts for e in events])
        dur_arr = _floats([e.dur for e in events])
        ok = np.isfinite(ts_arr) & (np.isnan(dur_arr) | (dur_arr >= 0))
        dur_arr = np.where(np.isnan(dur_arr), 0.0, dur_arr)
        pid_arr = self._ids([e.pid for e in events])
        args = [_EMPTY_ARGS if (a := e.args) is None else a for e in events]
        device_arr = _ints([a.device for a in args])
        # Device events without an "device" arg live on the GPU their pid names.
        missing_device = np.isin(kinds, DEVICE_KINDS) & (device_arr == MISSING)
        cols: dict[str, np.ndarray] = {
            "kind": kinds,
            "name_code": codes,
            "ts": ts_arr,
            "dur": dur_arr,
            "pid": pid_arr,
            "tid": self._ids([e.tid for e in events]),
            "correlation": _ints([a.correlation for a in args]),
            "external_id": _ints(_first_present([a.external_id for a in args], [a.external_id_old for a in args])),
            "device": np.where(missing_device, pid_arr, device_arr),
            "stream": _ints([a.stream for a in args]),
            "bytes": _floats(_first_present([a.bytes for a in args], [a.mem_bytes for a in args])),
            "blocks_per_sm": _floats([a.blocks_per_sm for a in args]),
            "occupancy": _floats([a.occupancy for a in args]),
            "total_allocated": _floats([a.total_allocated for a in args]),
            "total_reserved": _floats([a.total_reserved for a in args]),
            "seq": _ints([a.seq for a in args]),
            "fwd_thread": _ints([a.fwd_thread for a in args]),
            "python_id": _ints([a.python_id for a in args]),
            "python_parent_id": _ints([a.python_parent_id for a in args]),
            "mem_device_type": _ints([a.mem_device_type for a in args]),
            "mem_device_id": _ints([a.mem_device_id for a in args]),
            "addr": _ints([a.addr for a in args]),
            "flops": _floats([a.flops for a in args]),
            "msg_in_nelems": _floats([a.msg_in_nelems for a in args]),
            "msg_out_nelems": _floats([a.msg_out_nelems for a in args]),
            "group_size": _floats([a.group_size for a in args]),
        }
        all_ok = bool(ok.all())
        kept = n if all_ok else int(ok.sum())
        self.skipped += n - kept
        for key, col in cols.items():
            self.columns[key][self.count:self.count + kept] = col if all_ok else col[ok]
        self._add_sparse(args, None if all_ok else ok)
        self.count += kept

    def _add_sparse(self, args: list[Args], ok: np.ndarray | None) -> None:
        """The object columns of a batch (shapes, input types, stacks, collectives), kept only
        for the batches that have any, interned (``ok``: the events kept, None for all)."""
        text = self.text_index
        n = len(args)

        def keep(parts: list[tuple[int, np.ndarray]], values: np.ndarray) -> None:
            parts.append((self.count, values if ok is None else values[ok]))

        for raw, parts in (([a.input_dims for a in args], self.dims_parts),
                           ([a.input_types for a in args], self.types_parts),
                           ([a.concrete_inputs for a in args], self.concrete_parts)):
            if any(raw):  # an absent arg is an empty, falsy Raw
                blobs = list(map(bytes, raw))
                keep(parts, np.array(list(map(text.setdefault, blobs, blobs)), dtype=object))  # b"" -> None
        for strings, parts in (([a.collective for a in args], self.collective_parts),
                               ([a.comm_dtype for a in args], self.comm_dtype_parts)):
            if strings.count(None) < n:  # record_param_comms ops only: most batches have none
                keep(parts, np.array([text.setdefault(v, v) if isinstance(v, str) else None for v in strings],
                                     dtype=object))
        call_stack = [a.call_stack for a in args]
        if set(map(type, call_stack)) <= {str, type(None)}:
            if call_stack.count(None) + call_stack.count("") < n:
                keep(self.stack_parts, np.array(list(map(text.setdefault, call_stack, call_stack)), dtype=object))
        elif any(isinstance(c, str) and c for c in call_stack):
            keep(self.stack_parts,
                 np.array([text.setdefault(c, c) if isinstance(c, str) else None for c in call_stack], dtype=object))

    def _name_codes(self, names: list[object]) -> np.ndarray:
        """Global name codes, numbered in first-seen order.

        A batch has few distinct names: they are collected in C (hashing each name
        once), numbered in Python, and every event's code is then a C-level lookup.
        """
        uniques = dict.fromkeys(names)
        if not all(type(n) is str for n in uniques):
            names = [n if type(n) is str else str(n) for n in names]
            uniques = dict.fromkeys(names)
        index = self.name_index
        for name in cast("dict[str, int | None]", uniques):  # all str now, as checked above
            uniques[name] = index.setdefault(name, len(index))
        return np.fromiter(map(uniques.__getitem__, names), dtype=np.int32, count=len(names))

    def saw_torch_events(self) -> bool:
        """Whether any kept event is one only torch.profiler writes: a torch category
        (either schema), a ``[memory]`` instant, or a ``ProfilerStep#`` range.

        A numpy scan of the kind column and a look at the distinct names: no pass
        over the events in Python.
        """
        return bool((self.columns["kind"][:self.count] != Kind.OTHER).any()) or any(
            name.startswith("ProfilerStep#") for name in self.name_index)

    def _kinds(self, cats: list[object]) -> np.ndarray:
        if not self.old_schema and not _OLD_SCHEMA_CATEGORIES.isdisjoint(cats):
            self.old_schema = True
        return np.fromiter(map(_CATEGORY_KIND.get, cats, repeat(Kind.OTHER)), dtype=np.int8, count=len(cats))

    def _keep(self, batch: Sequence[Event | None]) -> list[Event]:
        kept = [e for e in batch if e is not None and e.ph in _KEPT_PHASES]
        if len(kept) == len(batch):
            return kept
        for e in batch:
            if e is None:
                self.skipped += 1
            elif e.ph == "M" and e.name == "thread_name" and e.args is not None and isinstance(e.args.name, str):
                tid = self._ids((e.tid,))[0]
                self.thread_names[int(tid)] = e.args.name
        return kept

    def _ids(self, values: Sequence[object]) -> np.ndarray:
        """pid/tid: ints, numeric strings, ``"stream 7"``, or labels like ``"Spans"``."""
        types = set(map(type, values))
        if types == {int}:  # the common case, converted in C
            try:
                arr = np.array(values, dtype=np.int64)
            except OverflowError:
                arr = None
            if arr is not None and not ((arr >= 2**62) | (arr <= -(2**62))).any():
                return arr
        if bool in types:  # True would hash together with 1 below; bools are no ids
            return np.fromiter(map(self._id, values), dtype=np.int64, count=len(values))
        # A trace has few distinct pids and tids: convert each once.
        local, uniques = pd.factorize(np.array(values, dtype=object))  # None and NaN -> -1
        mapping = np.fromiter(map(self._id, uniques), dtype=np.int64, count=len(uniques))
        return np.append(mapping, MISSING)[local]  # code -1 picks the appended MISSING

    def _id(self, v: object) -> int:
        if type(v) is int and abs(v) < 2**62:
            return v
        if isinstance(v, str):
            tail = v.rsplit(" ", 1)[-1]
            if tail.isdigit() and len(tail) < 18:
                return int(tail)
            return -2 - self.tid_index.setdefault(v, len(self.tid_index))
        if isinstance(v, float) and math.isfinite(v) and abs(v) < _INT_LIMIT:
            return int(v)
        return MISSING

    def table(self, meta: TraceMeta) -> EventTable:
        cols = {k: v[:self.count] for k, v in self.columns.items()}
        kind = cols.pop("kind")
        code = cols.pop("name_code")
        names = np.empty(len(self.name_index), dtype=object)
        names[:] = list(self.name_index)
        return EventTable(
            meta=meta,
            names=names,
            kind=kind,
            name_code=code,
            columns=cols,
            input_dims=_sparse(self.dims_parts, self.count),
            call_stack=_sparse(self.stack_parts, self.count),
            input_types=_sparse(self.types_parts, self.count),
            collective=_sparse(self.collective_parts, self.count),
            comm_dtype=_sparse(self.comm_dtype_parts, self.count),
            concrete_inputs=_sparse(self.concrete_parts, self.count),
        )


def _sparse(parts: list[tuple[int, np.ndarray]], count: int) -> np.ndarray | None:
    """An object column from the batches that had values; None when none had."""
    if not parts:
        return None
    out = np.full(count, None, dtype=object)
    for offset, values in parts:
        out[offset:offset + len(values)] = values
    return out


def _first_present(primary: list[object], fallback: list[object]) -> list[object]:
    """``primary`` where it is present and not null, else ``fallback`` (two spellings of one arg)."""
    if fallback.count(ABSENT) == len(fallback):
        return primary
    return [f if p is ABSENT or p is None else p for p, f in zip(primary, fallback)]


def _floats(values: list[object]) -> np.ndarray:
    """Numbers to float64; absent, None, strings that are no numbers and non-finite values to NaN."""
    if values.count(ABSENT) == len(values):  # an arg most events lack
        return np.full(len(values), np.nan)
    try:
        arr = np.array(values, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        arr = np.array([_as_float(v) for v in values], dtype=np.float64)
    arr[~np.isfinite(arr)] = np.nan
    return arr


def _ints(values: list[object]) -> np.ndarray:
    arr = _floats(values)
    bad = np.isnan(arr) | (np.abs(arr) >= _INT_LIMIT)
    arr[bad] = MISSING
    return arr.astype(np.int64)


def _as_float(v: object) -> float:
    if isinstance(v, bool) or v is None:
        return math.nan
    if isinstance(v, (int, float)):
        try:
            return float(v)
        except OverflowError:
            return math.nan
    if isinstance(v, str):
        try:
            return float(int(v, 0)) if v.lower().startswith("0x") else float(v)
        except ValueError:
            return math.nan
    return math.nan


def _as_int(v: object) -> int | None:
    f = _as_float(v)
    return None if math.isnan(f) or abs(f) >= _INT_LIMIT else int(f)


def _as_str(v: object) -> str | None:
    return v if isinstance(v, str) else None


def _devices(header: Header, saw_hip: bool) -> tuple[DeviceInfo, ...]:
    out: list[DeviceInfo] = []
    for i, p in enumerate(header.deviceProperties or ()):
        name = _as_str(p.name) or f"device {i}"
        major, minor = _as_int(p.computeMajor), _as_int(p.computeMinor)
        rocm = saw_hip or "AMD" in name or "Radeon" in name or "Instinct" in name
        device_id = _as_int(p.id)
        out.append(
            DeviceInfo(
                index=i if device_id is None else device_id,
                name=name,
                kind="rocm" if rocm else "cuda",
                total_memory_bytes=_as_int(p.totalGlobalMem),
                compute_capability=None if major is None or minor is None else (major, minor),
                sm_count=_as_int(p.numSms),
            )
        )
    return tuple(out)
