"""Decoded events -> the event table's columns, a batch at a time.

Each batch is read column by column: one comprehension per column (``_reader``),
converted by numpy; names and categories are coded through dict lookups. An arg is read only on the kinds of event that
carry it (``arg_columns``): the events are grouped by kind once per batch, and
each column reads only its kinds' groups.
"""
from __future__ import annotations

import math
import mmap
from collections.abc import Callable, Sequence
from itertools import chain, repeat
from typing import cast

import msgspec
import numpy as np
import pandas as pd

from .arg_columns import NUMERIC, RAW_JSON_KINDS, READ_WHOLE, TEXT_KINDS, ArgColumn
from .schema import ABSENT, KEPT_PHASES, Args, DecodedEvent
from .table import DEVICE_KINDS, FLOAT_COLUMNS, INT_COLUMNS, MISSING, EventTable, Kind, TraceMeta

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
_EMPTY_ARGS = Args()
# Integers past this are not ids or byte counts a trace can really hold.
_INT_LIMIT = float(2**62)


def _reader(field: str) -> Callable[[Sequence[object]], list[object]]:
    """A function giving ``[x.<field> for x in items]``. With the name written in the
    comprehension, CPython specializes the attribute load: twice as fast as ``map`` over
    ``operator.attrgetter``. ``field`` is one of the schema's own field names."""
    namespace: dict[str, Callable[[Sequence[object]], list[object]]] = {}
    exec(f"def read(items):\n    return [x.{field} for x in items]", namespace)  # noqa: S102 - a schema field name
    return namespace["read"]


_NAME, _CAT, _PID, _TID, _TS, _DUR, _ARGS = map(_reader, ("name", "cat", "pid", "tid", "ts", "dur", "args"))
_FIELD = {field: _reader(field) for field in Args.__struct_fields__}


def _empty_column(capacity: int, dtype: type[np.generic]) -> np.ndarray:
    """A column of ``capacity`` rows whose rows take memory only once written.

    numpy backs large arrays with 2 MB huge pages, so each column's last page, partly
    written, would hold up to 2 MB past its rows: 26 MB more at the peak of the 1M-event
    trace's load. An anonymous map advised to small pages keeps the memory to what is written.
    """
    buffer = mmap.mmap(-1, max(1, capacity * np.dtype(dtype).itemsize))
    if hasattr(mmap, "MADV_NOHUGEPAGE"):  # Linux; elsewhere the default pages
        buffer.madvise(mmap.MADV_NOHUGEPAGE)
    return np.frombuffer(buffer, dtype=dtype, count=capacity)


class ColumnBuilder:
    """Accumulates decoded batches as per-column arrays."""

    def __init__(self, capacity: int) -> None:
        # Columns are allocated once for every event the trace could keep and filled in
        # place: pages past the last kept row are never touched, so they take no memory,
        # and there is no final concatenation that would hold every column twice.
        self.columns: dict[str, np.ndarray] = {
            "kind": _empty_column(capacity, np.int8),
            "name_code": _empty_column(capacity, np.int32),
            **{c: _empty_column(capacity, np.int64) for c in INT_COLUMNS},
            **{c: _empty_column(capacity, np.float64) for c in FLOAT_COLUMNS},
        }
        # Input shapes, stacks and collectives are rare: kept as (row offset, values) only
        # for the batches that have any.
        self.object_parts: dict[str, list[tuple[int, np.ndarray]]] = {c: [] for c in (*RAW_JSON_KINDS, *TEXT_KINDS)}
        self.name_index: dict[str, int] = {}
        # Interned shapes and stacks; empty ones map to None.
        self.text_index: dict[object, object] = {b"": None, "": None, None: None}
        self.thread_names: dict[int, str] = {}
        self.tid_index: dict[str, int] = {}
        self.count = 0
        self.skipped = 0
        self.old_schema = False

    def add(self, batch: Sequence[DecodedEvent | None]) -> None:
        events = self._keep(batch)
        if not events:
            return
        n = len(events)
        codes = self._name_codes(_NAME(events))
        kinds = self._kinds(_CAT(events))
        memory_code = self.name_index.get("[memory]")
        if memory_code is not None:
            kinds[codes == memory_code] = Kind.MEMORY
        ts_arr = _floats(_TS(events))
        dur_arr = _floats(_DUR(events))
        ok = np.isfinite(ts_arr) & (np.isnan(dur_arr) | (dur_arr >= 0))
        pid_arr = self._ids(_PID(events))
        args = _ArgsByKind(kinds, cast("list[Args | None]", _ARGS(events)))
        cols: dict[str, np.ndarray] = {
            "kind": kinds,
            "name_code": codes,
            "ts": ts_arr,
            "dur": np.where(np.isnan(dur_arr), 0.0, dur_arr),
            "pid": pid_arr,
            "tid": self._ids(_TID(events)),
            **{spec.column: args.numeric(spec) for spec in NUMERIC},
        }
        # Device events without a "device" arg live on the GPU their pid names.
        cols["device"] = np.where(np.isin(kinds, DEVICE_KINDS) & (cols["device"] == MISSING), pid_arr, cols["device"])
        all_ok = bool(ok.all())
        kept = n if all_ok else int(ok.sum())
        self.skipped += n - kept
        for key, col in cols.items():
            self.columns[key][self.count:self.count + kept] = col if all_ok else col[ok]
        for column, values in self._object_columns(args).items():
            self.object_parts[column].append((self.count, values if all_ok else values[ok]))
        self.count += kept

    def _object_columns(self, args: _ArgsByKind) -> dict[str, np.ndarray]:
        """The batch's object columns that have any value (shapes, input types, stacks,
        collectives), interned; empty ones are None."""
        text = self.text_index
        out: dict[str, np.ndarray] = {}
        for column, kinds in RAW_JSON_KINDS.items():
            rows, raw = args.values(kinds, column)
            if any(raw):  # an absent arg is an empty, falsy Raw
                blobs = _blobs(cast("list[msgspec.Raw]", raw))
                out[column] = args.spread(rows, list(map(text.setdefault, blobs, blobs)))  # b"" -> None
        for column, kinds in TEXT_KINDS.items():
            rows, strings = args.values(kinds, column)
            if not any(strings):  # no text, as in most batches: None, "" (and numbers, no text either)
                continue
            if set(map(type, strings)) <= {str, type(None)}:
                out[column] = args.spread(rows, list(map(text.setdefault, strings, strings)))
            elif any(isinstance(s, str) and s for s in strings):
                out[column] = args.spread(rows, [text.setdefault(s, s) if isinstance(s, str) else None
                                                 for s in strings])
        return out

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

    def _keep(self, batch: Sequence[DecodedEvent | None]) -> list[DecodedEvent]:
        kept = [e for e in batch if e is not None and e.ph in KEPT_PHASES]
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
        sparse = {column: _sparse(parts, self.count) for column, parts in self.object_parts.items()}
        return EventTable(meta=meta, names=names, kind=kind, name_code=code, columns=cols, **sparse)


class _ArgsByKind:
    """A batch's ``args`` grouped by event kind, so that each column reads only the
    events of the kinds that carry it (an event without args reads as empty ones)."""

    def __init__(self, kinds: np.ndarray, maybe_args: list[Args | None]) -> None:
        args = cast("list[Args]", maybe_args)
        if None in maybe_args:
            args = [_EMPTY_ARGS if a is None else a for a in maybe_args]
        self.count = len(args)
        self.present = [Kind(k) for k in np.unique(kinds)]
        self.all_args = args
        # Each kind's rows and args; of one kind only, every selection is all rows or none.
        self.rows: dict[Kind, np.ndarray] = {}
        self.args: dict[Kind, list[Args]] = {}
        if len(self.present) > 1:
            as_array = np.empty(len(args), dtype=object)
            as_array[:] = args
            for k in self.present:
                self.rows[k] = np.flatnonzero(kinds == k)
                self.args[k] = as_array[self.rows[k]].tolist()
        self._selected: dict[tuple[Kind, ...], tuple[np.ndarray | None, list[Args]]] = {}

    def select(self, kinds: tuple[Kind, ...]) -> tuple[np.ndarray | None, list[Args]]:
        """The rows of ``kinds`` (and of the kinds read whole) and their args; rows None for all.
        No kind chosen gives no rows."""
        chosen = tuple(k for k in self.present if k in kinds or k in READ_WHOLE)
        if chosen not in self._selected:
            if not chosen:
                self._selected[chosen] = np.empty(0, dtype=np.intp), []
            elif len(chosen) == len(self.present):
                self._selected[chosen] = None, self.all_args
            elif len(chosen) == 1:
                self._selected[chosen] = self.rows[chosen[0]], self.args[chosen[0]]
            else:  # grouped by kind, not in event order: each value stays beside its row
                self._selected[chosen] = (np.concatenate([self.rows[k] for k in chosen], dtype=np.intp),
                                          list(chain.from_iterable(self.args[k] for k in chosen)))
        return self._selected[chosen]

    def values(self, kinds: tuple[Kind, ...], field: str) -> tuple[np.ndarray | None, list[object]]:
        rows, args = self.select(kinds)
        return rows, _FIELD[field](args)

    def numeric(self, spec: ArgColumn) -> np.ndarray:
        """A numeric column: the arg as float64 (NaN where absent) or int64 (MISSING)."""
        rows, values = self.values(spec.kinds, spec.fields[0])
        for other in spec.fields[1:]:
            values = _first_present(values, self.values(spec.kinds, other)[1])
        arr = _ints(values) if spec.integer else _floats(values)
        if rows is None:
            return arr
        out = np.full(self.count, MISSING if spec.integer else np.nan, dtype=arr.dtype)
        out[rows] = arr
        return out

    def spread(self, rows: np.ndarray | None, values: list[object]) -> np.ndarray:
        """An object column of the whole batch from the values at ``rows`` (None elsewhere)."""
        out = np.full(self.count, None, dtype=object)
        if rows is None:
            out[:] = values
        else:
            out[rows] = values
        return out


def _blobs(raws: list[msgspec.Raw]) -> list[bytes]:
    """Each raw JSON value's bytes. One join and one split, both in C, take a quarter of the
    time of ``bytes()`` on each. NUL separates them: JSON text never holds a raw NUL byte;
    the count is checked all the same, as misaligned shapes would be silently wrong."""
    blobs = b"\x00".join(raws).split(b"\x00")
    return blobs if len(blobs) == len(raws) else list(map(bytes, raws))


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
    n = len(values)
    # An arg absent throughout: counting ABSENT is an identity test per value, cheaper than
    # converting; a first value present skips the count, which is dear on numbers.
    if n and values[0] is ABSENT and values.count(ABSENT) == n:
        return np.full(n, np.nan)
    try:
        arr = np.fromiter(values, dtype=np.float64, count=n)
    except (TypeError, ValueError, OverflowError):
        arr = np.fromiter(map(as_float, values), dtype=np.float64, count=n)
    arr[~np.isfinite(arr)] = np.nan
    return arr


def _ints(values: list[object]) -> np.ndarray:
    arr = _floats(values)
    bad = np.isnan(arr) | (np.abs(arr) >= _INT_LIMIT)
    arr[bad] = MISSING
    return arr.astype(np.int64)


def as_float(v: object) -> float:
    """A trace value as a float: numbers, numeric and hex strings; NaN for anything else."""
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


def as_int(v: object) -> int | None:
    f = as_float(v)
    return None if math.isnan(f) or abs(f) >= _INT_LIMIT else int(f)


def as_str(v: object) -> str | None:
    return v if isinstance(v, str) else None
