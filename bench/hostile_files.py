"""Hostile files that cost a load time and memory: each answered within a second, and small.

Builds, in a temp folder, files a sender could make small on disk and huge once read,
from a real run's saved report (a tiny CPU training loop over a DataLoader), then loads
each in a fresh interpreter and prints the time to the answer, the peak RSS rise over
the RSS after a first load (``VmHWM`` after resetting it) and the outcome:

- ``json_bomb.nbprof``: ``nbprofiler.json`` holds the valid report beside a list of
  zeros that inflates to ``--json-mb`` MB; ``json_bomb_lying_size.nbprof`` the same with
  its zip directory claiming 1 KB;
- ``json_padding_under_the_cap.nbprof``: the zeros fit under the document's cap
  (``MAX_DOCUMENT_BYTES``), in a key the reader does not know;
- ``waits_filling_the_cap.nbprof``: the DataLoader's waits fill the document to its cap
  with ``[0, 0]`` pairs, the costliest values per byte the format allows;
- ``trace_bomb.nbprof``: ``trace.json`` inflates past the trace limit
  (``NBPROFILER_MAX_TRACE_BYTES``, 1 GiB by default); ``trace_of_blanks.nbprof``: it
  inflates to 100 MB less than the limit, all blanks;
- ``blank.pt.trace.json.gz``: a gzip of ``--blank-mb`` MB of whitespace, a trace file
  that is not one;
- ``many_entries.nbprof``: the report and 300,000 empty entries (``MAX_MEMBERS``);
- ``deep.nbprof``: ``nbprofiler.json`` nests 100,000 lists deep.

    .venv/bin/python bench/hostile_files.py [--json-mb 600] [--blank-mb 900]

Exits 1 when a file is not answered as expected (refused with a TraceError, or loaded)
within its time, or its load's peak RSS rise is over its bound.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from workload import RSS_PRELUDE  # noqa: E402 - bench/ is on sys.path when run as a script

from nbprofiler.report.saved import MAX_DOCUMENT_BYTES  # noqa: E402
from nbprofiler.trace.sources import max_trace_bytes  # noqa: E402

_MB = 1 << 20
DOCUMENT = "nbprofiler.json"

_PROBE = r"""
import json, sys, time
sys.path.insert(0, sys.argv[2])
import nbprofiler
nbprofiler.load(sys.argv[3])  # what loading imports on first use is not the file's doing
""" + RSS_PRELUDE + r"""
before = status("VmRSS:")
t0 = time.perf_counter()
try:
    nbprofiler.load(sys.argv[1])
    outcome = "loaded"
except nbprofiler.TraceError as exc:
    outcome = "TraceError: " + exc.problem
except BaseException as exc:
    outcome = f"{type(exc).__name__}: {str(exc)[:200]}"
print(json.dumps({"outcome": outcome, "seconds": time.perf_counter() - t0, "rise": status("VmHWM:") - before}))
"""


def probe(path: Path, base: Path) -> dict:
    """Load ``path`` in a fresh interpreter: its outcome, seconds and peak RSS rise in bytes."""
    out = subprocess.run([sys.executable, "-c", _PROBE, str(path), str(ROOT), str(base)], capture_output=True,
                         text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=600)
    if out.returncode != 0:
        raise SystemExit(f"the probe failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def saved_run(folder: Path) -> Path:
    """A real run's report, saved: a tiny CPU training loop over a DataLoader of 8 batches."""
    import torch
    import torch.nn.functional as F
    from torch.utils.data import DataLoader, TensorDataset

    import nbprofiler

    torch.manual_seed(0)
    model = torch.nn.Linear(16, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(TensorDataset(torch.randn(64, 16), torch.randint(0, 4, (64,))), batch_size=8)
    with nbprofiler.profile(wait=1, warmup=0, active=2, quiet=True, history=False) as run:
        for x, y in loader:
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return run.report.save(folder / "base.nbprof")


def rezipped(path: Path, base: dict[str, bytes], streamed: dict[str, tuple[bytes, bytes, int, bytes]]) -> None:
    """The base members, with each of ``streamed`` (name: head, fill, size, tail) written as
    ``head``, then ``fill`` repeated to ``size`` bytes, then ``tail``, deflated as it is written."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for name, data in base.items():
            if name not in streamed:
                zf.writestr(name, data)
        for name, (head, fill, size, tail) in streamed.items():
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED
            with zf.open(info, "w") as fh:
                fh.write(head)
                block = fill * (_MB // len(fill))
                for _ in range(size // len(block)):
                    fh.write(block)
                fh.write(fill * (size % len(block) // len(fill)))
                fh.write(tail)


def document_with(base: dict[str, bytes], key: str, fill: bytes, size: int) -> tuple[bytes, bytes, int, bytes]:
    """The base document with ``key`` added, a list of ``fill`` repeated to ``size`` bytes."""
    return json.dumps(json.loads(base[DOCUMENT]))[:-1].encode() + f', "{key}": ['.encode(), fill, size, b"0]}"


def waits_filling_the_cap(base: dict[str, bytes]) -> tuple[bytes, bytes, int, bytes]:
    """The base document with its DataLoader's waits a list of ``[0, 0]`` up to the document's cap."""
    doc = json.loads(base[DOCUMENT])
    doc["report"]["run"]["loaders"][0]["wait_ms_by_step"] = "@"
    head, tail = json.dumps(doc).encode().split(b'"@"')
    return head + b"[", b"[0, 0], ", MAX_DOCUMENT_BYTES - len(head) - len(tail) - _MB, b"[0, 0]]" + tail


def lying_size(path: Path) -> None:
    """``path`` with its central directory claiming that the document inflates to 1 KB."""
    data = bytearray(path.read_bytes())
    entry = data.index(b"PK\x01\x02")  # the central directory's entries: signature, then fixed fields, then name
    while data[entry + 46:entry + 46 + len(DOCUMENT)] != DOCUMENT.encode():
        entry = data.index(b"PK\x01\x02", entry + 4)
    data[entry + 24:entry + 28] = (1000).to_bytes(4, "little")  # its uncompressed size
    path.write_bytes(bytes(data))


def many_entries(path: Path, base: dict[str, bytes], entries: int) -> None:
    """The base members and ``entries`` empty ones, stored (a few MB of directory)."""
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in base.items():
            zf.writestr(name, data)
        for i in range(entries):
            zf.writestr(f"pad/{i}", b"")


def blank_gzip(path: Path, megabytes: int) -> None:
    deflate = zlib.compressobj(9, zlib.DEFLATED, 31)
    with path.open("wb") as fh:
        block = b" \n" * (_MB // 2)
        for _ in range(megabytes):
            fh.write(deflate.compress(block))
        fh.write(deflate.flush())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json-mb", type=int, default=600, help="what the JSON bomb's document inflates to")
    parser.add_argument("--blank-mb", type=int, default=900, help="what the gzip of whitespace inflates to")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="nbprofiler-hostile-"))
    limit = max_trace_bytes()
    ok = True
    try:
        base_path = saved_run(tmp)
        with zipfile.ZipFile(base_path) as zf:
            base = {name: zf.read(name) for name in zf.namelist()}
        bomb = {DOCUMENT: document_with(base, "x", b"0,", args.json_mb * _MB)}
        def bomb_with_lying_size(p: Path) -> None:
            rezipped(p, base, bomb)
            lying_size(p)

        # name: (how to make it, whether it must load, the most seconds and MiB of peak RSS rise its load may take)
        files: dict[str, tuple[Callable[[Path], None], bool, float, float]] = {
            "json_bomb.nbprof": (lambda p: rezipped(p, base, bomb), False, 1, 100),
            "json_bomb_lying_size.nbprof": (bomb_with_lying_size, False, 1, 100),
            "json_padding_under_the_cap.nbprof": (lambda p: rezipped(p, base, {DOCUMENT: document_with(
                base, "x", b"0,", MAX_DOCUMENT_BYTES - _MB)}), True, 1, 3 * MAX_DOCUMENT_BYTES / _MB),
            "waits_filling_the_cap.nbprof": (lambda p: rezipped(p, base, {DOCUMENT: waits_filling_the_cap(base)}),
                                             True, 3, 512),
            "trace_bomb.nbprof": (lambda p: rezipped(p, base, {"trace.json": (
                b'{"traceEvents": [', b" ", limit + 16 * _MB, b"]}")}), False, 1, 100),
            "trace_of_blanks.nbprof": (lambda p: rezipped(p, base, {"trace.json": (
                b"", b" ", limit - 100 * _MB, b"")}), False, 1, 100),
            "blank.pt.trace.json.gz": (lambda p: blank_gzip(p, args.blank_mb), False, 1, 100),
            "many_entries.nbprof": (lambda p: many_entries(p, base, 300_000), False, 1, 100),
            "deep.nbprof": (lambda p: rezipped(p, base, {DOCUMENT: (
                b'{"format": "nbprofiler.report", "version": 1, "report": ' + b"[" * 100_000, b"]", 100_000, b"}")}),
                False, 1, 100),
        }
        for name, (make, loads, most_s, most_mb) in files.items():
            path = tmp / name
            make(path)
            r = probe(path, base_path)
            rise = r["rise"] / _MB
            answered = r["outcome"] == "loaded" if loads else r["outcome"].startswith("TraceError")
            ok &= answered and r["seconds"] <= most_s and rise <= most_mb
            print(f"{name} ({path.stat().st_size / 1e6:.1f} MB on disk): {r['seconds']:.2f} s (at most {most_s:g}), "
                  f"peak RSS rise {rise:.0f} MiB (at most {most_mb:.0f}); {r['outcome'][:160]}")
            path.unlink()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("OK" if ok else "TARGET MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
