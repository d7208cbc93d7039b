"""A corpus of hostile ``.nbprof`` files, each made from a real saved report by one mutation.

A ``.nbprof`` file comes from someone else: whatever it holds, ``nbprofiler.load`` must
give a Report or raise ``TraceError``, and a Report it gives must render, save and export
without reading any path named inside the file. ``corpus(base, local)`` writes the files
into a folder; ``Base`` is a real saved report's parts (its members and its document) and
``LocalFiles`` the recipient's own files the corpus names: each holds ``SECRET_MARKER``,
which must never appear in anything saved, exported or rendered.

The mutations: the zip's structure (truncated, not a zip, member names with ``..`` or
absolute, duplicate members, symlink entries, an encrypted entry, a method zipfile cannot
read, sizes that lie), zip bombs of the document, the trace and the line marks, a pickle
in place of JSON or ``.npy``, deep nesting, future and malformed versions, every field of
the document of the wrong JSON type (strings for numbers, lists for objects, null, NaN
and Infinity, 1e400, huge integers), paths to local files as labels, and hostile names
(a loader name carrying code, quotes, newlines, ``</script>``, HTML) in the loader,
dataset, model, step, module and optimizer names, the capture's facts and the cell source.
"""
from __future__ import annotations

import copy
import gzip
import io
import json
import os
import pickle
import stat
import warnings
import zipfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from nbprofiler.report.saved import MAX_DOCUMENT_BYTES

SECRET_MARKER = "nbprofiler-secret-5c1e7a"  # noqa: S105 - text that must never show, no password
DOCUMENT = "nbprofiler.json"
TRACE, LINES, TIMES = "trace.json", "lines/lines.npy", "lines/times_ns.npy"  # the other members of the base file
TRACE_LIMIT = 24 << 20  # NBPROFILER_MAX_TRACE_BYTES while the corpus is loaded: the bombs stay quick to make
# Names a sender can give a loader, a dataset, a cell or a range: code to run, markup, quotes, line breaks.
INJECTED = "slow_loader" + " " * 160 + ";__import__('os').system('touch PWNED')"
MARKUP = '</script><script>alert("x")</script><img src=x onerror=alert(1)>'
QUOTES = 'it\'s "quoted"\\\nand on two lines'
HOSTILE_NAMES = (INJECTED, MARKUP, QUOTES)
# Where members named with ``..`` or an absolute path would land if anything extracted them.
OUTSIDE = (Path("/tmp/nbprofiler-escaped"), Path("/tmp/nbprofiler-absolute"))  # noqa: S108 - checked, never written


@dataclass(frozen=True)
class Base:
    """A real saved report's parts: its members (the document among them) and its document."""

    members: dict[str, bytes]
    doc: dict[str, Any]

    @classmethod
    def of(cls, path: Path) -> "Base":
        with zipfile.ZipFile(path) as zf:
            members = {name: zf.read(name) for name in zf.namelist()}
        return cls(members, json.loads(members[DOCUMENT]))

    @property
    def trace(self) -> bytes:
        return self.members[self.doc["report"]["trace"]]


@dataclass(frozen=True)
class LocalFiles:
    """The recipient's own files, each holding ``SECRET_MARKER``: a text file, a trace that
    ``nbprofiler.load`` would read (gzipped) and the folder they are in."""

    text: Path
    trace: Path
    folder: Path

    @classmethod
    def write(cls, folder: Path, trace: bytes) -> "LocalFiles":
        folder.mkdir(parents=True, exist_ok=True)
        text = folder / "secret.txt"
        text.write_text(f"{SECRET_MARKER}\n")
        doc = json.loads(trace)
        doc["traceEvents"][0]["name"] = SECRET_MARKER
        gz = folder / "secret.pt.trace.json.gz"
        gz.write_bytes(gzip.compress(json.dumps(doc).encode()))
        return cls(text, gz, folder)

    @property
    def paths(self) -> tuple[str, ...]:
        return str(self.text), str(self.trace), str(self.folder)


@dataclass(frozen=True)
class Case:
    """One hostile file: its name, how it is made, and whether it carries hostile names."""

    name: str
    make: Callable[[Base, LocalFiles], bytes]
    hostile_names: bool = False


# -- archive helpers -------------------------------------------------------------------------

def zipped(entries: Iterable[tuple[str | zipfile.ZipInfo, bytes]],
           compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    """A zip archive of ``entries`` in order (a name twice is two entries: zipfile warns, the point)."""
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with zipfile.ZipFile(buffer, "w", compression=compression) as zf:
            for name, data in entries:
                zf.writestr(name, data)
    return buffer.getvalue()


def archive(base: Base, doc: dict[str, Any] | bytes | None = None, members: Mapping[str, bytes] | None = None) -> bytes:
    """The base archive with its document replaced by ``doc`` (a dict, or raw bytes) and the
    ``members`` given added or replaced."""
    entries = {name: data for name, data in base.members.items() if name != DOCUMENT}
    entries.update(members or {})
    text = doc if isinstance(doc, bytes) else json.dumps(base.doc if doc is None else doc).encode()
    return zipped([*entries.items(), (DOCUMENT, text)])


def changed(base: Base, change: Callable[[dict[str, Any]], Any], members: Mapping[str, bytes] | None = None) -> bytes:
    """The base archive with ``change`` applied to a copy of its document, and ``members`` added."""
    doc = copy.deepcopy(base.doc)
    change(doc)
    return archive(base, doc, members)


def run_changed(base: Base, change: Callable[[dict[str, Any]], Any]) -> bytes:
    """The base archive with ``change`` applied to its run."""
    return changed(base, lambda doc: change(doc["report"]["run"]))


def central_entry(data: bytes, member: str) -> int:
    """Where ``member``'s entry of the zip's central directory starts."""
    at = data.index(b"PK\x01\x02")
    while data[at + 46:at + 46 + len(member)] != member.encode():
        at = data.index(b"PK\x01\x02", at + 4)
    return at


def patched(data: bytes, member: str, offset: int, value: bytes) -> bytes:
    """``data`` with ``value`` written at ``offset`` of ``member``'s central directory entry
    (8: its flags, 10: its compression method, 24: its uncompressed size)."""
    at = central_entry(data, member) + offset
    return data[:at] + value + data[at + len(value):]


def inflating(size: int, head: bytes = b"", fill: bytes = b" ", tail: bytes = b"") -> bytes:
    """``head``, ``fill`` repeated to ``size`` bytes, ``tail``: deflated by zipfile to a tiny member."""
    return head + fill * (size // len(fill)) + tail


def npy(values: np.ndarray, header: dict[str, Any] | None = None) -> bytes:
    """An ``.npy`` file of ``values``; ``header`` replaces what its header says (shape, dtype)."""
    buffer = io.BytesIO()
    np.save(buffer, values, allow_pickle=True)
    if header is None:
        return buffer.getvalue()
    data = buffer.getvalue()
    length = int.from_bytes(data[8:10], "little")
    text = repr({"descr": np.lib.format.dtype_to_descr(values.dtype), "fortran_order": False,
                 "shape": values.shape, **header}).encode()
    text = text.ljust(length - 1) + b"\n"
    return data[:10] + text + data[10 + length:]


def deep(levels: int) -> str:
    return "[" * levels + "]" * levels


def trace_with(base: Base, rename: Callable[[dict[str, Any]], None]) -> bytes:
    """The base trace with ``rename`` applied to each event."""
    trace = json.loads(base.trace)
    for event in trace["traceEvents"]:
        rename(event)
    return json.dumps(trace).encode()


def _hostile_range_names(event: dict[str, Any]) -> None:
    """Step, module and range names carrying markup and code."""
    name = str(event.get("name", ""))
    if name.startswith("ProfilerStep#"):
        event["name"] = f"ProfilerStep#{name.removeprefix('ProfilerStep#')}{MARKUP}"
    elif event.get("cat") == "cpu_op" and name.startswith("aten::"):
        event["name"] = name + INJECTED
    elif event.get("cat") == "user_annotation":
        event["name"] = f"nn.Module: {MARKUP}"


def _set(target: dict[str, Any], key: str, value: Any) -> None:
    target[key] = value


def _steps_column(run: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in run["steps"] if c["name"] == name)


def _ranks(base: Base, local: LocalFiles, count: int, with_run: bool = True) -> bytes:
    """The base report as a distributed load of ``count`` more ranks, all reading one member and
    each named after the recipient's trace; ``with_run`` False makes it a trace file's report."""
    member = "ranks/1/trace.json"

    def change(doc: dict[str, Any]) -> None:
        doc["report"]["ranks"] = [
            {"rank": r, "report": {"trace": member, "source_path": str(local.trace), "load_notes": [],
                                   "run": None, "ranks": []}} for r in range(1, count + 1)]
        if not with_run:
            doc["report"]["run"] = None
    return changed(base, change, {member: base.trace})


# -- the corpus ------------------------------------------------------------------------------

def _zip_structure() -> list[Case]:
    escaping, absolute = "../" * 5 + f"{OUTSIDE[0]}/trace.json".lstrip("/"), f"{OUTSIDE[1]}/trace.json"
    return [
        Case("truncated_half", lambda b, _: archive(b)[: len(archive(b)) // 2]),
        Case("truncated_end_of_archive", lambda b, _: archive(b)[:-10]),
        Case("empty_file", lambda b, _: b""),
        Case("text_not_zip", lambda b, _: b"hello, world\n" * 100),
        Case("zip_without_document", lambda b, _: zipped([("readme.txt", b"another archive")])),
        Case("member_name_traversal", lambda b, _: changed(
            b, lambda d: d["report"].update(trace=escaping), {escaping: b.trace})),
        Case("member_name_absolute", lambda b, _: changed(
            b, lambda d: d["report"].update(trace=absolute), {absolute: b.trace})),
        Case("document_names_a_missing_member", lambda b, _: changed(
            b, lambda d: d["report"].update(trace="no/such/member.json"))),
        Case("trace_member_named_after_a_local_file", lambda b, local: changed(
            b, lambda d: d["report"].update(trace=str(local.text)))),
        Case("duplicate_documents", lambda b, _: zipped([*b.members.items(), (DOCUMENT, b'{"format": 5}')])),
        Case("duplicate_trace_members", lambda b, _: zipped([*b.members.items(), (TRACE, b"[1, 2, 3]")])),
        Case("document_is_a_symlink_to_a_local_file", lambda b, local: zipped([
            *((n, d) for n, d in b.members.items() if n != DOCUMENT), (_symlink(DOCUMENT), str(local.text).encode())])),
        Case("trace_is_a_symlink_to_a_local_trace", lambda b, local: zipped([
            *((n, d) for n, d in b.members.items() if n != TRACE), (_symlink(TRACE), str(local.trace).encode())])),
        Case("encrypted_trace_entry", lambda b, _: patched(archive(b), TRACE, 8, b"\x01\x00")),
        Case("unknown_compression_method", lambda b, _: patched(archive(b), TRACE, 10, b"\x63\x00")),
        Case("size_that_lies_low", lambda b, _: patched(archive(b), TRACE, 24, (100).to_bytes(4, "little"))),
        Case("size_that_claims_4_gib", lambda b, _: patched(archive(b), TRACE, 24, b"\xff\xff\xff\xfe")),
        Case("bzip2_and_stored_members", lambda b, _: _mixed_compression(b)),
    ]


def _symlink(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    info.create_system = 3  # Unix, where the mode says symlink
    return info


def _mixed_compression(base: Base) -> bytes:
    """The base report with its trace bzip2-compressed and its document stored: valid, if unusual."""
    entries = [(zipfile.ZipInfo(name), data) for name, data in base.members.items()]
    for info, _ in entries:
        info.compress_type = zipfile.ZIP_BZIP2 if info.filename == TRACE else zipfile.ZIP_STORED
    return zipped(entries)


def _bombs() -> list[Case]:
    mib = 1 << 20
    return [
        Case("document_bomb_past_the_cap", lambda b, _: archive(
            b, json.dumps(b.doc)[:-1].encode() + inflating(MAX_DOCUMENT_BYTES + mib, b', "x": [', b"0,", b"0]}"))),
        Case("document_filled_with_loader_waits", lambda b, _: run_changed(b, lambda r: r["loaders"][0].update(
            wait_ms_by_step=[[0, 0]] * ((MAX_DOCUMENT_BYTES - len(json.dumps(b.doc)) - 4096) // 8)))),
        Case("document_padding_under_the_cap", lambda b, _: archive(
            b, json.dumps(b.doc)[:-1].encode() + inflating(20 * mib, b', "padding": [', b"[],", b"[]]}"))),
        Case("trace_bomb_past_the_limit", lambda b, _: archive(
            b, members={TRACE: inflating(TRACE_LIMIT + mib, b'{"traceEvents": [', b" ", b"]}")})),
        Case("trace_of_blanks_under_the_limit", lambda b, _: archive(b, members={TRACE: inflating(TRACE_LIMIT // 2)})),
        Case("trace_of_zeros", lambda b, _: archive(b, members={TRACE: inflating(TRACE_LIMIT // 2, fill=b"\0")})),
        Case("line_marks_bomb", lambda b, _: archive(b, members={LINES: inflating(TRACE_LIMIT + mib, fill=b"\0")})),
        Case("line_marks_claim_a_terabyte", lambda b, _: archive(
            b, members={TIMES: npy(np.zeros(4, np.int64), {"shape": (1 << 37,)})})),
    ]



def _documents() -> list[Case]:
    report_only = lambda b: {"format": "nbprofiler.report", "version": 1, "report": b.doc["report"]}  # noqa: E731
    return [
        Case("document_nested_100k_deep_in_an_unknown_key", lambda b, _: archive(
            b, json.dumps(b.doc)[:-1].encode() + b', "x": ' + deep(100_000).encode() + b"}")),
        Case("document_nested_deep_in_load_notes", lambda b, _: archive(b, json.dumps(b.doc).encode().replace(
            b'"load_notes": []', b'"load_notes": ' + deep(50_000).encode(), 1))),
        Case("trace_nested_100k_deep", lambda b, _: archive(
            b, members={TRACE: b'{"traceEvents": [{"ph": "X", "args": ' + deep(100_000).encode() + b"}]}"})),
        Case("future_version_with_a_hostile_version_name", lambda b, _: changed(
            b, lambda d: d.update(version=2, nbprofiler=f"9.0\n{MARKUP}"))),
        Case("version_as_a_string", lambda b, _: changed(b, lambda d: d.update(version="1"))),
        Case("version_true", lambda b, _: changed(b, lambda d: d.update(version=True))),
        Case("version_10_to_the_100", lambda b, _: changed(b, lambda d: d.update(version=10**100))),
        Case("version_missing", lambda b, _: archive(b, {"format": "nbprofiler.report", "report": b.doc["report"]})),
        Case("format_a_list", lambda b, _: changed(b, lambda d: d.update(format=["nbprofiler.report"]))),
        Case("document_a_list", lambda b, _: archive(b, json.dumps([report_only(b)]).encode())),
        Case("document_a_number", lambda b, _: archive(b, b"1e400")),
        Case("document_nan_literal", lambda b, _: archive(b, json.dumps(b.doc).encode().replace(
            b'"wall_s": ', b'"wall_s": NaN, "was": ', 1))),
        Case("document_infinity_in_a_step", lambda b, _: archive(b, json.dumps(b.doc).encode().replace(
            b'"dtype": "float64", "values": [', b'"dtype": "float64", "values": [Infinity, ', 1))),
        Case("document_1e400", lambda b, _: archive(b, json.dumps(b.doc).encode().replace(
            b'"wall_s": ', b'"wall_s": 1e400, "was": ', 1))),
        Case("document_not_utf8", lambda b, _: archive(b, json.dumps(b.doc).encode().replace(
            b'"load_notes": []', b'"load_notes": ["\xff\xfe"]', 1))),
        Case("document_is_a_pickle", lambda b, _: archive(b, pickle.dumps({"format": "nbprofiler.report"}))),
        Case("trace_is_a_pickle", lambda b, _: archive(b, members={TRACE: pickle.dumps(os.system)})),
        Case("line_marks_are_a_pickled_object_array", lambda b, _: archive(
            b, members={LINES: npy(np.array([object()] * 3, dtype=object))})),
        Case("line_marks_big_endian", lambda b, _: archive(
            b, members={LINES: npy(np.zeros(3, ">i4")), TIMES: npy(np.zeros(3, ">i8"))})),
        Case("line_marks_two_dimensional", lambda b, _: archive(b, members={LINES: npy(np.zeros((3, 2), np.int32))})),
        Case("report_null", lambda b, _: changed(b, lambda d: d.update(report=None))),
        Case("ranks_an_object", lambda b, _: changed(b, lambda d: d["report"].update(ranks={"1": {}}))),
    ]


def _wrong_types() -> list[Case]:
    def run(key: str, value: Any) -> Callable[[Base, LocalFiles], bytes]:
        return lambda b, _: run_changed(b, lambda r: _set(r, key, value))

    def options(key: str, value: Any) -> Callable[[Base, LocalFiles], bytes]:
        return lambda b, _: run_changed(b, lambda r: _set(r["options"], key, value))

    def loader(key: str, value: Any) -> Callable[[Base, LocalFiles], bytes]:
        return lambda b, _: run_changed(b, lambda r: _set(r["loaders"][0], key, value))

    def column(name: str, change: Callable[[dict[str, Any]], Any]) -> Callable[[Base, LocalFiles], bytes]:
        return lambda b, _: run_changed(b, lambda r: change(_steps_column(r, name)))

    return [
        Case("cpu_count_a_string", run("cpu_count", "4")),
        Case("cpu_count_10_to_the_40", run("cpu_count", 10**40)),
        Case("sampler_bytes_negative_huge", run("sampler_bytes", -(10**30))),
        Case("wall_s_a_list", run("wall_s", [1.0])),
        Case("notes_an_object", run("notes", {"a": "b"})),
        Case("options_a_list", run("options", [])),
        Case("option_wait_a_string", options("wait", "1")),
        Case("option_active_zero", options("active", 0)),
        Case("option_sort_hostile", options("sort", MARKUP)),
        Case("device_a_string", run("device", "cuda")),
        Case("device_index_2_to_the_70", lambda b, _: run_changed(b, lambda r: r["device"].update(index=2**70))),
        Case("device_compute_capability_of_three", lambda b, _: run_changed(
            b, lambda r: r["device"].update(kind="cuda", compute_capability=[8, 0, 1]))),
        Case("steps_null", run("steps", None)),
        Case("steps_without_wall_ms", lambda b, _: run_changed(
            b, lambda r: r.update(steps=[c for c in r["steps"] if c["name"] != "wall_ms"]))),
        Case("steps_wall_ms_as_text", column("wall_ms", lambda c: c.update(
            dtype="object", values=["fast"] * len(c["values"])))),
        Case("steps_dtype_datetime", column("wall_ms", lambda c: c.update(dtype="datetime64[ns]"))),
        Case("steps_dtype_pyarrow", column("wall_ms", lambda c: c.update(dtype="int64[pyarrow]"))),
        Case("steps_int64_overflow", column("step", lambda c: c.update(values=[2**70] * len(c["values"])))),
        Case("steps_null_in_int64", column("step", lambda c: c.update(values=[None] * len(c["values"])))),
        Case("steps_negative_and_repeated", column("step", lambda c: c.update(values=[-5] * len(c["values"])))),
        Case("steps_values_of_other_lengths", column("phase", lambda c: c.update(values=c["values"][:1]))),
        Case("steps_extreme_times", column("wall_ms", lambda c: c.update(
            values=[(1e308, -1e308, 0.0, 5e-324)[i % 4] for i in range(len(c["values"]))]))),
        Case("cpu_count_zero_threads_zero", lambda b, _: run_changed(b, lambda r: r.update(cpu_count=0,
                                                                                          intra_op_threads=0))),
        Case("wall_s_and_other_cores_zero", lambda b, _: run_changed(b, lambda r: r.update(wall_s=0, other_cores=0))),
        Case("facts_a_list", run("facts", [])),
        Case("facts_counts_negative_and_huge", run("facts", {"other_thread_steps": -3, "cycles": 10**40})),
        Case("facts_unwritten_as_lists", run("facts", {"unwritten": [["--trace", "t.json", "OSError"]]})),
        Case("facts_optimizers_a_string", run("facts", {"optimizers": "opt_d, opt_g"})),
        Case("loaders_an_object", run("loaders", {"0": {}})),
        Case("loader_counts_zero", lambda b, _: run_changed(b, lambda r: r["loaders"][0].update(
            batch_size=0, prefetch_factor=0, dataset_length=0, batches=0, iterations_started=0, wait_cpu_ms=0))),
        Case("loader_without_batches_nor_length", lambda b, _: run_changed(b, lambda r: r["loaders"][0].update(
            batch_size=None, dataset_length=None, shuffle=None, prefetch_factor=None, wait_cpu_ms=None))),
        Case("loader_batch_size_huge", loader("batch_size", 10**30)),
        Case("loader_num_workers_negative", loader("num_workers", -8)),
        Case("loader_waits_malformed", loader("wait_ms_by_step", [[1], [1, 2, 3], ["a", "b"]])),
        Case("loader_waits_past_int64", loader("wait_ms_by_step", [[2**70, 1.0], [-(2**70), 2.0]])),
        Case("line_marks_unsorted_and_out_of_range", lambda b, _: archive(
            b, members={LINES: npy(np.array([10**6, -3, 2, 1], np.int32)),
                        TIMES: npy(np.array([5, 1, 3, 2**62], np.int64))})),
        Case("line_marks_of_other_lengths", lambda b, _: archive(b, members={LINES: npy(np.zeros(1, np.int32))})),
    ]


def _paths_and_ranks() -> list[Case]:
    def no_trace_no_run(source: Callable[[LocalFiles], str]) -> Callable[[Base, LocalFiles], bytes]:
        return lambda b, local: changed(b, lambda d: d["report"].update(trace=None, run=None,
                                                                         source_path=source(local)))

    return [
        Case("no_trace_no_run_source_a_local_file", no_trace_no_run(lambda local: str(local.text))),
        Case("no_trace_no_run_source_a_local_trace", no_trace_no_run(lambda local: str(local.trace))),
        Case("run_without_trace_source_a_local_trace", lambda b, local: changed(
            b, lambda d: d["report"].update(trace=None, source_path=str(local.trace)))),
        Case("trace_file_report_source_a_local_trace", lambda b, local: changed(
            b, lambda d: d["report"].update(run=None, source_path=str(local.trace)))),
        Case("source_a_local_folder", lambda b, local: changed(
            b, lambda d: d["report"].update(source_path=str(local.folder)))),
        Case("source_path_hostile_text", lambda b, _: changed(
            b, lambda d: d["report"].update(source_path=f"../../{MARKUP}\n\0" + "x" * 50_000))),
        Case("run_paths_name_local_files", lambda b, local: run_changed(b, lambda r: (
            r.update(cell_filename=str(local.text), notebook=str(local.trace)),
            r["options"].update(trace=str(local.trace), tensorboard=str(local.folder))))),
        Case("facts_name_local_files", lambda b, local: run_changed(b, lambda r: r.update(facts={
            "export_error": f"OSError: {local.text}", "temp_dir": str(local.folder),
            "unwritten": [{"flag": "--trace", "path": str(local.trace), "reason": "OSError"}]}))),
        Case("ranks_read_a_local_trace", lambda b, local: _ranks(b, local, 2)),
        Case("ranks_of_a_trace_file_report", lambda b, local: _ranks(b, local, 3, with_run=False)),
        Case("twenty_ranks_of_one_member", lambda b, local: _ranks(b, local, 20)),
        Case("rank_member_missing", lambda b, local: changed(b, lambda d: d["report"].update(ranks=[
            {"rank": 1, "report": {"trace": "ranks/1/trace.json", "source_path": str(local.trace),
                                   "load_notes": []}}]))),
        Case("rank_trace_null", lambda b, local: changed(b, lambda d: d["report"].update(ranks=[
            {"rank": 1, "report": {"trace": None, "source_path": str(local.trace), "load_notes": []}}]))),
        Case("rank_numbers_huge_negative_repeated", lambda b, local: changed(b, lambda d: d["report"].update(ranks=[
            {"rank": r, "report": {"trace": "trace.json", "source_path": str(local.text), "load_notes": [MARKUP]}}
            for r in (2**70, -1, -1, 0)]))),
    ]


def _hostile_names() -> list[Case]:
    def loader(**names: str) -> Callable[[Base, LocalFiles], bytes]:
        return lambda b, _: run_changed(b, lambda r: r["loaders"][0].update(names))

    def cell(source: str) -> Callable[[Base, LocalFiles], bytes]:
        return lambda b, _: run_changed(b, lambda r: r.update(cell_source=source))

    loop = ("for x, y in {loader}:\n    loss = F.cross_entropy({model}(x), y)\n    opt.zero_grad()\n"
            "    loss.backward()\n    opt.step()\n")
    return [
        Case("loader_name_carrying_code", loader(name=INJECTED), True),
        Case("loader_and_dataset_names_of_markup", loader(name=MARKUP, dataset_name=MARKUP, dataset_type=MARKUP,
                                                          dataset_repr=MARKUP), True),
        Case("loader_and_dataset_names_with_quotes_and_newlines", loader(name=QUOTES, dataset_name=QUOTES), True),
        Case("cell_source_naming_the_loader_with_code", cell(loop.format(loader=INJECTED, model="model")), True),
        Case("cell_source_of_markup", cell(f"{MARKUP}\n" + loop.format(loader="slow_loader", model="model")), True),
        Case("cell_source_model_name_with_code", cell(loop.format(
            loader="slow_loader", model="__import__('os').system('touch PWNED') or model")), True),
        Case("cell_source_not_python", cell(f"for x in {INJECTED}\n\tloss = \"\"\"{QUOTES}"), True),
        Case("step_module_and_op_names_in_the_trace", lambda b, _: archive(
            b, members={TRACE: trace_with(b, _hostile_range_names)}), True),
        Case("phase_names_of_markup", lambda b, _: run_changed(
            b, lambda r: _steps_column(r, "phase").update(values=[MARKUP] * len(_steps_column(r, "phase")["values"]))),
            True),
        Case("capture_facts_of_markup", lambda b, _: run_changed(b, lambda r: r.update(facts={
            "other_thread_steps": 2, "export_error": MARKUP, "temp_dir": QUOTES, "loader_steps_before_optimizer": 1,
            "optimizers": [MARKUP, INJECTED], "closing_optimizer": QUOTES, "unknown_samples": True, "cycles": 3,
            "unwritten": [{"flag": MARKUP, "path": f"../../{MARKUP}", "reason": QUOTES}]})), True),
        Case("notes_error_and_keys_of_markup", lambda b, _: changed(b, lambda d: (
            d["report"].update(load_notes=[MARKUP, QUOTES]),
            d["report"]["run"].update(error=f"ValueError: {MARKUP}\n{QUOTES}", notes=[MARKUP], cell_key=MARKUP,
                                      notebook=f"../../{MARKUP}.ipynb", cell_filename=QUOTES),
            d["report"]["run"]["device"].update(name=MARKUP))), True),
    ]


CASES: tuple[Case, ...] = (*_zip_structure(), *_bombs(), *_documents(), *_wrong_types(), *_paths_and_ranks(),
                           *_hostile_names())


def write_corpus(folder: Path, base: Base, local: LocalFiles) -> dict[str, Path]:
    """Every case's file in ``folder``, by case name."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for case in CASES:
        path = folder / f"{case.name}.nbprof"
        path.write_bytes(case.make(base, local))
        paths[case.name] = path
    return paths
