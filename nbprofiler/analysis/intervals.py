"""Interval helpers shared by the analyses: nesting, unions, and overlap.

Host ranges on one thread nest (an op inside its caller), device activities
on a stream do not overlap, and every analysis needs one of those two views.
They are computed here once, on sorted numpy arrays.
"""
from __future__ import annotations

import numpy as np


def parent_index(start: np.ndarray, end: np.ndarray, group: np.ndarray) -> np.ndarray:
    """For ranges nested within each ``group`` (a thread), the index of each range's
    innermost enclosing range, or -1.

    Ranges that overlap without nesting (a real trace quirk: a child that ends a
    fraction of a microsecond after its parent) are treated as nested when the
    child starts inside the parent. One pass over the ranges sorted by
    (group, start, -duration): a stack per group, amortised O(n).
    """
    n = len(start)
    parent = np.full(n, -1, dtype=np.int64)
    if n == 0:
        return parent
    order = np.lexsort((-(end - start), start, group))
    s, e, g = start[order].tolist(), end[order].tolist(), group[order].tolist()
    out = [-1] * n
    stack: list[int] = []  # positions in sorted order
    current_group = None
    for i in range(n):
        if g[i] != current_group:
            stack.clear()
            current_group = g[i]
        si = s[i]
        while stack and e[stack[-1]] <= si:
            stack.pop()
        if stack:
            out[i] = stack[-1]
        stack.append(i)
    sorted_parent = np.asarray(out, dtype=np.int64)
    has = sorted_parent >= 0
    parent[order[has]] = order[sorted_parent[has]]
    return parent


def accumulate_to_ancestors(values: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """Each node's value plus the values of all its descendants."""
    total = values.astype(np.float64, copy=True)
    depth = _depth(parent)
    for d in range(int(depth.max(initial=0)), 0, -1):
        idx = np.flatnonzero(depth == d)
        np.add.at(total, parent[idx], total[idx])
    return total


def children_sum(values: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """Sum of ``values`` over each node's direct children."""
    out = np.zeros(len(parent), dtype=np.float64)
    has = parent >= 0
    np.add.at(out, parent[has], values[has])
    return out


def _depth(parent: np.ndarray) -> np.ndarray:
    depth = np.zeros(len(parent), dtype=np.int64)
    cur = parent.copy()
    while True:
        live = cur >= 0
        if not live.any():
            return depth
        depth[live] += 1
        cur[live] = parent[cur[live]]


def union(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge intervals into disjoint sorted ones."""
    if len(start) == 0:
        return np.empty(0), np.empty(0)
    order = np.argsort(start, kind="stable")
    s, e = start[order], end[order]
    running_end = np.maximum.accumulate(e)
    new = np.empty(len(s), dtype=bool)
    new[0] = True
    new[1:] = s[1:] > running_end[:-1]
    starts = s[new]
    group = np.cumsum(new) - 1
    ends = np.full(len(starts), -np.inf)
    np.maximum.at(ends, group, e)
    return starts, ends


def union_length(start: np.ndarray, end: np.ndarray) -> float:
    s, e = union(start, end)
    return float((e - s).sum())


def subtract(a_start: np.ndarray, a_end: np.ndarray, b_start: np.ndarray, b_end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint intervals ``a`` minus disjoint intervals ``b`` (both sorted)."""
    if len(a_start) == 0 or len(b_start) == 0:
        return a_start, a_end
    points = np.concatenate([a_start, a_end, b_start, b_end])
    bounds = np.unique(points)
    mids = (bounds[:-1] + bounds[1:]) / 2
    in_a = _covered(mids, a_start, a_end)
    in_b = _covered(mids, b_start, b_end)
    keep = in_a & ~in_b
    return union(bounds[:-1][keep], bounds[1:][keep])


def intersect_length(a_start: np.ndarray, a_end: np.ndarray, b_start: np.ndarray, b_end: np.ndarray) -> float:
    """Total length of the overlap of two disjoint sorted interval sets."""
    if len(a_start) == 0 or len(b_start) == 0:
        return 0.0
    bounds = np.unique(np.concatenate([a_start, a_end, b_start, b_end]))
    mids = (bounds[:-1] + bounds[1:]) / 2
    both = _covered(mids, a_start, a_end) & _covered(mids, b_start, b_end)
    return float((bounds[1:] - bounds[:-1])[both].sum())


def _covered(points: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Whether each point lies inside one of the disjoint sorted intervals."""
    i = np.searchsorted(start, points, side="right") - 1
    ok = i >= 0
    out = np.zeros(len(points), dtype=bool)
    out[ok] = points[ok] < end[i[ok]]
    return out
