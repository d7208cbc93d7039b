"""Which notebook cell is running, so that a run can be found again as "this cell's previous run".

A cell's source changes between runs (that is the point of profiling it again), so the
source cannot name it. JupyterLab, Notebook 7 and VS Code send the cell's id with each
execute request (``metadata.cellId``), and jupyter_server tells the kernel the notebook's
path (ipykernel puts it in ``__session__``). Outside such a front end (a terminal
IPython, nbclient without ids) there is no id: the key is then a fingerprint of the
source, which names the same cell as long as its text is unchanged.
"""
from __future__ import annotations

import os
from typing import Any

from ..records import SOURCE_PREFIX, source_fingerprint


def cell_key(shell: Any, source: str) -> str:
    """The front end's id of the running cell, else ``source:<fingerprint>`` of ``source``."""
    cell_id = _request_metadata(shell).get("cellId")
    if isinstance(cell_id, str) and cell_id:
        return cell_id
    return SOURCE_PREFIX + source_fingerprint(source)


def notebook_path(shell: Any) -> str | None:
    """The notebook's path as the server named it, or None outside a served notebook."""
    name = getattr(shell, "user_ns", {}).get("__session__") or os.environ.get("JPY_SESSION_NAME")
    return name if isinstance(name, str) and name else None


def _request_metadata(shell: Any) -> dict[str, Any]:
    """The metadata of the execute request being run (empty outside ipykernel)."""
    get_parent = getattr(shell, "get_parent", None)
    parent = get_parent() if callable(get_parent) else None
    metadata = parent.get("metadata") if isinstance(parent, dict) else None
    return metadata if isinstance(metadata, dict) else {}
