"""The immutable columnar event table: the one data model every analysis reads.

Live runs and trace files both end up here, through ``parser.parse_trace``.
Columns are read-only numpy arrays, so no analysis can change what another
one sees; ``frame()`` exposes them as a pandas DataFrame (pandas copy-on-write
keeps that view safe too).
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd


class Kind(enum.IntEnum):
    """What an event is, across both trace schemas (2021 and current)."""

    OTHER = 0
    CPU_OP = 1  # "Operator" / "cpu_op"
    USER_ANNOTATION = 2  # "user_annotation" (ProfilerStep#N, record_function, Optimizer.step#...)
    PYTHON_FUNCTION = 3  # "python_function" (with_stack)
    RUNTIME = 4  # "Runtime" / "cuda_runtime" / "cuda_driver"
    KERNEL = 5  # "Kernel" / "kernel"
    MEMCPY = 6  # "Memcpy" / "gpu_memcpy"
    MEMSET = 7  # "Memset" / "gpu_memset"
    GPU_ANNOTATION = 8  # "gpu_user_annotation"
    SYNC = 9  # "cuda_sync" device-side sync records
    MEMORY = 10  # "[memory]" instant events
    TRACE_SPAN = 11  # the profiler's own "Trace" span

    @property
    def on_device(self) -> bool:
        return self in DEVICE_KINDS


# Tuples, not sets, so that ``np.isin(table.kind, ...)`` reads them as values.
# The device kinds that keep the device busy: what it runs, as opposed to the annotations
# and sync records drawn over it. Busy time, idle time, launches and device time per
# operator all count these.
DEVICE_WORK_KINDS = (Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET)
DEVICE_KINDS = (*DEVICE_WORK_KINDS, Kind.GPU_ANNOTATION, Kind.SYNC)
HOST_RANGE_KINDS = (Kind.CPU_OP, Kind.USER_ANNOTATION, Kind.PYTHON_FUNCTION)

# Integer columns use this for "absent"; float columns use NaN.
MISSING = -1

INT_COLUMNS = (
    "pid", "tid", "correlation", "external_id", "device", "stream",
    "seq", "fwd_thread", "python_id", "python_parent_id", "mem_device_type", "mem_device_id",
    "addr",  # [memory] events: the block's address, which pairs a free with its allocation
)
FLOAT_COLUMNS = (
    "ts", "dur", "bytes", "blocks_per_sm", "occupancy", "total_allocated", "total_reserved",
    "flops",  # with_flops: an operator's FLOPs as torch counts them
    # A collective's record_param_comms op: elements in and out, and the ranks in its group.
    "msg_in_nelems", "msg_out_nelems", "group_size",
)


def thread_key(pid: np.ndarray, tid: np.ndarray) -> np.ndarray:
    """One int64 per (pid, tid): thread ids repeat across processes, so nesting and
    "the same thread" must compare both, and one integer sorts and groups fastest."""
    return np.asarray(pid, dtype=np.int64) * (1 << 32) + np.asarray(tid, dtype=np.int64)


@dataclass(frozen=True)
class DeviceInfo:
    """A GPU the trace describes (``deviceProperties``), or the host CPU."""

    index: int
    name: str
    kind: str  # "cuda", "rocm" or "cpu"
    total_memory_bytes: int | None = None
    compute_capability: tuple[int, int] | None = None
    sm_count: int | None = None

    def as_dict(self) -> dict[str, Any]:
        cc = self.compute_capability
        return {
            "index": self.index,
            "name": self.name,
            "kind": self.kind,
            "total_memory_bytes": self.total_memory_bytes,
            "compute_capability": None if cc is None else f"{cc[0]}.{cc[1]}",
            "sm_count": self.sm_count,
        }


@dataclass(frozen=True)
class TraceMeta:
    """Trace-level facts that are not events."""

    source: str  # a path, or "live"
    schema: str  # "2021" or "current"
    devices: tuple[DeviceInfo, ...] = ()
    rank: int | None = None
    world_size: int | None = None
    backend: str | None = None
    thread_names: tuple[tuple[int, str], ...] = ()
    skipped_events: int = 0  # malformed events dropped while parsing
    # ``baseTimeNanoseconds``: the Unix time, in ns, that ``ts`` counts µs from (0 in traces from
    # before it existed, whose ``ts`` are absolute Unix µs); places events on the cell's clock.
    base_time_ns: int = 0
    repaired_names: int = 0  # names with unescaped quotes (a torch exporter bug) mended while parsing


@dataclass(frozen=True, eq=False)
class EventTable:
    """All events of one trace as parallel read-only columns.

    ``kind`` is a ``Kind`` code, ``name_code`` indexes ``names``. Timestamps
    and durations are float microseconds; instants have ``dur == 0``.
    ``input_dims`` and ``call_stack`` hold raw JSON / text only where the
    trace had them (``--shapes`` / 2021-schema stacks), else ``None``; so do
    ``input_types`` (raw JSON: each input's dtype, "Float", "Half"..., with
    ``--shapes``), ``concrete_inputs`` (raw JSON: the values of scalar and
    list arguments, "[2, 2]" for a stride, "" for tensors; torch 2.1 and later
    with ``--shapes``), ``collective`` and ``comm_dtype`` (a collective's
    record_param_comms op: "allreduce", "Float"...).
    """

    meta: TraceMeta
    names: np.ndarray  # unique names, object dtype
    kind: np.ndarray
    name_code: np.ndarray
    columns: dict[str, np.ndarray] = field(default_factory=dict)
    input_dims: np.ndarray | None = None
    call_stack: np.ndarray | None = None
    input_types: np.ndarray | None = None
    collective: np.ndarray | None = None
    comm_dtype: np.ndarray | None = None
    concrete_inputs: np.ndarray | None = None

    def __post_init__(self) -> None:
        for arr in (self.names, self.kind, self.name_code, *self.columns.values()):
            arr.flags.writeable = False

    @classmethod
    def empty(cls, meta: TraceMeta) -> "EventTable":
        """A table of no events with every column: it stands in for a trace that was never
        recorded, so that each analysis returns its empty table instead of every caller
        checking for a missing one."""
        columns = {c: np.empty(0, dtype=np.int64) for c in INT_COLUMNS}
        columns.update({c: np.empty(0, dtype=np.float64) for c in FLOAT_COLUMNS})
        return cls(meta=meta, names=np.empty(0, dtype=object), kind=np.empty(0, dtype=np.int8),
                   name_code=np.empty(0, dtype=np.int32), columns=columns)

    def __len__(self) -> int:
        return len(self.kind)

    def __getitem__(self, column: str) -> np.ndarray:
        return self.columns[column]

    @cached_property
    def name(self) -> pd.Categorical:
        """Event names as a Categorical: one string per distinct name."""
        return pd.Categorical.from_codes(self.name_code, categories=pd.Index(self.names, dtype=object))

    @cached_property
    def thread(self) -> np.ndarray:
        """Each event's thread as one key (``thread_key``), read-only like the columns."""
        key = thread_key(self.columns["pid"], self.columns["tid"])
        key.flags.writeable = False
        return key

    def frame(self) -> pd.DataFrame:
        """The table as a DataFrame (``kind`` as int, ``name`` as categorical)."""
        data: dict[str, Any] = {"kind": self.kind, "name": self.name}
        data.update(self.columns)
        return pd.DataFrame(data, copy=False)

    @cached_property
    def has_device(self) -> bool:
        """Whether any event ran on a device (asked by many tables: computed once)."""
        return bool(np.isin(np.unique(self.kind), DEVICE_KINDS).any())
