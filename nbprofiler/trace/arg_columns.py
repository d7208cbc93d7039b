"""Which ``args`` each event kind carries: the parser reads an arg only on those kinds.

Why: reading every arg of every event, though most events lack most of them, was
the larger part of building the columns. torch writes each arg on a few kinds
only (a kernel's occupancy, a memory event's address, an operator's shapes), so
each column lists the kinds it is read on; every other kind gets the column's
"absent" value, as it would have from a trace without the arg. Kinds whose args
nothing here knows (``OTHER``, the profiler's ``TRACE_SPAN``) are read whole.
The lists are generous: a kind is listed where any torch version may write the
arg, not only where the shared traces do.
"""
from __future__ import annotations

from dataclasses import dataclass

from .table import DEVICE_KINDS, Kind

HOST_OPS = (Kind.CPU_OP, Kind.USER_ANNOTATION)
LAUNCH_AND_DEVICE = (Kind.RUNTIME, *DEVICE_KINDS)
# Collectives: their record_param_comms op on the host, and (newer torch) their NCCL kernel.
COLLECTIVE_KINDS = (*HOST_OPS, *DEVICE_KINDS)
READ_WHOLE = (Kind.OTHER, Kind.TRACE_SPAN)


@dataclass(frozen=True)
class ArgColumn:
    """One column filled from ``schema.Args``."""

    column: str
    fields: tuple[str, ...]  # ``Args`` attributes: two spellings of one arg, the first present wins
    kinds: tuple[Kind, ...]  # the kinds whose events carry it (``READ_WHOLE`` is added)
    integer: bool = False


NUMERIC = (
    ArgColumn("correlation", ("correlation",), LAUNCH_AND_DEVICE, integer=True),
    ArgColumn("external_id", ("external_id", "external_id_old"), (*HOST_OPS, *LAUNCH_AND_DEVICE), integer=True),
    ArgColumn("device", ("device",), LAUNCH_AND_DEVICE, integer=True),
    ArgColumn("stream", ("stream",), LAUNCH_AND_DEVICE, integer=True),
    ArgColumn("bytes", ("bytes", "mem_bytes"), (*DEVICE_KINDS, Kind.MEMORY)),
    ArgColumn("blocks_per_sm", ("blocks_per_sm",), (Kind.KERNEL,)),
    ArgColumn("occupancy", ("occupancy",), (Kind.KERNEL,)),
    ArgColumn("total_allocated", ("total_allocated",), (Kind.MEMORY,)),
    ArgColumn("total_reserved", ("total_reserved",), (Kind.MEMORY,)),
    ArgColumn("seq", ("seq",), HOST_OPS, integer=True),
    ArgColumn("fwd_thread", ("fwd_thread",), HOST_OPS, integer=True),
    ArgColumn("python_id", ("python_id",), (Kind.PYTHON_FUNCTION,), integer=True),
    ArgColumn("python_parent_id", ("python_parent_id",), (Kind.PYTHON_FUNCTION,), integer=True),
    ArgColumn("mem_device_type", ("mem_device_type",), (Kind.MEMORY,), integer=True),
    ArgColumn("mem_device_id", ("mem_device_id",), (Kind.MEMORY,), integer=True),
    ArgColumn("addr", ("addr",), (Kind.MEMORY,), integer=True),
    ArgColumn("flops", ("flops",), HOST_OPS),
    ArgColumn("msg_in_nelems", ("msg_in_nelems",), COLLECTIVE_KINDS),
    ArgColumn("msg_out_nelems", ("msg_out_nelems",), COLLECTIVE_KINDS),
    ArgColumn("group_size", ("group_size",), COLLECTIVE_KINDS),
)

# The object columns (kept only where some event has a value), by the kinds that carry them.
# Raw JSON (shapes, dtypes, argument values), decoded only where an analysis needs it:
RAW_JSON_KINDS: dict[str, tuple[Kind, ...]] = {
    "input_dims": HOST_OPS, "input_types": HOST_OPS, "concrete_inputs": HOST_OPS}
# Text:
TEXT_KINDS: dict[str, tuple[Kind, ...]] = {
    "call_stack": HOST_OPS, "collective": COLLECTIVE_KINDS, "comm_dtype": COLLECTIVE_KINDS}
