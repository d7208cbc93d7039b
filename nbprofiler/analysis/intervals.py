"""Interval helpers shared by the analyses: nesting, unions, and overlap.

Host ranges on one thread nest (an op inside its caller), device activities
on a stream do not overlap, and every analysis needs one of those two views.
They are computed here once, on sorted numpy arrays: the nesting
(``parent_index``) and the walks up it (``climb``), unions, and how much of a
set of intervals falls in each window (``covered_in_windows``).
"""
from __future__ import annotations

from typing import Callable

import numpy as np


def parent_index(start: np.ndarray, end: np.ndarray, group: np.ndarray) -> np.ndarray:
    """For ranges nested within each ``group`` (a thread), the index of each range's
    innermost enclosing range, or -1.

    Ranges that overlap without nesting (a real trace quirk: a child that ends a
    fraction of a microsecond after its parent) are treated as nested when the
    child starts inside the parent. With the ranges sorted by (group, start,
    -duration), a range's parent is the last range before it in its group still
    open where it starts (``end > start``): what a walk with a stack finds, found
    here for every range at once (``_last_open_before``): a Python loop over the
    300k operators of a 1M-event trace took 0.4 s, this about 50 ms, in log2(n)
    numpy passes whatever the ranges: a walk from candidate to candidate, faster on
    real traces, takes a pass per range of a chain of overlapping ones (1.3 s for
    100k of them on one thread, against 15 ms here).
    """
    n = len(start)
    parent = np.full(n, -1, dtype=np.int64)
    if n == 0:
        return parent
    order = np.lexsort((-(end - start), start, group))
    s, e, g = start[order], end[order], group[order]
    before = _last_open_before(s, e)
    has = before >= 0
    has[has] = g[before[has]] == g[has]  # an earlier group's range is no parent
    parent[order[has]] = order[before[has]]
    return parent


def _last_open_before(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """For each i, the largest j < i with ``end[j] > start[i]``, or -1.

    The range just before is the answer for most (a first child). The others step
    left over whole windows of ranges that all close by ``start[i]``, largest window
    first, reading a sparse table of running maxima of ``end`` (level k: the max of
    the 2**k positions ending at p): log2(n) numpy passes.
    """
    n = len(start)
    levels = [end]
    width = 1
    while width * 2 <= n:
        wider = levels[-1].copy()
        np.maximum(wider[width:], levels[-1][:-width], out=wider[width:])
        levels.append(wider)
        width *= 2
    at = np.arange(-1, n - 1, dtype=np.int64)  # scanning left from i - 1
    seek = np.flatnonzero(at >= 0)
    seek = seek[end[at[seek]] <= start[seek]]
    at[seek] -= 1
    for k in range(len(levels) - 1, -1, -1):
        table = levels.pop()
        seek = seek[at[seek] >= 0]
        closed = seek[table[at[seek]] <= start[seek]]  # nothing in the window is open at start[i]
        at[closed] -= 1 << k
    at[at < 0] = -1
    return at


def climb(parent: np.ndarray, start: np.ndarray,
          up: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Walk up ``parent`` links from each node of ``start`` (-1: no walk) for as long as
    ``up(walks, nodes)`` holds, where ``walks`` are the positions in ``start`` still
    climbing and ``nodes`` the nodes they are at.

    Returns where each walk stopped (-1 once it passed a root) and how many links it
    followed. Every walk moves at once, one tree level per round, so the cost is the
    tree's depth in numpy calls, not a Python step per node: every "nearest ancestor
    that ..." question of the analyses is this loop.
    """
    node = np.array(start, dtype=np.int64)
    links = np.zeros(len(node), dtype=np.int64)
    walks = np.flatnonzero(node >= 0)
    walks = walks[up(walks, node[walks])]
    while len(walks):
        node[walks] = parent[node[walks]]
        links[walks] += 1
        walks = walks[node[walks] >= 0]
        walks = walks[up(walks, node[walks])]
    return node, links


def innermost_around(start: np.ndarray, end: np.ndarray, thread: np.ndarray, parent: np.ndarray,
                     by_thread_and_start: np.ndarray, query_thread: np.ndarray, query_ts: np.ndarray) -> np.ndarray:
    """Of ranges nested per thread (``parent``: ``parent_index``; ``by_thread_and_start``:
    ``np.lexsort((start, thread))``), the innermost one around each (thread, time), or -1.

    Vectorised: per thread (a trace has few), the last range that started at or
    before each time; then every query climbs to the parent while its candidate
    ended before it, all queries at once.
    """
    order = by_thread_and_start
    key_thread, key_start = thread[order], start[order]
    out = np.full(len(query_ts), -1, dtype=np.int64)
    by_thread = np.argsort(query_thread, kind="stable")
    threads, first = np.unique(query_thread[by_thread], return_index=True)
    for t, queries in zip(threads, np.split(by_thread, first[1:])):
        lo, hi = np.searchsorted(key_thread, t, side="left"), np.searchsorted(key_thread, t, side="right")
        if lo == hi:
            continue
        k = np.searchsorted(key_start[lo:hi], query_ts[queries], side="right")
        started = k > 0
        out[queries[started]] = order[lo + k[started] - 1]
    return climb(parent, out, lambda walks, nodes: end[nodes] < query_ts[walks])[0]


def depth(parent: np.ndarray) -> np.ndarray:
    """How many ancestors each node has (0 at a root)."""
    return climb(parent, parent, lambda walks, _: np.ones(len(walks), dtype=bool))[1]


def has_ancestor(parent: np.ndarray, flag: np.ndarray) -> np.ndarray:
    """For each node, whether one of its ancestors (not itself) is flagged."""
    return climb(parent, parent, lambda _, nodes: ~flag[nodes])[0] >= 0


def levels_deepest_first(parent: np.ndarray) -> list[np.ndarray]:
    """The nodes at each depth (ascending within one), deepest first, down to depth 1: the
    order ``accumulate_to_ancestors`` adds in. Finding them is most of a sum's cost (the
    depths, then a pass over every node per depth), so a tree asked several sums keeps them."""
    level = depth(parent)
    return [np.flatnonzero(level == d) for d in range(int(level.max(initial=0)), 0, -1)]


def accumulate_to_ancestors(values: np.ndarray, parent: np.ndarray,
                            levels: list[np.ndarray] | None = None) -> np.ndarray:
    """Each node's value plus the values of all its descendants; ``levels`` is
    ``levels_deepest_first(parent)`` where the caller has it."""
    total = values.astype(np.float64, copy=True)
    for idx in levels_deepest_first(parent) if levels is None else levels:
        np.add.at(total, parent[idx], total[idx])
    return total


def children_sum(values: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """Sum of ``values`` over each node's direct children."""
    has = parent >= 0
    return np.bincount(parent[has], weights=values[has], minlength=len(parent)).astype(np.float64, copy=False)


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
    first = np.flatnonzero(new)
    return s[first], np.maximum.reduceat(e, first)  # each merged run's latest end


def union_length(start: np.ndarray, end: np.ndarray) -> float:
    s, e = union(start, end)
    return float((e - s).sum())


def subtract(a_start: np.ndarray, a_end: np.ndarray,
             b_start: np.ndarray, b_end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


def covered_in_windows(start: np.ndarray, end: np.ndarray, win_start: np.ndarray, win_end: np.ndarray) -> np.ndarray:
    """Length of the union of ``[start, end)`` inside each window ``[win_start, win_end)``.

    Every per-step table (breakdown, idle time, phases, communication) asks this:
    of a category's time, how much lies inside step k? One ``intersect_length`` per
    window would be a Python loop over windows times a sort; here the intervals are
    merged once and a cumulative "covered up to t" is evaluated at all window edges
    with one ``searchsorted``: O((n + w) log n) for n intervals and w windows.
    Windows may overlap each other or be empty; intervals may overlap or nest.
    """
    if len(start) == 0:
        return np.zeros(len(win_start))
    return merged_covered_in_windows(*union(np.asarray(start, dtype=np.float64), np.asarray(end, dtype=np.float64)),
                                     win_start, win_end)


def merged_covered_in_windows(s: np.ndarray, e: np.ndarray, win_start: np.ndarray, win_end: np.ndarray) -> np.ndarray:
    """``covered_in_windows`` of intervals ``union`` has already merged (disjoint, sorted,
    float64): the breakdown keeps its running union merged and measures it after every part."""
    win_start = np.asarray(win_start, dtype=np.float64)
    win_end = np.asarray(win_end, dtype=np.float64)
    if len(s) == 0:
        return np.zeros(len(win_start))
    length = e - s
    before = np.concatenate([[0.0], np.cumsum(length)])  # before[k]: length of the first k intervals

    def covered_up_to(t: np.ndarray) -> np.ndarray:
        # Intervals that start at or before t; all but the last of them end before t.
        k = np.searchsorted(s, t, side="right")
        last = np.maximum(k - 1, 0)
        partial = np.clip(t - s[last], 0.0, length[last])
        return np.where(k > 0, before[last] + partial, 0.0)

    return np.maximum(covered_up_to(win_end) - covered_up_to(win_start), 0.0)


def _covered(points: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Whether each point lies inside one of the disjoint sorted intervals."""
    i = np.searchsorted(start, points, side="right") - 1
    ok = i >= 0
    out = np.zeros(len(points), dtype=bool)
    out[ok] = points[ok] < end[i[ok]]
    return out
