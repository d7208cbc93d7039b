"""The Timeline view's data: every event of the profiled steps as compact typed arrays.

The front end (the labextension's canvas timeline) draws this payload in the live
explorer and in a saved notebook without a kernel, so it holds everything the view
shows: lanes, events, launch-to-kernel flows, memory counters and step boundaries.
Arrays travel as base64 of little-endian typed arrays, which a browser decodes into a
``Float64Array`` / ``Uint32Array``... without parsing a number per event.

The payload (version 1); times are µs relative to ``origin_us``:

- ``version``: 1. ``title``: what the view shows ("Timeline of the 3 profiled steps").
- ``origin_us``: the window's start on the trace's clock (the first profiled step's start).
- ``span_us``: ``[0, end]``, the profiled window; an event that overlaps its edge keeps its
  whole duration, so it may reach a little past it.
- ``strings``: every name, shape and stack frame the events refer to. Untrusted text from
  the trace: the front end sets it as text, never as markup.
- ``categories``: the category names ``cat`` indexes: ``step, operator, annotation, runtime,
  dataloader, kernel, nccl, memcpy, memset, other``.
- ``lanes``: in display order, ``{id, kind, label, rows, device}``: ``kind`` is ``steps``,
  ``thread`` (host operators, annotations and runtime calls, nested by depth),
  ``dataloader`` (DataLoader fetches), ``stream`` (a GPU stream's kernels, copies,
  memsets and NCCL kernels) or ``memory`` (the counters); ``rows`` is how many nesting
  levels the lane has; ``device`` is ``"cuda:0"``-style for streams and memory, else null.
- ``events``: ``n`` and the arrays ``start`` (Float64), ``dur`` (Float32), ``lane``
  (Uint16, a lane id), ``depth`` (Uint8), ``name`` (Uint32 into ``strings``), ``cat``
  (Uint8 into ``categories``), ``count`` (Uint32: 1 for one event, N for an aggregate of N
  events merged by the cap), ``busy`` (Float32: the summed duration of the events an
  aggregate merged; equal to ``dur`` for one event), ``shapes`` (Int32 into ``strings``,
  -1 without ``--shapes``) and ``stack`` (Int32 into ``stacks``, -1 without ``--stack``).
  Sorted by (lane, start).
- ``stacks``: Python stacks as lists of string indices, innermost frame last; ``user_frames``:
  the string indices of the frames in the user's own code (``frames.user_frame``).
- ``flows``: ``n``, ``src`` and ``dst`` (Uint32 event indices): a runtime launch and the
  kernel, copy or memset it launched (same correlation id). Events merged into an
  aggregate have no flow.
- ``counters``: ``{name, unit, device, lane, t, v}`` per series (``allocated`` and
  ``reserved`` bytes per device), ``t`` and ``v`` Float64 arrays; the first point may lie
  before the window, giving the level the window starts at. A series of more than
  ``2 * MAX_COUNTER_BUCKETS`` points keeps its first and, per one of ``MAX_COUNTER_BUCKETS``
  equal slices of its time span, the lowest, the highest and the last point (in time
  order): every peak and trough a screen can show, in a fraction of the bytes.
- ``steps``: ``{step, start, end}`` per profiled step, the boundaries the report's per-step
  figures use (host ranges stretched over the device work they launched).
- ``aggregated``: null, or ``{events, below_us, cap, saved}`` when the trace had more than
  ``cap`` events in the window (``MAX_TIMELINE_EVENTS``; ``SAVED_TIMELINE_EVENTS`` for the
  payload a saved report keeps, ``saved``): then, per lane and depth, each run of
  consecutive events shorter than ``below_us`` and less than ``below_us`` apart became one
  event named "N events" (``events`` of them merged in all), with ``below_us`` the
  smallest threshold that fits the cap. ``merged`` says what each of them holds, by name.
- ``total_events``: how many events the window holds before any merging (the steps' included).
- ``trace_name``: a file name for the trace download (Perfetto).

Python frames (``--stack``) are not drawn as events: they are each operator's ``stack``.
"""
from __future__ import annotations

import base64
import functools
import importlib.metadata
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..analysis.event_kinds import of_kind
from ..analysis.frames import user_frame
from ..analysis.intervals import innermost_around, parent_index
from ..analysis.links import launching_runtime
from ..analysis.steps import dataloader_names
from ..trace.table import DEVICE_WORK_KINDS, EventTable, Kind, thread_key
from .escape import esc

if TYPE_CHECKING:
    from ..report.report import Report

TIMELINE_MIME = "application/vnd.nbprofiler.timeline+json"
MAX_TIMELINE_EVENTS = 100_000
# What the saved report keeps (the timeline in the notebook file): about 1.5 MB of JSON.
SAVED_TIMELINE_EVENTS = 20_000
VERSION = 1
MAX_COUNTER_BUCKETS = 4096

CATEGORIES = ("step", "operator", "annotation", "runtime", "dataloader", "kernel", "nccl", "memcpy", "memset", "other")
_CAT = {name: i for i, name in enumerate(CATEGORIES)}
_HOST_KINDS = (Kind.CPU_OP, Kind.USER_ANNOTATION, Kind.RUNTIME)
_KIND_CATEGORY = {Kind.CPU_OP: "operator", Kind.USER_ANNOTATION: "annotation", Kind.RUNTIME: "runtime",
                  Kind.KERNEL: "kernel", Kind.MEMCPY: "memcpy", Kind.MEMSET: "memset"}
_MAX_DEPTH = 255  # the depth array is Uint8
_COLLECTIVE = re.compile("nccl|rccl", re.IGNORECASE)  # kernels drawn as "nccl" (NCCL, and ROCm's RCCL)


def display_bundle(payload: dict[str, Any] | None) -> dict[str, Any] | None:
    """The Timeline as a display bundle: the payload for the extension's renderer, and one
    line of HTML for front ends without it (nbconvert, GitHub, classic Notebook)."""
    if payload is None:
        return None
    line = ("The timeline needs the nbprofiler JupyterLab extension. To view the trace elsewhere, export it with "
            f"report.export_chrome_trace(\"{payload['trace_name']}\") and open the file at https://ui.perfetto.dev.")
    return {TIMELINE_MIME: payload, "text/html": f'<p class="nbprofiler-timeline-fallback">{esc(line)}</p>'}


def _b64(values: np.ndarray, dtype: str) -> str:
    return base64.b64encode(np.ascontiguousarray(values, dtype=dtype).tobytes()).decode("ascii")


class _Strings:
    """The payload's string table: trace names by name code, and any other text, each once."""

    def __init__(self, names: np.ndarray) -> None:
        self.names = names
        self.items: list[str] = []
        self.index: dict[str, int] = {}
        self.by_code = np.full(len(names), -1, dtype=np.int64)

    def add(self, text: str) -> int:
        if text not in self.index:
            self.index[text] = len(self.items)
            self.items.append(text)
        return self.index[text]

    def codes(self, name_code: np.ndarray) -> np.ndarray:
        """String indices for trace name codes, interning each distinct name once."""
        for c in np.flatnonzero(np.bincount(name_code, minlength=len(self.names))).tolist():  # each code used
            if self.by_code[c] < 0:
                self.by_code[c] = self.add(str(self.names[c]))
        return self.by_code[name_code]


def _window(report: "Report", table: EventTable) -> tuple[float, float, pd.DataFrame]:
    """The profiled window (absolute µs) and its steps: the report's stretched steps, else
    the trace's step ranges, else the whole trace."""
    steps = report.stretched_steps
    if steps.empty:
        steps = report.trace_steps
    if len(steps):
        return float(steps["start_us"].min()), float(steps["end_us"].max()), steps
    ts = table["ts"]
    return float(ts.min()), float((ts + table["dur"]).max()), steps


def _by_lane_and_start(lane: np.ndarray, start: np.ndarray, dur: np.ndarray) -> np.ndarray:
    """The order by (lane, start, -duration): an outer range before the ranges it holds.

    One stable sort by start (a merge sort that runs through the trace's mostly ordered
    times), a sort of only the events that share a start, then a stable radix sort by lane:
    several times faster than ``np.lexsort`` on a million events.
    """
    order = np.argsort(start, kind="stable")
    s = start[order]
    tied = np.zeros(len(s), dtype=bool)
    same = s[1:] == s[:-1]
    tied[1:] |= same
    tied[:-1] |= same
    at = np.flatnonzero(tied)  # groups of equal starts are contiguous: reorder them in place
    if len(at):
        order[at] = order[at][np.lexsort((-dur[order[at]], s[at]))]
    return order[np.argsort(lane[order].astype(np.uint16), kind="stable")]


def _nesting_depth(lane: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """For events sorted by (lane, start, -duration), how many events of the same lane are
    open at each one's start: its nesting level. An instant counts as open for the
    smallest time step after it, so it never closes before it opened."""
    depth = np.zeros(len(start), dtype=np.int64)
    instant = np.flatnonzero(~(end > start))
    if len(instant):
        end = end.copy()
        end[instant] = np.nextafter(start[instant], np.inf)
    bounds = np.flatnonzero(np.diff(lane)) + 1
    for lo, hi in zip(np.concatenate(([0], bounds)), np.concatenate((bounds, [len(lane)]))):
        # Ends come nearly in order: a stable (merge) sort runs through them twice as fast.
        closed = np.searchsorted(np.sort(end[lo:hi], kind="stable"), start[lo:hi], side="right")
        depth[lo:hi] = np.arange(hi - lo) - closed
    return depth


class _Lanes:
    """The lanes in display order, with the lane id of each selected event."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def add(self, kind: str, label: str, device: str | None = None) -> int:
        self.rows.append({"id": len(self.rows), "kind": kind, "label": label, "rows": 1, "device": device})
        return len(self.rows) - 1


def _thread_labels(table: EventTable, events: np.ndarray, main: int | None) -> list[str]:
    """A label per thread of ``events`` (one event of each) as the trace names the thread
    ("thread 1234 (python)"), with the process when the lanes span several."""
    names = dict(table.meta.thread_names)
    pid, tid = table["pid"][events].tolist(), table["tid"][events].tolist()
    several = len(set(pid)) > 1
    out = []
    for key, p, t in zip(table.thread[events].tolist(), pid, tid):
        label = names.get(t, "").strip() or f"thread {t}"
        if key == main and "(" not in label:
            label += " (main)"
        out.append(f"process {p}, {label}" if several else label)
    return out


def _first_of_each(codes: np.ndarray, n: int) -> np.ndarray:
    """The position of the first occurrence of each code ``0..n-1``."""
    first = np.zeros(n, dtype=np.int64)
    first[codes[::-1]] = np.arange(len(codes) - 1, -1, -1)
    return first


def _assign_lanes(table: EventTable, idx: np.ndarray, is_dl: np.ndarray, main: int | None,
                  lanes: _Lanes) -> np.ndarray:
    """Lane ids for the selected events ``idx``: threads (the main one first, then by
    thread id), the DataLoader, then the GPU streams by device and stream."""
    lane = np.zeros(len(idx), dtype=np.int64)
    kind = table.kind[idx]
    host = np.flatnonzero(of_kind(kind, _HOST_KINDS) & ~is_dl)
    code, threads = pd.factorize(table.thread[idx[host]], sort=True)
    shown = np.argsort(threads != main, kind="stable")  # the main thread first, the rest by id
    rank = np.empty(len(threads), dtype=np.int64)
    rank[shown] = np.arange(len(threads))
    events = idx[host][_first_of_each(code, len(threads))][shown]
    first = len(lanes.rows)
    for label in _thread_labels(table, events, main):
        lanes.add("thread", label)
    lane[host] = first + rank[code]
    if is_dl.any():
        lane[is_dl] = lanes.add("dataloader", "DataLoader")
    dev = np.flatnonzero(of_kind(kind, DEVICE_WORK_KINDS))
    device, stream = table["device"][idx[dev]], table["stream"][idx[dev]]
    code, pairs = pd.factorize(device * (1 << 32) + stream, sort=True)
    first = len(lanes.rows)
    for pair in pairs.tolist():
        lanes.add("stream", f"GPU {pair >> 32} stream {pair - ((pair >> 32) << 32)}", f"cuda:{pair >> 32}")
    lane[dev] = first + code
    return lane


def _stacks(table: EventTable, idx: np.ndarray, strings: _Strings) -> tuple[np.ndarray, list[list[int]]]:
    """Each selected event's Python stack (index into the returned list, -1 none), innermost
    frame last: from the ``--stack`` frame ranges around it, or the 2021 schema's ``Call stack``."""
    out = np.full(len(idx), -1, dtype=np.int64)
    stacks: list[list[int]] = []
    seen: dict[tuple[int, ...], int] = {}

    def intern(frames: tuple[int, ...]) -> int:
        if frames not in seen:
            seen[frames] = len(stacks)
            stacks.append(list(frames))
        return seen[frames]

    py = np.flatnonzero(table.kind == Kind.PYTHON_FUNCTION)
    host = np.flatnonzero(of_kind(table.kind[idx], _HOST_KINDS)) if len(py) else idx[:0]
    if len(py) and len(host):
        start, end, thread = table["ts"][py], table["ts"][py] + table["dur"][py], table.thread[py]
        parent = parent_index(start, end, thread)
        frame = innermost_around(start, end, thread, parent, np.lexsort((start, thread)),
                                 table.thread[idx[host]], table["ts"][idx[host]])
        name = strings.codes(table.name_code[py]) if len(py) else np.empty(0, dtype=np.int64)
        chain: dict[int, tuple[int, ...]] = {}
        for f in np.unique(frame[frame >= 0]).tolist():
            path = []
            node = f
            while node >= 0 and node not in chain:
                path.append(node)
                node = int(parent[node])
            above = chain[node] if node >= 0 else ()
            for p in reversed(path):
                above = chain[p] = (*above, int(name[p]))
        stack_of = {f: intern(chain[f]) for f in np.unique(frame[frame >= 0]).tolist()}
        found = frame >= 0
        out[host[found]] = [stack_of[f] for f in frame[found].tolist()]
    elif table.call_stack is not None:
        texts = table.call_stack[idx]
        has = np.flatnonzero(pd.notna(texts) & (texts != ""))
        by_text: dict[str, int] = {}
        for i in has.tolist():
            text = str(texts[i])
            if text not in by_text:
                by_text[text] = intern(tuple(strings.add(f) for f in reversed(text.split(";")) if f))
            out[i] = by_text[text]
    return out, stacks


def _user_frames(stacks: list[list[int]], strings: list[str]) -> list[int]:
    """The stack frames (string indices) in the user's own code: a stack's details open at the first
    of them, with the framework frames around it folded. ``frames.user_frame`` knows library files
    by their paths; torch's tracer writes a file found on ``sys.path`` relative to it
    (``tornado/ioloop.py``, ``pluggy/_callers.py``), so a relative file whose top-level module is an
    installed package's is a library's too."""
    codes = {c for stack in stacks for c in stack}
    if not codes:
        return []
    installed = _installed_modules()

    def users(name: str) -> bool:
        m = user_frame(name)
        if m is None:
            return False
        file = m["file"]
        return _ABSOLUTE.match(file) is not None or re.split(r"[/\\.]", file, maxsplit=1)[0] not in installed

    return sorted(code for code in codes if users(strings[code]))


_ABSOLUTE = re.compile(r"^(/|\\|<|[A-Za-z]:[/\\])")


@functools.cache
def _installed_modules() -> frozenset[str]:
    """The top-level modules of the installed distributions (read once per process)."""
    return frozenset(importlib.metadata.packages_distributions())


def _shapes(table: EventTable, idx: np.ndarray, strings: _Strings) -> np.ndarray:
    """Each selected event's input shapes (``--shapes``) as a string index, -1 none."""
    out = np.full(len(idx), -1, dtype=np.int64)
    if table.input_dims is None:
        return out
    codes, uniques = pd.factorize(table.input_dims[idx], use_na_sentinel=True)
    text = np.array([strings.add(u.decode("utf-8", "replace")) for u in uniques], dtype=np.int64)
    has = codes >= 0
    out[has] = text[codes[has]]
    return out


def _aggregate(ev: dict[str, np.ndarray], cap: int
               ) -> tuple[dict[str, np.ndarray], float | None, int, tuple[np.ndarray, np.ndarray]]:
    """Merge runs of short events per lane and depth until at most ``cap`` remain (see the
    module docstring); returns the events, ``below_us`` (None when nothing merged), how
    many events were merged, and the members of the aggregates: (each merged event's
    aggregate, as its index in the events returned; its ``pos``). ``pos`` of an aggregate is -1."""
    n = len(ev["start"])
    none = np.zeros(0, dtype=np.int64)
    if n <= cap:
        return ev, None, 0, (none, none)
    key = ev["lane"] * (_MAX_DEPTH + 1) + ev["depth"]  # small: a lookup table ranks them, no hashing
    present = np.zeros(int(key.max()) + 1, dtype=bool)
    present[key] = True
    group = (np.cumsum(present) - 1)[key].astype(np.uint16)
    order = np.argsort(group, kind="stable")  # events are by (lane, start): now by (lane, depth, start)
    g, s, d = group[order], ev["start"][order], ev["dur"][order]
    e = s + d
    # A pair of neighbours merges below a threshold above both durations and the gap between them.
    key = np.maximum(np.maximum(d[:-1], d[1:]), s[1:] - e[:-1])
    key[g[1:] != g[:-1]] = np.inf
    need = n - cap  # pairs to merge
    kth = float(np.partition(key, need - 1)[need - 1])
    if not np.isfinite(kth):
        raise ValueError(f"the timeline has more lanes and levels than its {cap} event cap")
    below = float(np.nextafter(kth, np.inf))
    run_start = np.concatenate(([True], ~(key < below)))
    firsts = np.flatnonzero(run_start)
    count = np.diff(np.concatenate((firsts, [n])))
    run_end = np.maximum.reduceat(e, firsts)
    cat_lo, cat_hi = np.minimum.reduceat(ev["cat"][order], firsts), np.maximum.reduceat(ev["cat"][order], firsts)
    single = order[firsts]
    out = {k: v[single] for k, v in ev.items()}
    many = count > 1
    out["dur"] = np.where(many, run_end - s[firsts], out["dur"])
    out["busy"] = np.add.reduceat(d, firsts)
    out["count"] = count
    out["cat"] = np.where(many & (cat_lo != cat_hi), _CAT["other"], cat_lo)
    out["pos"] = np.where(many, -1, out["pos"])  # an aggregate is no one event: named by the caller
    back = _by_lane_and_start(out["lane"], out["start"], out["dur"])
    final = np.empty(len(back), dtype=np.int64)
    final[back] = np.arange(len(back))
    run = np.repeat(np.arange(len(firsts)), count)
    merged_member = many[run]
    members = (final[run[merged_member]], ev["pos"][order][merged_member])
    return {k: v[back] for k, v in out.items()}, below, int(count[many].sum()), members


def _merged_names(member_of: np.ndarray, member_pos: np.ndarray, n_steps: int, traced_name: np.ndarray,
                  step_name: np.ndarray) -> dict[str, Any]:
    """What each aggregate holds, by name: (aggregate, name, how many) triples. A search by name
    counts and finds the events merged for drawing through them, as the tables count them."""
    if len(member_pos) == 0:
        return {"n": 0, "event": "", "name": "", "count": ""}
    row = member_pos - n_steps
    name = traced_name[np.clip(row, 0, None)] if len(traced_name) else np.zeros(len(row), dtype=np.int64)
    if n_steps:
        name = np.where(row < 0, step_name[np.clip(member_pos, 0, n_steps - 1)], name)
    width = int(name.max()) + 1
    pairs, count = np.unique(member_of * width + name, return_counts=True)
    return {"n": len(pairs), "event": _b64(pairs // width, "<u4"), "name": _b64(pairs % width, "<u4"),
            "count": _b64(count, "<u4")}


def _counters(report: "Report", lo: float, hi: float, lanes: _Lanes) -> list[dict[str, Any]]:
    """Allocated and reserved bytes per device over the window, each device a memory lane."""
    memory = report.memory
    out: list[dict[str, Any]] = []
    if memory.empty:
        return out
    code, devices = pd.factorize(memory["device"].to_numpy(), sort=True)  # as objects: twice as fast as the str column
    ts_all = memory["ts"].to_numpy(dtype=np.float64)
    values = {c: memory[c].to_numpy(dtype=np.float64) for c in ("allocated_bytes", "reserved_bytes")}
    for i, device in enumerate(devices.tolist()):
        rows = np.flatnonzero(code == i)  # time-sorted, as memory_timeline gives them
        ts = ts_all[rows]
        first = max(int(np.searchsorted(ts, lo, side="left")) - 1, 0)
        last = int(np.searchsorted(ts, hi, side="right"))
        if last <= first:
            continue
        lane = lanes.add("memory", f"Memory {device}", str(device))
        for name, column in (("allocated", "allocated_bytes"), ("reserved", "reserved_bytes")):
            v = values[column][rows[first:last]]
            keep = np.flatnonzero(~np.isnan(v))
            if len(keep):
                keep = keep[_envelope(ts[first:last][keep], v[keep], MAX_COUNTER_BUCKETS)]
                out.append({"name": name, "unit": "bytes", "device": str(device), "lane": lane,
                            "t": _b64(ts[first:last][keep] - lo, "<f8"), "v": _b64(v[keep], "<f8")})
    return out


def _envelope(t: np.ndarray, v: np.ndarray, buckets: int) -> np.ndarray:
    """Positions of the points of a time-sorted series to draw: all of them up to
    ``2 * buckets``; else the first (the level the window starts at) and, per equal slice of
    the time span, the first lowest, the first highest and the last point, in time order."""
    n = len(t)
    if n <= 2 * buckets:
        return np.arange(n)
    span = float(t[-1] - t[0]) or 1.0
    bucket = np.minimum(((t - t[0]) * (buckets / span)).astype(np.int64), buckets - 1)
    starts = np.flatnonzero(np.concatenate(([True], bucket[1:] != bucket[:-1])))
    ends = np.concatenate((starts[1:], [n]))
    sizes = ends - starts

    def first_where(hit: np.ndarray) -> np.ndarray:
        at = np.flatnonzero(hit)
        return at[np.concatenate(([True], bucket[at][1:] != bucket[at][:-1]))]

    low = first_where(v == np.repeat(np.minimum.reduceat(v, starts), sizes))
    high = first_where(v == np.repeat(np.maximum.reduceat(v, starts), sizes))
    return np.unique(np.concatenate(([0], low, high, ends - 1)))


def _trace_name(report: "Report") -> str:
    if report.source_path:
        name = Path(report.source_path).name
        return name[:-3] if name.endswith(".gz") else name
    return "nbprofiler.pt.trace.json"


def build(report: "Report", saved: bool = False) -> dict[str, Any] | None:
    """The payload of ``report``, built now (its view model builds it once and keeps it:
    ``view_model.of(report).timeline_payload``), with at most ``MAX_TIMELINE_EVENTS`` events drawn;
    ``saved``: at most ``SAVED_TIMELINE_EVENTS``, for the saved report (``saved_timeline_payload``)."""
    cap = SAVED_TIMELINE_EVENTS if saved else MAX_TIMELINE_EVENTS
    table = report.table
    if len(table) == 0:
        return None
    lo, hi, steps = _window(report, table)
    ts, dur = table["ts"], table["dur"]
    names = [str(n) for n in table.names]  # per distinct name: a few hundred, plain Python beats pandas here
    is_step_name = np.array([n.startswith("ProfilerStep#") for n in names], dtype=bool)
    drawn = of_kind(table.kind, (*_HOST_KINDS, *DEVICE_WORK_KINDS)) & ~is_step_name[table.name_code]
    idx = np.flatnonzero(drawn & (ts <= hi) & (ts + dur >= lo))
    is_dl = dataloader_names(table)[table.name_code[idx]] & (table.kind[idx] != Kind.RUNTIME)

    lanes = _Lanes()
    strings = _Strings(table.names)
    step_lane = lanes.add("steps", "Steps") if len(steps) else -1
    host_steps = report.trace_steps  # the thread that ran the steps: the main one, drawn first
    main = None
    if len(host_steps) and int(host_steps["pid"].iloc[0]) >= 0:
        main = int(thread_key(host_steps["pid"].to_numpy()[:1], host_steps["tid"].to_numpy()[:1])[0])
    lane = _assign_lanes(table, idx, is_dl, main, lanes)

    kind = table.kind[idx]
    cat_of_kind = np.full(max(Kind) + 1, _CAT["other"], dtype=np.uint8)
    for k, c in _KIND_CATEGORY.items():
        cat_of_kind[k] = _CAT[c]
    cat = cat_of_kind[kind]
    cat[is_dl] = _CAT["dataloader"]
    kernel = kind == Kind.KERNEL
    nccl = np.array([_COLLECTIVE.search(n) is not None for n in names], dtype=bool)
    cat[kernel & nccl[table.name_code[idx]]] = _CAT["nccl"]
    stack, stacks = _stacks(table, idx, strings)
    # The steps' own rows come first. What the order, the nesting and the cap read is joined
    # here; the rest is read once, for the events kept: copying a million rows costs more.
    traced = {"source": idx, "name": strings.codes(table.name_code[idx]), "shapes": _shapes(table, idx, strings),
              "stack": stack}
    n_steps = len(steps)
    step_name = np.array([strings.add(f"step {int(s)}") for s in steps["step"]], dtype=np.int64)
    cols = {
        "start": np.concatenate((steps["start_us"].to_numpy(dtype=np.float64) - lo, ts[idx] - lo)),
        "dur": np.concatenate(((steps["end_us"] - steps["start_us"]).to_numpy(dtype=np.float64), dur[idx])),
        "lane": np.concatenate((np.full(n_steps, step_lane), lane)),
        "cat": np.concatenate((np.full(n_steps, _CAT["step"]), cat)),
    }
    order = _by_lane_and_start(cols["lane"], cols["start"], cols["dur"])
    # Reordered now: what the nesting and the cap read (``pos``: each event's row in ``cols``).
    ev = {column: cols[column][order] for column in ("start", "dur", "lane", "cat")}
    ev["pos"] = order
    ev["depth"] = np.minimum(_nesting_depth(ev["lane"], ev["start"], ev["start"] + ev["dur"]), _MAX_DEPTH)
    ev["busy"] = ev["dur"]
    ev["count"] = np.ones(len(ev["start"]), dtype=np.int64)
    total = len(ev["start"])
    ev, below, merged, (member_of, member_pos) = _aggregate(ev, cap)
    row = ev["pos"] - n_steps  # the row in ``traced``; < 0 for a step or an aggregate
    for column in ("source", "name", "shapes", "stack"):
        # -1 appended for the steps and aggregates, so that a window with no drawn event (steps only) reads too.
        with_none = np.append(traced[column], -1)
        ev[column] = with_none[np.where(row >= 0, row, len(with_none) - 1)]
    is_step = (ev["pos"] >= 0) & (row < 0)
    ev["name"][is_step] = step_name[ev["pos"][is_step]]
    merged_names = _merged_names(member_of, member_pos, n_steps, traced["name"], step_name)
    if below is not None:
        many = ev["count"] > 1
        counts = ev["count"][many]
        code, distinct = pd.factorize(counts)  # in order of first use
        ev["name"][many] = np.array([strings.add(f"{c} events") for c in distinct.tolist()], dtype=np.int64)[code]

    rows = np.zeros(len(lanes.rows), dtype=np.int64)
    np.maximum.at(rows, ev["lane"], ev["depth"] + 1)

    # Flows: a kept launch to the kept device activity it launched.
    position = np.full(len(table), -1, dtype=np.int64)
    kept = ev["source"] >= 0
    position[ev["source"][kept]] = np.flatnonzero(kept)
    device_events = ev["source"][kept][of_kind(table.kind[ev["source"][kept]], DEVICE_WORK_KINDS)]
    runtime = launching_runtime(table, device_events)
    src = np.where(runtime >= 0, position[np.maximum(runtime, 0)], -1)
    linked = src >= 0
    flow_src, flow_dst = src[linked], position[device_events[linked]]

    counters = _counters(report, lo, hi, lanes)
    for lane_row, n_rows in zip(lanes.rows, rows.tolist()):
        lane_row["rows"] = max(n_rows, 1)
    window = report.step_window
    return {
        "version": VERSION,
        "title": f"Timeline of {window.label}" if window.steps else "Timeline of the whole trace",
        "origin_us": lo,
        "span_us": [0.0, hi - lo],
        "strings": strings.items,
        "categories": list(CATEGORIES),
        "lanes": lanes.rows,
        "events": {
            "n": len(ev["start"]),
            "start": _b64(ev["start"], "<f8"), "dur": _b64(ev["dur"], "<f4"), "lane": _b64(ev["lane"], "<u2"),
            "depth": _b64(ev["depth"], "<u1"), "name": _b64(ev["name"], "<u4"), "cat": _b64(ev["cat"], "<u1"),
            "count": _b64(ev["count"], "<u4"), "busy": _b64(ev["busy"], "<f4"),
            "shapes": _b64(ev["shapes"], "<i4"), "stack": _b64(ev["stack"], "<i4"),
        },
        "stacks": stacks,
        "user_frames": _user_frames(stacks, strings.items),
        "flows": {"n": int(linked.sum()), "src": _b64(flow_src, "<u4"), "dst": _b64(flow_dst, "<u4")},
        "counters": counters,
        "steps": [{"step": int(s), "start": float(a) - lo, "end": float(b) - lo}
                  for s, a, b in zip(steps["step"], steps["start_us"], steps["end_us"])],
        "aggregated": None if below is None else {"events": merged, "below_us": below, "cap": cap, "saved": saved},
        "merged": merged_names,
        "total_events": total,
        "trace_name": _trace_name(report),
    }
