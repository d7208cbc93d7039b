"""The flame graph (an icicle) of a report: the tree of ``Report.flame``, capped, as every view draws it.

The root spans the width at the top; under each box its children, as wide as their share of
its time, largest first. The explorer and the saved view draw it from ``flame_payload`` in the
JupyterLab extension (``labextension/src/report/flame.ts``: the host/device switch, click to
zoom, search), under ``FLAME_MIME``; the static HTML, which runs no script, inlines
``flame_svg``: the same boxes, each with its name and time in a ``<title>`` that shows on hover.

A trace of 300k events can hold thousands of distinct paths. The views keep the
``MAX_FLAME_NODES`` boxes that hold the largest share of host or device time (and their
ancestors); the smaller boxes under each kept box are merged into one "other" box, and the
view says how many were merged. ``Report.flame`` keeps them all.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..analysis.flame import FLAME_COLUMNS
from ..format import fmt_us
from .chart_svg import COLOR_VARS
from .escape import esc

if TYPE_CHECKING:
    from ..report import Report
    from .view_model import ReportViewModel

FLAME_MIME = "application/vnd.nbprofiler.flame+json"
MAX_FLAME_NODES = 1500
FLAME_HOW = ("Where the time went, from your code down: your functions (--stack), the nn.Modules (--modules), the "
             "operators as they nested, and the kernels each launched, summed over the profiled steps. A box is as "
             "wide as its share of the time; the root holds the operator table's self times summed.")
# Fill per kind of box (``chart_svg.COLOR_VARS``' fixed colours: an SVG attribute takes no CSS variable).
KIND_COLORS = {"root": "other", "frame": "dataloader", "module": "communication", "operator": "cpu_exec",
               "kernel": "kernel", "other": "other"}
SVG_WIDTH = 1200
ROW_PX = 18
CHAR_PX = 6.5  # the width of one character at the chart's 11px font, for cutting labels to their box
MIN_BOX_PX = 0.3  # narrower boxes are not drawn (their time is in their parent's)


@dataclass(frozen=True)
class FlameView:
    """The boxes the views draw: ``nodes`` (``FLAME_COLUMNS``, capped, "other" boxes added), how many
    nodes the report's tree has (``total``) and how many were merged into "other" (``merged``)."""

    nodes: pd.DataFrame
    total: int
    merged: int
    has_device: bool

    @property
    def note(self) -> str | None:
        """What the cap left out, in words; None when every node is shown."""
        if not self.merged:
            return None
        return (f"The {self.total - self.merged:,} largest of {self.total:,} boxes are drawn; {self.merged:,} smaller "
                f"ones are merged into an \"other\" box under their parent (Report.flame holds them all).")


def flame_view(report: "Report", limit: int = MAX_FLAME_NODES) -> FlameView | None:
    """The report's flame graph capped at ``limit`` boxes, or None when it has no operator time."""
    nodes = report.flame
    if len(nodes) <= 1 or (nodes["host_us"].iloc[0] <= 0 and nodes["device_us"].iloc[0] <= 0):
        return None
    shown, merged = capped(nodes, limit)
    return FlameView(shown, len(nodes), merged, bool(nodes["device_us"].iloc[0] > 0))


def capped(nodes: pd.DataFrame, limit: int) -> tuple[pd.DataFrame, int]:
    """The ``limit`` nodes with the largest share of host or device time, their ancestors, and per
    kept node one "other" child holding the nodes left out below it; and how many were left out."""
    if len(nodes) <= limit:
        return nodes, 0
    parent = nodes["parent"].to_numpy()
    times = nodes[["host_us", "device_us"]].to_numpy()
    root = np.where(times[0] > 0, times[0], 1.0)
    score = (times / root).max(axis=1)
    keep = np.zeros(len(nodes), dtype=bool)
    keep[np.argsort(-score, kind="stable")[:limit]] = True
    keep[0] = True
    # Ids number parents first: one pass from the leaves up keeps every kept node's ancestors.
    for i in np.flatnonzero(keep)[::-1]:
        if parent[i] >= 0:
            keep[parent[i]] = True
    # Each left-out node's nearest kept ancestor, parents first.
    owner = np.arange(len(nodes))
    for i in np.flatnonzero(~keep):
        owner[i] = owner[parent[i]] if not keep[parent[i]] else parent[i]
    dropped = np.flatnonzero(~keep)
    direct = dropped[keep[parent[dropped]]]  # the left-out subtrees' tops hold their whole time
    other = pd.DataFrame({"owner": parent[direct], "host_us": times[direct, 0], "device_us": times[direct, 1]})
    other = other.groupby("owner", sort=True).sum()
    count = pd.Series(owner[dropped]).value_counts()
    kept = nodes[keep].reset_index(drop=True)
    new_id = np.full(len(nodes), -1, dtype=np.int64)
    new_id[keep] = np.arange(len(kept))
    kept["id"] = new_id[nodes["id"].to_numpy()[keep]]
    kept["parent"] = np.where(kept["parent"] >= 0, new_id[np.maximum(kept["parent"].to_numpy(), 0)], -1)
    depth_of = kept["depth"].to_numpy()
    owners = other.index.to_numpy()
    extra = pd.DataFrame({
        "id": np.arange(len(kept), len(kept) + len(owners), dtype=np.int64),
        "parent": new_id[owners],
        "depth": depth_of[new_id[owners]] + 1,
        "name": [_other_name(int(count.get(o, 0))) for o in owners],
        "kind": "other",
        "host_us": other["host_us"].to_numpy(),
        "device_us": other["device_us"].to_numpy(),
    })
    return pd.concat([kept, extra], ignore_index=True)[FLAME_COLUMNS], len(dropped)


def layout(nodes: pd.DataFrame, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """Each node's left edge and width as fractions of the root's ``metric`` time: children side by
    side under their parent, largest first (ties in id order)."""
    value = nodes[metric].to_numpy(dtype=np.float64)
    parent = nodes["parent"].to_numpy()
    total = value[0] if value[0] > 0 else 1.0
    width = value / total
    left = np.zeros(len(nodes))
    order = np.lexsort((np.arange(len(nodes)), -value, nodes["depth"].to_numpy()))
    next_free = np.zeros(len(nodes))  # per parent, where its next child starts
    for i in order:
        p = parent[i]
        if p >= 0:
            left[i] = left[p] + next_free[p]
            next_free[p] += width[i]
    return left, width


def box_title(name: str, value: float, root: float, metric: str) -> str:
    """A box's hover text: its name, time and share of the whole."""
    label = "host" if metric == "host_us" else "device"
    return f"{name}\n{label} {fmt_us(value)} ({value / root:.1%} of all)" if root > 0 else name


def flame_svg(view: FlameView, metric: str) -> str:
    """The icicle by ``metric`` (``host_us`` or ``device_us``) as static SVG, script-free: each box
    with its name cut to fit and its whole name and time in its ``<title>``."""
    nodes = view.nodes
    left, width = layout(nodes, metric)
    value = nodes[metric].to_numpy(dtype=np.float64)
    root = float(value[0])
    height = (int(nodes["depth"].max()) + 1) * ROW_PX
    label = "host" if metric == "host_us" else "device"
    out = [f'<svg class="nbp-chart nbp-flame" data-metric="{label}" viewBox="0 0 {SVG_WIDTH} {height}" '
           f'width="{SVG_WIDTH}" height="{height}" role="img" '
           f'aria-label="Flame graph by {label} time" style="max-width:none" xmlns="http://www.w3.org/2000/svg">']
    for i, rec in enumerate(nodes.itertuples(index=False)):
        w = width[i] * SVG_WIDTH
        if w < MIN_BOX_PX or value[i] <= 0:
            continue
        x, y = left[i] * SVG_WIDTH, int(rec.depth) * ROW_PX
        fill = COLOR_VARS[KIND_COLORS.get(str(rec.kind), "other")][1]
        fits = int((w - 4) / CHAR_PX)
        name = str(rec.name)
        text = name if len(name) <= fits else (name[:fits - 1] + "…" if fits > 2 else "")
        out.append(f'<g data-kind="{esc(rec.kind)}"><title>{esc(box_title(name, value[i], root, metric))}</title>'
                   f'<rect x="{x:.2f}" y="{y}" width="{max(w - 0.5, 0.1):.2f}" height="{ROW_PX - 1}" fill="{fill}" '
                   f'fill-opacity="0.55"/>'
                   + (f'<text x="{x + 3:.2f}" y="{y + 13}">{esc(text)}</text>' if text else "") + "</g>")
    out.append("</svg>")
    return "".join(out)


def metrics(view: FlameView) -> tuple[str, ...]:
    """The times the flame graph is drawn by: device first where the run has any."""
    return ("device_us", "host_us") if view.has_device else ("host_us",)


def flame_section(model: "ReportViewModel") -> str:
    """The static report's flame graph: one icicle per time, in a box that scrolls sideways."""
    view = model.flame
    if view is None:
        return ""
    note = f'<div class="how">{esc(view.note)}</div>' if view.note else ""
    return ("<h4>Flame graph</h4>" + f'<div class="how">{esc(FLAME_HOW)} Hover a box for its name and time.</div>'
            + note + "".join(f'<div class="how">By {"host" if m == "host_us" else "device"} time:</div>'
                             f'<div style="overflow-x:auto">{model.flame_svg(m)}</div>' for m in metrics(view)))


def flame_payload(view: FlameView | None) -> dict[str, Any] | None:
    """The boxes as the extension draws them: ``{columns, rows, total, merged, note, how, has_device}``."""
    if view is None:
        return None
    rows = [[int(r.id), int(r.parent), int(r.depth), str(r.name), str(r.kind), float(r.host_us), float(r.device_us)]
            for r in view.nodes.itertuples(index=False)]
    return {"columns": list(FLAME_COLUMNS), "rows": rows, "total": view.total, "merged": view.merged,
            "note": view.note, "how": FLAME_HOW, "has_device": view.has_device}


def display_bundle(payload: dict[str, Any] | None, markup: str) -> dict[str, Any] | None:
    """``{FLAME_MIME: payload, "text/html": markup}``: the interactive graph, the static one without the extension."""
    return None if payload is None else {FLAME_MIME: payload, "text/html": markup}


def _other_name(merged: int) -> str:
    return f"other ({merged:,} smaller box{'' if merged == 1 else 'es'})"
