"""How long each tutorial notebook takes to run headless, as a user's "Run All" would.

Each notebook in notebooks/ is executed with nbclient in a fresh kernel, with the repository
importable (as the tests run them), and its wall time printed beside its budget. Figures only:
the tests check what the notebooks show, never how long they take, since CI shares its cores.

    .venv/bin/python bench/notebook_times.py [NAME ...]     (default: every notebook)
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
# The time each tutorial should stay under on a 2-core machine, to stay worth running in class.
BUDGET_S = {"03_memory.ipynb": 60}
DEFAULT_BUDGET_S = 90


def run(path: Path) -> float:
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    return time.perf_counter() - start


def main(names: list[str]) -> None:
    os.environ["PYTHONPATH"] = str(ROOT) + (os.pathsep + os.environ["PYTHONPATH"] if "PYTHONPATH" in os.environ else "")
    paths = [ROOT / "notebooks" / n for n in names] if names else sorted((ROOT / "notebooks").glob("*.ipynb"))
    for path in paths:
        seconds = run(path)
        budget = BUDGET_S.get(path.name, DEFAULT_BUDGET_S)
        over = "" if seconds <= budget else "  OVER BUDGET"
        print(f"{path.name}: {seconds:.1f} s (budget {budget} s){over}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
