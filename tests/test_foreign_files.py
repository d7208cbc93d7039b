"""Files that are not what ``nbprofiler.load`` expects, or are but in an unusual shape.

Other profilers' traces (Chromium's own, TensorFlow's and JAX's, a Perfetto protobuf)
are refused with one line that says what the file is and what to load instead; valid
files in unusual shapes (several gzip members, leading whitespace, an empty rank file
in a folder) load; and names torch's exporter could not write are named in a note.
"""
from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path

import pytest

import nbprofiler
from conftest import TRACE_FILES, shared_trace

SMALL = "mi250_rocm_toy_train.pt.trace.json.gz"


@cache
def raw_trace(name: str = SMALL) -> bytes:
    return gzip.decompress(shared_trace(name).read_bytes())


def refused(path: str | Path) -> str:
    """The message ``load`` refuses ``path`` with; it must be one line naming the file."""
    with pytest.raises(nbprofiler.TraceError) as info:
        nbprofiler.load(path)
    message = str(info.value)
    assert "\n" not in message
    return message


# -- valid files in unusual shapes ----------------------------------------------------------

def test_a_gzip_file_of_several_members_loads_as_the_whole_trace(tmp_path):
    """``gzip.compress(a) + gzip.compress(b)`` is one stream to gzip and to torch."""
    data = raw_trace()
    half = len(data) // 2
    path = tmp_path / "two_members.pt.trace.json.gz"
    path.write_bytes(gzip.compress(data[:half]) + gzip.compress(data[half:]) + b"\0" * 16)
    assert gzip.decompress(path.read_bytes()) == data
    report = nbprofiler.load(path)
    assert report.operators.equals(nbprofiler.load(shared_trace(SMALL)).operators)


def test_an_empty_path_is_refused_not_the_current_folder_searched(tmp_path, monkeypatch):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "run.pt.trace.json.gz").write_bytes(shared_trace(SMALL).read_bytes())
    monkeypatch.chdir(tmp_path)
    assert refused("") == "the path is empty (''); give a trace file or a directory of trace files"
