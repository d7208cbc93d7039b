"""The Hardware view's optional tables (roofline, collectives) are looked up by name: a name the
Report does not have is an error, never a silent "no table", while a table with no rows, or one
a report lacks, is shown as none."""
from __future__ import annotations

from pathlib import Path

import pytest

import nbprofiler
from nbprofiler.render.hardware import optional_table

DATA = Path(__file__).resolve().parents[1] / "data"


def test_a_misspelt_table_name_raises_while_a_table_without_rows_is_none(tmp_path, monkeypatch):
    gpu = nbprofiler.load(DATA / "traces" / "a100_train.pt.trace.json.gz")
    assert optional_table(gpu, "roofline") is not None  # the name spelled right finds the rows
    with pytest.raises(AttributeError, match="roofine"):
        optional_table(gpu, "roofine")

    cpu = nbprofiler.load(DATA / "golden" / "growing_memory.nbprof")
    assert cpu.collectives.empty and optional_table(cpu, "collectives") is None
    monkeypatch.setenv("NBPROFILER_HISTORY", str(tmp_path / "history.sqlite"))
    stored = nbprofiler.stored_run(nbprofiler.history.keep(cpu, cell="memory-cell", notebook="tables.ipynb"))
    assert "roofline" in stored.lacks and optional_table(stored, "roofline") is None
