"""``.nbprof`` files from other people are data: whatever one holds, ``nbprofiler.load`` gives a
Report or raises ``TraceError``, never reads a file the received one names, and stays small.

The corpus (tests/hostile_nbprof.py) is made from a real run's saved report; each case is
loaded, shown, saved again and exported, and the recipient's own files it names (each
holding ``SECRET_MARKER``) must never show up in any of that. Then the items one by one:
paths as labels only, zip bombs, nesting, and what ``load`` takes.
"""
from __future__ import annotations

import ast
import builtins
import gzip
import io
import json
import keyword
import os
import subprocess
import sys
import tokenize
import zipfile
from pathlib import Path

import pytest
from hostile_nbprof import (CASES, HOSTILE_NAMES, OUTSIDE, SECRET_MARKER, TRACE_LIMIT, Base, LocalFiles, archive,
                            changed, inflating, write_corpus)

import nbprofiler
from nbprofiler.report.export_names import EXPORT_ROOT
from nbprofiler.report.saved import MAX_MEMBERS

MIB = 1 << 20
PEAK_LIMIT_MIB = 512

BASE_CELL = """
for x, y in slow_loader:
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


@pytest.fixture(scope="session")
def base_file(ip, tmp_path_factory) -> Path:
    """A real run's report, saved: a %%torchprofile --stack cell training a small model over a
    slow DataLoader named ``slow_loader``, so the file has a run, a named loader (which the
    DataLoader suggestion's code names), line marks and a trace."""
    ip.run_cell("""
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import DataLoader
from workloads import SlowDataset
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(32, 16), nn.ReLU(), nn.Linear(16, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
slow_loader = DataLoader(SlowDataset(48, 0.004), batch_size=8)
""").raise_error()
    ip.run_cell_magic("torchprofile", "--stack --wait 1 --warmup 0 --active 2 -q -o hostile_base", BASE_CELL)
    report = ip.user_ns["hostile_base"]
    assert report.run.line_marks is not None and report.run.loaders[0].name == "slow_loader"
    assert any(s.code and "slow_loader" in s.code for s in report.suggestions)
    return report.save(tmp_path_factory.mktemp("base") / "base.nbprof")


@pytest.fixture(scope="module")
def small_trace_limit():
    """The trace limit the corpus's bombs are made against (a small one keeps them quick to make)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NBPROFILER_MAX_TRACE_BYTES", str(TRACE_LIMIT))
        yield


@pytest.fixture(scope="module")
def corpus(base_file, tmp_path_factory, small_trace_limit) -> tuple[dict[str, Path], LocalFiles]:
    folder = tmp_path_factory.mktemp("hostile")
    base = Base.of(base_file)
    local = LocalFiles.write(folder / "local", base.trace)
    return write_corpus(folder / "corpus", base, local), local


def members_of(path: Path) -> bytes:
    """Every member of a saved report, decompressed, as one byte string to search."""
    with zipfile.ZipFile(path) as zf:
        return b"\n".join(zf.read(name) for name in zf.namelist())


def shown(report: nbprofiler.Report) -> str:
    """Everything a user sees of ``report``: the display bundle (explorer data, HTML, text), the
    text report and its repr. The bundle's data must be strict JSON for the front end, and a
    name from the file is text in the HTML, never markup."""
    bundle = report._repr_mimebundle_()
    data = json.dumps(bundle.pop("application/vnd.nbprofiler.report+json"), allow_nan=False)
    assert "<script>alert" not in bundle["text/html"]
    return "\n".join([data, json.dumps(bundle), report.to_text(), repr(report)])


def written(report: nbprofiler.Report, folder: Path) -> bytes:
    """What saving and exporting ``report`` writes: saved again by name and by default (in
    its own export folder), and its trace exported, or the one-line reason it has none."""
    again = report.save(folder / "again.nbprof")
    by_default = report.save()
    assert by_default.resolve().is_relative_to((folder / EXPORT_ROOT).resolve())
    out = [members_of(again), members_of(by_default)]
    if report.no_trace_reason is None:
        out.append(report.export_chrome_trace(folder / "trace.json").read_bytes())
    else:
        with pytest.raises(nbprofiler.TraceError, match="^this report has no trace to export: "):
            report.export_chrome_trace(folder / "trace.json")
    nbprofiler.load(again)  # what it saved loads back
    return b"\n".join(out)


@pytest.mark.parametrize("case", [c.name for c in CASES])
def test_a_hostile_file_gives_a_report_or_a_trace_error_and_never_a_local_file(case, corpus, tmp_path,
                                                                                monkeypatch, small_trace_limit):
    paths, _ = corpus
    monkeypatch.chdir(tmp_path)  # where a name that ran as code would `touch PWNED`, and default saves go
    path = paths[case]
    try:
        report = nbprofiler.load(path)
    except nbprofiler.TraceError as exc:
        message = str(exc)
        assert message.startswith(f"{path}: ") and "\n" not in message and SECRET_MARKER not in message, message
        return
    text = shown(report)
    data = written(report, tmp_path)
    for number in report.ranks:  # each rank's whole report, read again from the archive
        rank = report.rank(number)
        text += rank.to_text()
        data += rank.export_chrome_trace(tmp_path / f"rank{number}.json").read_bytes()
    assert SECRET_MARKER not in text
    assert SECRET_MARKER.encode() not in data
    assert not (tmp_path / "PWNED").exists()
    assert not any(folder.exists() for folder in OUTSIDE)


_MEMORY_PROBE = r"""
import json, resource, sys
import nbprofiler
paths = json.loads(sys.argv[1])
def load(path):
    try:
        nbprofiler.load(path)
    except nbprofiler.TraceError:
        pass
load(sys.argv[2])  # what loading imports on first use is not the files' doing
baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
peaks = {}
for name, path in paths.items():
    load(path)
    peaks[name] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"baseline": baseline, "peaks": peaks}))
"""


def test_loading_any_of_them_peaks_under_512_mib(corpus, base_file, small_trace_limit):
    """In one fresh interpreter, every file loaded in turn: the peak RSS (``ru_maxrss``, in KiB)
    must stay within 512 MiB of what the interpreter held after its first load."""
    paths, _ = corpus
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(nbprofiler.__file__).parents[1]),
                                                         os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", _MEMORY_PROBE, json.dumps({n: str(p) for n, p in paths.items()}),
                          str(base_file)], capture_output=True, text=True, env=env, timeout=300, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    rises = {name: (peak - result["baseline"]) / 1024 for name, peak in result["peaks"].items()}
    worst = max(rises, key=lambda name: rises[name])
    assert rises[worst] < PEAK_LIMIT_MIB, f"loading {worst} rose the peak RSS {rises[worst]:.0f} MiB"


# -- the suggestions' code, from names a sender chose -------------------------------------------

# The names a suggestion's code may use beyond plain identifiers (the user's own), and those it may not.
ALLOWED_ROOTS = set(dir(builtins)) | {"torch", "nn", "F", "nbprofiler"}
FORBIDDEN = {"__import__", "exec", "eval"}


def suggestion_code_of(report: nbprofiler.Report) -> list[str]:
    """The code of each of ``report``'s suggestions that has some."""
    return [s.code for s in report.suggestions if s.code]


def code_problems(code: str) -> list[str]:
    """What makes ``code`` more than plain Python in the user's own names: not parsing, a name
    that is no plain identifier or is forbidden, a ``;`` outside strings and comments."""
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return [f"does not parse: {exc}"]
    problems = []
    for node in ast.walk(tree):
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        if name is None:
            continue
        plain = name.isidentifier() and not keyword.iskeyword(name) and not name.startswith("__")
        if name in FORBIDDEN or not (plain or name in ALLOWED_ROOTS):
            problems.append(f"names {name!r}")
    tokens = tokenize.generate_tokens(io.StringIO(code).readline)
    if any(t.type == tokenize.OP and t.string == ";" for t in tokens):
        problems.append("has a ';' outside strings and comments")
    if "__import__" in code or "os.system" in code:
        problems.append("holds __import__ or os.system")
    return problems


def test_suggestion_code_from_hostile_names_is_plain_python(corpus, small_trace_limit):
    # The check tells the real thing from a name carrying code, so that a pass means something.
    assert code_problems("slow_loader = DataLoader(slow_loader.dataset, num_workers=8)") == []
    assert all(code_problems(f"{name} = DataLoader({name}.dataset)") for name in HOSTILE_NAMES)
    paths, _ = corpus
    found = {}
    for case in (c for c in CASES if c.hostile_names):
        try:
            report = nbprofiler.load(paths[case.name])
        except nbprofiler.TraceError:
            continue
        for code in suggestion_code_of(report):
            if problems := code_problems(code):
                found[case.name] = (problems, code)
    assert not found, found


# -- the items one by one ---------------------------------------------------------------------

@pytest.fixture()
def base(base_file) -> Base:
    return Base.of(base_file)


@pytest.fixture()
def local(base, tmp_path) -> LocalFiles:
    return LocalFiles.write(tmp_path / "mine", base.trace)


def written_to(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_a_path_inside_a_received_file_is_a_label_never_read(base, local, tmp_path):
    """A file whose report names a local file, with no trace of its own: nothing to show, refused;
    with a run but no trace, it loads, and neither save nor export reads that file; with its
    trace, export writes the archive's trace, not the named file's."""
    bare = written_to(tmp_path, "bare.nbprof", changed(
        base, lambda d: d["report"].update(trace=None, run=None, source_path=str(local.text))))
    with pytest.raises(nbprofiler.TraceError, match="neither a trace nor a run"):
        nbprofiler.load(bare)

    run_only = written_to(tmp_path, "run.nbprof", changed(
        base, lambda d: d["report"].update(trace=None, source_path=str(local.trace))))
    report = nbprofiler.load(run_only)
    assert report.source_path == str(local.trace)  # kept, as a label
    with pytest.raises(nbprofiler.TraceError, match="no trace to export: the run ended before any active step"):
        report.export_chrome_trace(tmp_path / "t.json")
    assert SECRET_MARKER.encode() not in members_of(report.save(tmp_path / "again.nbprof"))

    labelled = written_to(tmp_path, "labelled.nbprof", changed(
        base, lambda d: d["report"].update(run=None, source_path=str(local.trace))))
    exported = nbprofiler.load(labelled).export_chrome_trace(tmp_path / "t.json").read_bytes()
    assert exported == base.trace


def test_a_rank_inside_a_received_file_is_read_from_the_archive(base, local, tmp_path):
    """A rank whose source_path names a local trace: its report and export are the archive's member."""
    other = json.loads(base.trace)
    other["traceEvents"][0]["name"] = "rank-one-marker"
    path = written_to(tmp_path, "ranks.nbprof", changed(
        base, lambda d: d["report"].update(run=None, ranks=[
            {"rank": 0, "report": {"trace": "trace.json", "source_path": str(local.text), "load_notes": []}},
            {"rank": 1, "report": {"trace": "ranks/1/trace.json", "source_path": str(local.trace), "load_notes": []}}]),
        {"ranks/1/trace.json": json.dumps(other).encode()}))
    report = nbprofiler.load(path)
    assert report.ranks[1].source_path == str(local.trace)
    rank = report.rank(1).export_chrome_trace(tmp_path / "rank1.json").read_bytes()
    assert b"rank-one-marker" in rank and SECRET_MARKER.encode() not in rank
    assert SECRET_MARKER.encode() not in members_of(report.save(tmp_path / "again.nbprof"))


def test_a_document_that_inflates_past_its_cap_is_refused(base, tmp_path):
    """33 MiB of zeros beside a valid report, in a 40 kB file: refused from its size, not decoded."""
    path = written_to(tmp_path, "bomb.nbprof", archive(
        base, json.dumps(base.doc)[:-1].encode() + inflating(33 * MIB, b', "padding": [', b"0,", b"0]}")))
    assert path.stat().st_size < MIB
    with pytest.raises(nbprofiler.TraceError, match=r"its 'nbprofiler.json': inflates to more than 32 MiB"):
        nbprofiler.load(path)


def test_an_archive_listing_more_entries_than_any_saved_report_is_refused(base, tmp_path):
    """Its end record lists them: refused before zipfile reads a directory of MAX_MEMBERS + 1 entries;
    the same report with its entries within the cap loads."""
    padding = MAX_MEMBERS - len(base.members)
    within = written_to(tmp_path, "within.nbprof", archive(base, members={f"pad/{i}": b"" for i in range(padding)}))
    same = written_to(tmp_path, "base.nbprof", archive(base))
    assert nbprofiler.load(within).summary == nbprofiler.load(same).summary
    over = written_to(tmp_path, "over.nbprof", archive(base, members={f"pad/{i}": b"" for i in range(padding + 1)}))
    with pytest.raises(nbprofiler.TraceError, match=f"listing {MAX_MEMBERS + 1:,} entries, more than the "
                                                    f"{MAX_MEMBERS:,} of any report Report.save writes"):
        nbprofiler.load(over)


def test_a_document_nested_deeply_is_a_trace_error(base, tmp_path):
    path = written_to(tmp_path, "deep.nbprof", archive(
        base, b'{"format": "nbprofiler.report", "version": 1, "report": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"))
    with pytest.raises(nbprofiler.TraceError, match="nested too deeply"):
        nbprofiler.load(path)


def test_a_value_of_the_wrong_type_is_named_where_it_is(base, tmp_path):
    path = written_to(tmp_path, "typed.nbprof", changed(base, lambda d: d["report"]["run"].update(cpu_count="4")))
    with pytest.raises(nbprofiler.TraceError, match=r"a malformed saved report \(ValidationError: Expected `int`, "
                                                    r"got `str` - at `\$.cpu_count`\)"):
        nbprofiler.load(path)


def test_a_gzip_of_blanks_is_refused_by_its_first_megabyte(tmp_path):
    """Not "the file is empty": 8 MiB of blanks hold no trace, and the first one says so."""
    path = written_to(tmp_path, "blank.pt.trace.json.gz", gzip.compress(b" \n" * (4 * MIB)))
    with pytest.raises(nbprofiler.TraceError, match=r"not a trace: its first 1 MB hold only whitespace"):
        nbprofiler.load(path)
    nul = written_to(tmp_path, "nul.pt.trace.json.gz", gzip.compress(b"\0" * (4 * MIB)))
    with pytest.raises(nbprofiler.TraceError, match=r"not JSON: it starts with b'\\x00"):
        nbprofiler.load(nul)


def test_a_large_trace_after_a_byte_order_mark_still_loads(base, tmp_path):
    """The first-megabyte check reads past a UTF-8 byte-order mark, as the parser does."""
    data = b"\xef\xbb\xbf" + base.trace + b" " * (2 * MIB)
    path = written_to(tmp_path, "bom.pt.trace.json.gz", gzip.compress(data))
    assert len(nbprofiler.load(path).operators)


def test_load_takes_a_bytes_path(base_file):
    assert nbprofiler.load(os.fsencode(base_file)).summary == nbprofiler.load(base_file).summary


def test_load_of_something_not_a_path_says_what_it_takes():
    with pytest.raises(TypeError, match=r"^nbprofiler.load takes a path \(str, bytes or os.PathLike\) to a trace "
                                        "file, a directory of them or a .nbprof file; got int$"):
        nbprofiler.load(42)


def test_an_executor_that_is_not_one_says_what_executor_takes(tmp_path):
    with pytest.raises(TypeError, match=r"^executor must be a concurrent.futures.Executor, such as a Dask "
                                        r"client.get_executor\(\), or None .*; got str 'dask'$"):
        nbprofiler.load(tmp_path, executor="dask")


def test_a_run_too_long_to_load_back_is_not_saved(base_file, tmp_path, monkeypatch):
    """Save refuses what load would refuse, rather than write a file that cannot be opened."""
    from nbprofiler.report import saved

    report = nbprofiler.load(base_file)
    monkeypatch.setattr(saved, "MAX_DOCUMENT_BYTES", 1024)
    with pytest.raises(ValueError, match=r"^this report's run is too long to save: its description takes .* MiB, "
                                         "over the 0.0 MiB nbprofiler.load reads back"):
        report.save(tmp_path / "long.nbprof")
    assert not list(tmp_path.iterdir())
