"""The subset of the Chrome trace format that nbprofiler reads.

msgspec decodes only the fields declared here and skips the rest without
building Python objects for them, which is what keeps loading fast and small.
Types are deliberately loose (``int | float | str``): real traces disagree on
them (``"tid": "stream 7"``, ``"stream": "0x0"`` on ROCm, integer or fractional
timestamps), and coercion to columns happens in one place, ``parser.py``.
"""
from __future__ import annotations

import math

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


class Event(msgspec.Struct):
    """One entry of ``traceEvents``."""

    ph: str = ""
    name: Scalar = ""
    cat: Scalar = None
    pid: Scalar = None
    tid: Scalar = None
    ts: Scalar = ABSENT
    dur: Scalar = ABSENT  # instants have none
    id: Scalar = None
    args: Args | None = None


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


class Header(msgspec.Struct):
    """Everything but the events, which are decoded separately in batches."""

    traceEvents: list[msgspec.Raw] | None = None
    schemaVersion: Scalar = None
    deviceProperties: list[DeviceProperties] | None = None
    distributedInfo: DistributedInfo | None = None
    baseTimeNanoseconds: Scalar = None
    displayTimeUnit: Scalar = None
