"""A pandas table in a widget, a page at a time: filter, sort, top N and pages, with clickable rows.

Why it stays fast with thousands of rows: the frame is filtered, sorted and cut in pandas,
and each page (``PAGE_ROWS`` rows) is drawn as one HTML widget. Only the controls and the
header cells are widgets, a few dozen whatever the table's length. The explorer's tabs and
the comparison's tabs show their tables with it.

Text from a trace in a page goes through ``html.escape`` (``html.esc``).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import ipywidgets as widgets
import pandas as pd

from .html import Col, esc

PAGE_ROWS = 50
# The widest a name column grows before its names end in "…" (the whole name is on hover).
NAME_MAX_WIDTH = "480px"
DEFAULT_TOP = 100


class PagedTable:
    """A DataFrame shown a page at a time: filter, sort (header click or control), top-N, pages.

    ``view`` is the filtered, sorted, top-N frame; ``page_frame`` the rows on
    screen. ``on_change`` runs after every redraw (the operator picker uses it);
    ``on_pick``, when given, runs with a row's index label when the row is clicked.

    The header is drawn in the same CSS grid as the rows, so its cells sit exactly
    over their columns. Header and row clicks reach the kernel through ``clicks``,
    a hidden Text in the same view: the grid's ``onclick`` writes the clicked cell's
    ``data-pick`` ("sort:KEY" or "row:INDEX", then a counter so a repeated click is a
    change) into it and fires the ``input`` event ipywidgets listens to.
    """

    def __init__(self, frame: pd.DataFrame, columns: Sequence[Col], sort: str, noun: str,
                 filter_column: str = "name", top: int = DEFAULT_TOP,
                 on_pick: Callable[[Any], None] | None = None) -> None:
        self.noun = noun
        self.filter_column = filter_column
        self.on_change: Callable[[], None] | None = None
        self.on_pick = on_pick
        self.picked: Any = None
        self._frame = frame
        self._columns: list[Col] = list(columns)
        self._quiet = False
        self._wanted_top = top  # what the user asked for; the slider shows it clipped to the rows there are
        self._matched = len(frame)
        self.page = 0
        self.filter = widgets.Text(placeholder=f"filter {noun} by name (substring)", continuous_update=True,
                                   layout=widgets.Layout(width="260px"))
        self.sort = widgets.Dropdown(description="sort by", options=self._sort_options(), value=sort,
                                     layout=widgets.Layout(width="230px"))
        self.descending = widgets.ToggleButton(value=True, layout=widgets.Layout(width="130px"))
        self._word_order()
        self.top = widgets.IntSlider(description="top N", min=1, max=max(len(frame), 1),
                                     value=max(min(top, len(frame)), 1), continuous_update=False,
                                     layout=widgets.Layout(width="330px"))
        self.show_all = widgets.Button(layout=widgets.Layout(width="auto"))
        self.prev = widgets.Button(description="◀ previous", layout=widgets.Layout(width="110px"))
        self.next = widgets.Button(description="next ▶", layout=widgets.Layout(width="110px"))
        self.status = widgets.HTML()
        self.clicks = widgets.Text(layout=widgets.Layout(display="none"))
        self.clicks.add_class("nbp-clicks")
        self.body = widgets.HTML(layout=widgets.Layout(width="100%"))
        self.filter.observe(self._restart, "value")
        self.sort.observe(self._restart, "value")
        self.descending.observe(self._word_order, "value")
        self.descending.observe(self._restart, "value")
        self.top.observe(self._top_moved, "value")
        self.clicks.observe(self._clicked, "value")
        self.show_all.on_click(lambda _: self._show_all())
        self.prev.on_click(lambda _: self._turn(-1))
        self.next.on_click(lambda _: self._turn(1))
        self.box = widgets.VBox([
            widgets.HBox([self.filter, self.sort, self.descending, self.top],
                         layout=widgets.Layout(flex_flow="row wrap")),
            widgets.HBox([self.prev, self.next, self.status, self.show_all]),
            self.clicks, self.body,
        ])
        self.box.add_class("nbp-table")
        self._view = frame
        self.refresh()

    # -- state ----------------------------------------------------------------------------
    @property
    def frame(self) -> pd.DataFrame:
        return self._frame

    def set_frame(self, frame: pd.DataFrame, columns: Sequence[Col] | None = None, sort: str | None = None) -> None:
        """Show another frame (another grouping, another time basis), keeping the filter and the
        top N the user asked for (so a grouping with more rows shows more of them)."""
        self._quiet = True
        try:
            self._frame = frame
            self.picked = None
            if columns is not None:
                self._columns = list(columns)
                self.sort.options = self._sort_options()
            if sort is not None:
                self.sort.value = sort
            self.top.max = max(len(frame), 1)
            self.top.value = max(min(self._wanted_top, len(frame)), 1)
        finally:
            self._quiet = False
        self._restart()

    @property
    def view(self) -> pd.DataFrame:
        """The rows the controls select, as of the last redraw."""
        return self._view

    @property
    def hidden_by_top(self) -> int:
        """Rows that match the filter but lie past the top N."""
        return self._matched - len(self._view)

    def _select(self) -> pd.DataFrame:
        df = self._frame
        query = self.filter.value.strip()
        if query and self.filter_column in df:
            df = df[df[self.filter_column].astype(str).str.contains(query, case=False, regex=False)]
        key = self.sort.value
        if key in df:
            df = df.sort_values(key, ascending=not self.descending.value, kind="stable", na_position="last")
        self._matched = len(df)
        return df.head(self.top.value)

    @property
    def pages(self) -> int:
        return max(1, -(-len(self.view) // PAGE_ROWS))

    @property
    def page_frame(self) -> pd.DataFrame:
        return self.view.iloc[self.page * PAGE_ROWS:(self.page + 1) * PAGE_ROWS]

    def sort_by(self, key: str) -> None:
        """What a header click does: sort by ``key``, or flip the order if already sorted by it."""
        if self.sort.value == key:
            self.descending.value = not self.descending.value
        else:
            self._quiet = True
            self.sort.value = key
            self.descending.value = key != self.filter_column  # names A→Z, figures largest first
            self._quiet = False
            self._restart()

    def pick(self, label: Any) -> None:
        """What a row click does: mark the row and hand its index label to ``on_pick``."""
        if self.on_pick is None or label not in self._frame.index:
            return
        self.picked = label
        self.refresh()
        self.on_pick(label)

    def _clicked(self, change: dict[str, Any]) -> None:
        """A click in the grid, as the front end reports it: "sort:KEY n" or "row:INDEX n"."""
        what, _, target = str(change["new"]).split(" ")[0].partition(":")
        if what == "sort" and target in {c.key for c in self._columns}:
            self.sort_by(target)
        elif what == "row":
            try:
                label: Any = int(target)
            except ValueError:
                return
            self.pick(label)

    def _top_moved(self, change: dict[str, Any]) -> None:
        if not self._quiet:
            self._wanted_top = int(change["new"])
        self._restart()

    def _show_all(self) -> None:
        self._wanted_top = len(self._frame)
        self.top.value = self.top.max

    def _word_order(self, *_: Any) -> None:
        """The order button says the order the rows are in, as the sorted header's arrow does."""
        down = self.descending.value
        self.descending.description = "descending" if down else "ascending"
        self.descending.icon = "sort-amount-desc" if down else "sort-amount-asc"
        self.descending.tooltip = ("largest first (names Z→A); click for smallest first" if down
                                   else "smallest first (names A→Z); click for largest first")

    # -- drawing --------------------------------------------------------------------------
    def _sort_options(self) -> list[tuple[str, str]]:
        return [(c.label, c.key) for c in self._columns]

    def _template(self) -> str:
        """Figures at their widths; a name column from 160 px up to ``NAME_MAX_WIDTH``, one line each, its
        whole text on hover. The grid is as wide as its columns and scrolls sideways in its box."""
        return " ".join(c.width if not c.name else f"minmax(160px,{NAME_MAX_WIDTH})" for c in self._columns)

    def _header_row(self) -> str:
        cells = []
        for col in self._columns:
            sorted_here = col.key == self.sort.value
            order = ("descending" if self.descending.value else "ascending") if sorted_here else "none"
            arrow = (" ▼" if self.descending.value else " ▲") if sorted_here else ""
            cls = "h n" if col.name else "h"
            cls += " sorted" if sorted_here else ""
            hint = f"sort by {col.label}" + (f": {col.help}" if col.help else "")
            cells.append(f'<div class="{cls}" data-pick="sort:{esc(col.key)}" role="columnheader" aria-sort="{order}" '
                         f'title="{esc(hint)}">{esc(col.label + arrow)}</div>')
        return f'<div role="row" class="r">{"".join(cells)}</div>'

    def _restart(self, *_: Any) -> None:
        if self._quiet:
            return
        self.page = 0
        self.refresh()

    def _turn(self, step: int) -> None:
        self.page = min(max(self.page + step, 0), self.pages - 1)
        self.refresh()

    def refresh(self) -> None:
        self._view = view = self._select()
        self.page = min(self.page, self.pages - 1)
        rows = self.page_frame
        lines = [self._header_row()]
        for i, (label, rec) in enumerate(zip(rows.index, rows.itertuples(index=False))):
            classes = " c" + (" odd" if i % 2 else "") + (" picked" if label == self.picked else "")
            values = dict(zip(rows.columns, rec))
            cells = []
            for col in self._columns:
                value = values.get(col.key)
                text = "–" if value is None or pd.isna(value) else col.fmt(value)
                title = f' title="{esc(values.get(col.hover, value))}"' if col.name else ""
                cells.append(f'<div class="{"n" if col.name else ""}{classes}"{title} role="gridcell" '
                             f'data-pick="row:{label}">{esc(text)}</div>')
            selected = "true" if label == self.picked else "false"
            lines.append(f'<div role="row" class="r" aria-selected="{selected}">{"".join(cells)}</div>')
        empty = "" if len(rows) else f'<div class="how">No {esc(self.noun)} match.</div>'
        pick = " pick" if self.on_pick is not None else ""
        grid = (f'class="nbp-grid{pick}" role="grid" aria-label="{esc(self.noun)}" aria-rowcount="{len(view) + 1}" '
                f'style="grid-template-columns:{self._template()}" onclick="{_CLICK_JS}"')
        self.body.value = (f'<div class="nbp"><div class="nbp-scroll"><div {grid}>{"".join(lines)}</div></div>'
                           f"{empty}</div>")
        first = self.page * PAGE_ROWS + 1 if len(rows) else 0
        last = first + len(rows) - 1 if len(rows) else 0
        hidden = self.hidden_by_top
        more = f" · {hidden:,} more hidden by top N" if hidden else ""
        self.status.value = (f'<div class="nbp" style="padding:4px 8px">rows {first:,}–{last:,} '
                             f"of {len(view):,} shown{more} · {len(self._frame):,} {esc(self.noun)} · "
                             f"page {self.page + 1} of {self.pages}</div>")
        self.show_all.description = f"show all {self._matched:,}"
        self.show_all.tooltip = f"show the {hidden:,} rows past the top N"
        self.show_all.layout.display = "" if hidden else "none"
        self.prev.disabled = self.page == 0
        self.next.disabled = self.page >= self.pages - 1
        self.prev.tooltip = "already on the first page" if self.prev.disabled else "the previous page"
        self.next.tooltip = "already on the last page" if self.next.disabled else "the next page"
        if self.on_change is not None:
            self.on_change()


# A click anywhere in a table's grid: the cell's data-pick goes to the table's hidden Text (see PagedTable).
_CLICK_JS = ("var c=event.target.closest('[data-pick]'),t=this.closest('.nbp-table'),"
             "i=t&&t.querySelector('.nbp-clicks input');if(c&&i){i.value=c.dataset.pick+' '+Date.now();"
             "i.dispatchEvent(new Event('input',{bubbles:true}))}")

