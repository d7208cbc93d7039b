"""The subset of the Chrome trace format that nbprofiler reads.

msgspec decodes only the fields declared here and skips the rest without
building Python objects for them, which is what keeps loading fast and small.
Types are deliberately loose (``int | float | str``): real traces disagree on
them (``"tid": "stream 7"``, ``"stream": "0x0"`` on ROCm, integer or fractional
timestamps), and coercion to columns happens in one place, ``columns.py``.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, ClassVar, Protocol, TypeAlias, Union

import msgspec

Scalar = int | float | str | None

# The default of every numeric arg: one shared NaN object, never a value msgspec decodes
# (JSON has no NaN), so ``value is ABSENT`` still says the key was missing. numpy turns a
# column of floats into an array several times faster than one holding None, and most
# events lack most args, so a None default would make those columns the slow kind.
ABSENT: float = math.nan


class Args(msgspec.Struct, omit_defaults=True):
    """Event ``args``: only the keys some analysis needs."""

    external_id: Scalar = msgspec.field(default=ABSENT, name="External id")
    external_id_old: Scalar = msgspec.field(default=ABSENT, name="external id")
    correlation: Scalar = ABSENT
    device: Scalar = ABSENT
    stream: Scalar = ABSENT
    bytes: Scalar = ABSENT
    blocks_per_sm: Scalar = msgspec.field(default=ABSENT, name="blocks per SM")
    occupancy: Scalar = msgspec.field(default=ABSENT, name="est. achieved occupancy %")
    seq: Scalar = msgspec.field(default=ABSENT, name="Sequence number")
    fwd_thread: Scalar = msgspec.field(default=ABSENT, name="Fwd thread id")
    python_id: Scalar = msgspec.field(default=ABSENT, name="Python id")
    python_parent_id: Scalar = msgspec.field(default=ABSENT, name="Python parent id")
    mem_device_type: Scalar = msgspec.field(default=ABSENT, name="Device Type")
    mem_device_id: Scalar = msgspec.field(default=ABSENT, name="Device Id")
    mem_bytes: Scalar = msgspec.field(default=ABSENT, name="Bytes")
    total_allocated: Scalar = msgspec.field(default=ABSENT, name="Total Allocated")
    total_reserved: Scalar = msgspec.field(default=ABSENT, name="Total Reserved")
    addr: Scalar = msgspec.field(default=ABSENT, name="Addr")
    flops: Scalar = ABSENT  # with_flops (--flops): the operator's FLOPs as torch counts them
    # A collective's own op (record_param_comms): what it moved, among how many ranks.
    msg_in_nelems: Scalar = msgspec.field(default=ABSENT, name="In msg nelems")
    msg_out_nelems: Scalar = msgspec.field(default=ABSENT, name="Out msg nelems")
    group_size: Scalar = msgspec.field(default=ABSENT, name="Group size")
    collective: Scalar = msgspec.field(default=None, name="Collective name")
    comm_dtype: Scalar = msgspec.field(default=None, name="dtype")
    # Kept raw: decoded only on demand (shapes, stacks), never for every event.
    input_dims: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw, name="Input Dims")
    input_types: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw, name="Input type")
    # The values of scalar and list arguments (stride, padding, output_mask...), "" for tensors.
    concrete_inputs: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw, name="Concrete Inputs")
    call_stack: Scalar = msgspec.field(default=None, name="Call stack")
    name: Scalar = None  # metadata events: process_name / thread_name


class _EventFields(msgspec.Struct):
    """The fields of an event nbprofiler keeps (``ph`` aside)."""

    name: Scalar = ""
    cat: Scalar = None
    pid: Scalar = None
    tid: Scalar = None
    ts: Scalar = ABSENT
    dur: Scalar = ABSENT  # instants have none
    args: Args | None = None


class Event(_EventFields):
    """One entry of ``traceEvents``, whatever its phase: read where an event's phase is
    unknown, and to tell whose trace a refused file is."""

    ph: str = ""


# -- events by phase ---------------------------------------------------------------------
# A tagged union on "ph": msgspec picks each event's struct from its phase, so the
# phases nbprofiler keeps are decoded whole, and every other phase (a quarter of a
# torch trace is "s"/"f" flow arrows) is skipped unread, as a struct with no fields.
# A phase outside this list fails the union, and its batch is decoded event by event.
# Each struct's ``ph`` is a class attribute, so code reads ``event.ph`` alike on all.

# Each kept phase decodes only the args torch writes on it: a memory instant's
# allocation figures, and everything else on complete events. The args a struct
# leaves out read as absent (class attributes), so every struct answers every
# ``Args`` name; fewer fields make each event cheaper to build and to free.
_MEMORY_ARGS = ("mem_device_type", "mem_device_id", "mem_bytes", "total_allocated", "total_reserved", "addr")


def _args_with(name: str, decoded: frozenset[str]) -> type[msgspec.Struct]:
    """``Args`` decoding only the fields in ``decoded``; the others are its defaults, unread."""
    fields: list[tuple[str, object, object]] = []
    absent: dict[str, object] = {}
    for f in msgspec.structs.fields(Args):
        if f.name in decoded:
            fields.append((f.name, f.type, msgspec.field(default=f.default, name=f.encode_name)
                           if f.default is not msgspec.NODEFAULT
                           else msgspec.field(default_factory=f.default_factory, name=f.encode_name)))
        else:
            absent[f.name] = f.default if f.default is not msgspec.NODEFAULT else f.default_factory()
    return msgspec.defstruct(name, fields, namespace=absent, omit_defaults=True)


_ALL_ARGS = frozenset(Args.__struct_fields__)
if TYPE_CHECKING:  # built at run time; they answer every Args name
    CompleteArgs: TypeAlias = Args
    InstantArgs: TypeAlias = Args
else:
    CompleteArgs = _args_with("CompleteArgs", _ALL_ARGS - frozenset(_MEMORY_ARGS))
    InstantArgs = _args_with("InstantArgs", frozenset({*_MEMORY_ARGS, "bytes", "device"}))


class _Phased(_EventFields, tag_field="ph"):
    ph: ClassVar[str]


class Complete(_Phased, tag="X"):
    ph: ClassVar[str] = "X"
    args: CompleteArgs | None = None


class Instant(_Phased, tag="i"):
    ph: ClassVar[str] = "i"
    args: InstantArgs | None = None


class GlobalInstant(_Phased, tag="I"):  # the deprecated spelling of an instant
    ph: ClassVar[str] = "I"
    args: InstantArgs | None = None


class Metadata(_Phased, tag="M"):  # process and thread names
    ph: ClassVar[str] = "M"


class DecodedEvent(Protocol):
    """An event as the column builder reads it, decoded by phase or whole."""

    @property
    def ph(self) -> str: ...
    @property
    def name(self) -> Scalar: ...
    @property
    def cat(self) -> Scalar: ...
    @property
    def pid(self) -> Scalar: ...
    @property
    def tid(self) -> Scalar: ...
    @property
    def ts(self) -> Scalar: ...
    @property
    def dur(self) -> Scalar: ...
    @property
    def args(self) -> Args | None: ...


KEPT_PHASES = frozenset({"X", "i", "I"})
# Every other phase of the Chrome trace event format: durations (B/E), counters, async and
# flow events, samples, objects, marks, clock syncs and context markers.
_SKIPPED_PHASES = ("B", "E", "C", "b", "n", "e", "S", "T", "p", "F", "s", "t", "f", "P", "O", "N", "D", "V", "v",
                   "R", "c", "(", ")")
_SKIPPED = tuple(
    msgspec.defstruct(f"Skipped{i}", [], tag_field="ph", tag=phase, namespace={"ph": phase})
    for i, phase in enumerate(_SKIPPED_PHASES)
)
if TYPE_CHECKING:  # the union is built at run time; code reads every member through _EventFields' names
    PhasedEvent: TypeAlias = _Phased
else:
    PhasedEvent = Union[(Complete, Instant, GlobalInstant, Metadata, *_SKIPPED)]


class DeviceProperties(msgspec.Struct):
    """One entry of ``deviceProperties``."""

    id: Scalar = None
    name: Scalar = None
    totalGlobalMem: Scalar = None
    computeMajor: Scalar = None
    computeMinor: Scalar = None
    numSms: Scalar = None
    warpSize: Scalar = None
    maxThreadsPerMultiprocessor: Scalar = None


class DistributedInfo(msgspec.Struct):
    """``distributedInfo``: only what names a rank. The process-group list, which
    can have thousands of entries, is skipped unread."""

    rank: Scalar = None
    world_size: Scalar = None
    backend: Scalar = None


class _TraceFields(msgspec.Struct):
    """Everything of a trace but its events."""

    schemaVersion: Scalar = None
    deviceProperties: list[DeviceProperties] | None = None
    distributedInfo: DistributedInfo | None = None
    baseTimeNanoseconds: Scalar = None
    displayTimeUnit: Scalar = None


class Header(_TraceFields):
    """The trace with its events left undecoded, to be decoded in batches."""

    traceEvents: list[msgspec.Raw] | None = None


class EventsUnread(_TraceFields):
    """The trace with its event list kept as one raw slice, to be cut into chunks."""

    traceEvents: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)


class WholeTrace(_TraceFields):
    """The trace with its events decoded by phase, in one pass."""

    traceEvents: list[PhasedEvent] | None = None
