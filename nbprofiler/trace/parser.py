"""Chrome-trace bytes -> ``EventTable``. The only trace parser in nbprofiler.

Live runs export their trace and come through here too, so a figure never
depends on where the trace came from.

How it stays fast and small: the header is decoded with ``traceEvents`` as a
list of ``msgspec.Raw`` slices (no objects built per event), then events are
typed-decoded in batches of ``BATCH`` into ``schema.Event`` structs and turned
into columns at once, so only one batch of Python objects is alive at a time.
A batch that fails validation is retried event by event and the malformed
events are dropped and counted, never allowed to crash the load.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import msgspec
import numpy as np

from ..errors import TraceError
from .schema import Args, Event, Header
from .table import FLOAT_COLUMNS, INT_COLUMNS, MISSING, DeviceInfo, EventTable, Kind, TraceMeta

BATCH = 100_000

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
_DECODE_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, RecursionError, UnicodeDecodeError, OverflowError, ValueError)
_EMPTY_ARGS = Args()
# Integers past this are not ids or byte counts a trace can really hold.
_INT_LIMIT = float(2**62)

_header_decoder = msgspec.json.Decoder(Header)
_batch_decoder = msgspec.json.Decoder(list[Event])
_event_decoder = msgspec.json.Decoder(Event)


def parse_trace(data: bytes | memoryview, source: str) -> EventTable:
    """Parse one torch.profiler Chrome trace; raise ``TraceError`` naming ``source``."""
    if not data or not bytes(data[:4096]).strip():
        raise TraceError(source, "the file is empty")
    header = _decode_header(data, source)
    raws = header.traceEvents
    if raws is None:
        raise TraceError(source, "no 'traceEvents' list: not a Chrome trace from torch.profiler")
    builder = _ColumnBuilder()
    for start in range(0, len(raws), BATCH):
        builder.add(_decode_batch(raws[start:start + BATCH]))
    del raws
    if builder.count == 0:
        raise TraceError(source, "the trace holds no profiler events (was the profiler stopped before any step?)")
    meta = TraceMeta(
        source=source,
        schema="2021" if builder.old_schema else "current",
        devices=_devices(header, saw_hip=any(n.startswith("hip") for n in builder.name_index)),
        rank=_as_int(header.distributedInfo.rank) if header.distributedInfo else None,
        world_size=_as_int(header.distributedInfo.world_size) if header.distributedInfo else None,
        backend=_as_str(header.distributedInfo.backend) if header.distributedInfo else None,
        thread_names=tuple(sorted(builder.thread_names.items())),
        skipped_events=builder.skipped,
    )
    return builder.table(meta)


def _decode_header(data: bytes | memoryview, source: str) -> Header:
    try:
        return _header_decoder.decode(data)
    except msgspec.ValidationError as exc:
        if bytes(data[:64]).lstrip().startswith(b"["):
            raise TraceError(source, "a JSON list, not a torch.profiler trace object with 'traceEvents'") from None
        raise TraceError(source, f"not a torch.profiler trace ({exc})") from None
    except RecursionError:
        raise TraceError(source, "JSON nested too deeply to be a profiler trace") from None
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        raise TraceError(source, f"not valid JSON, or truncated ({exc})") from None


def _decode_batch(raws: Sequence[msgspec.Raw]) -> list[Event]:
    try:
        return _batch_decoder.decode(b"[" + b",".join(raws) + b"]")
    except _DECODE_ERRORS:
        events = []
        for raw in raws:
            try:
                events.append(_event_decoder.decode(raw))
            except _DECODE_ERRORS:
                events.append(None)  # counted as skipped by the builder
        return events


class _ColumnBuilder:
    """Accumulates decoded batches as per-column arrays."""

    def __init__(self) -> None:
        self.parts: dict[str, list[np.ndarray]] = {c: [] for c in ("kind", "name_code", *INT_COLUMNS, *FLOAT_COLUMNS)}
        self.dims_parts: list[np.ndarray] = []
        self.stack_parts: list[np.ndarray] = []
        self.name_index: dict[str, int] = {}
        self.text_index: dict[object, object] = {}
        self.thread_names: dict[int, str] = {}
        self.tid_index: dict[str, int] = {}
        self.count = 0
        self.skipped = 0
        self.old_schema = False
        self.any_dims = False
        self.any_stack = False

    def add(self, batch: list[Event | None]) -> None:
        events = self._keep(batch)
        if not events:
            return
        args = [e.args or _EMPTY_ARGS for e in events]
        names = [n if type(n) is str else str(n) for n in (e.name for e in events)]
        cats = [e.cat for e in events]
        kinds = np.fromiter((_CATEGORY_KIND.get(c, Kind.OTHER) for c in cats), dtype=np.int8, count=len(events))
        kinds[np.fromiter((n == "[memory]" for n in names), dtype=bool, count=len(names))] = Kind.MEMORY
        if not self.old_schema and any(c in _OLD_SCHEMA_CATEGORIES for c in set(cats)):
            self.old_schema = True
        index = self.name_index
        codes = np.fromiter((index.setdefault(n, len(index)) for n in names), dtype=np.int32, count=len(names))
        ts = _floats([e.ts for e in events])
        dur = _floats([e.dur for e in events])
        ok = np.isfinite(ts) & (np.isnan(dur) | (dur >= 0))
        dur = np.where(np.isnan(dur), 0.0, dur)
        cols: dict[str, np.ndarray] = {
            "kind": kinds,
            "name_code": codes,
            "ts": ts,
            "dur": dur,
            "pid": self._ids([e.pid for e in events]),
            "tid": self._ids([e.tid for e in events]),
            "correlation": _ints([a.correlation for a in args]),
            "external_id": _ints([a.external_id if a.external_id is not None else a.external_id_old for a in args]),
            "device": _ints([a.device for a in args]),
            "stream": _ints([a.stream for a in args]),
            "bytes": _floats([a.bytes if a.bytes is not None else a.mem_bytes for a in args]),
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
        }
        device_events = np.isin(kinds, [Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET, Kind.GPU_ANNOTATION, Kind.SYNC])
        missing_device = device_events & (cols["device"] == MISSING)
        cols["device"] = np.where(missing_device, cols["pid"], cols["device"])
        self.skipped += int((~ok).sum())
        for key, col in cols.items():
            self.parts[key].append(col[ok])
        dims = [self._dedupe(bytes(a.input_dims) if a.input_dims else None) for a in args]
        stacks = [self._dedupe(a.call_stack if isinstance(a.call_stack, str) and a.call_stack else None) for a in args]
        self.any_dims = self.any_dims or any(d is not None for d in dims)
        self.any_stack = self.any_stack or any(s is not None for s in stacks)
        self.dims_parts.append(np.array(dims, dtype=object)[ok])
        self.stack_parts.append(np.array(stacks, dtype=object)[ok])
        self.count += int(ok.sum())

    def _keep(self, batch: list[Event | None]) -> list[Event]:
        kept = []
        for e in batch:
            if e is None:
                self.skipped += 1
            elif e.ph in _KEPT_PHASES:
                kept.append(e)
            elif e.ph == "M" and e.name == "thread_name" and e.args is not None and isinstance(e.args.name, str):
                tid = self._ids([e.tid])[0]
                self.thread_names[int(tid)] = e.args.name
        return kept

    def _ids(self, values: list[object]) -> np.ndarray:
        """pid/tid: ints, numeric strings, ``"stream 7"``, or labels like ``"Spans"``."""
        out = []
        for v in values:
            if type(v) is int and abs(v) < 2**62:
                out.append(v)
            elif isinstance(v, str):
                tail = v.rsplit(" ", 1)[-1]
                if tail.isdigit() and len(tail) < 18:
                    out.append(int(tail))
                else:
                    out.append(-2 - self.tid_index.setdefault(v, len(self.tid_index)))
            elif isinstance(v, float) and math.isfinite(v) and abs(v) < _INT_LIMIT:
                out.append(int(v))
            else:
                out.append(MISSING)
        return np.array(out, dtype=np.int64)

    def _dedupe(self, value: object) -> object:
        return None if value is None else self.text_index.setdefault(value, value)

    def table(self, meta: TraceMeta) -> EventTable:
        cols = {k: np.concatenate(v) for k, v in self.parts.items()}
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
            input_dims=np.concatenate(self.dims_parts) if self.any_dims else None,
            call_stack=np.concatenate(self.stack_parts) if self.any_stack else None,
        )


def _floats(values: list[object]) -> np.ndarray:
    """Numbers to float64; None, strings that are no numbers and non-finite values to NaN."""
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
        out.append(
            DeviceInfo(
                index=_as_int(p.id) if _as_int(p.id) is not None else i,
                name=name,
                kind="rocm" if rocm else "cuda",
                total_memory_bytes=_as_int(p.totalGlobalMem),
                compute_capability=None if major is None or minor is None else (major, minor),
                sm_count=_as_int(p.numSms),
            )
        )
    return tuple(out)
