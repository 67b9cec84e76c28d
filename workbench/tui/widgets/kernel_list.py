"""The kernel list: a row per kernel with its standing from the store (`views.kernels`), kept on
the selected kernel through filtering, sorting and reloading. Up/Down, PageUp/PageDown, Home and
End move the cursor, Enter chooses, a click on a header sorts by that column (again: the other
way). Drawn line by line from plain cells, so forty kernels paint in the first frame as fast as
a handful (a DataTable renders each cell through Rich)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.events import Click
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from workbench.catalog.discovery import KernelEntry
from workbench.tui.widgets import LINE_KEYS
from workbench.views.kernels import LIST_HEADERS, NO_STATUS, KernelStatus, row


class KernelList(ScrollView, can_focus=True):
    COMPONENT_CLASSES = {
        "kernel-list--header",
        "kernel-list--cursor",
        "kernel-list--even",
        "kernel-list--flag",
    }
    BINDINGS = [
        *LINE_KEYS,
        Binding("enter", "choose", "choose", show=False),
    ]
    FLAGS = ("FAIL", "stale", "edited", "error", "crash", "timeout")
    """Cells drawn in the flag style: what needs a look."""

    cursor_row: reactive[int] = reactive(0)

    class Highlighted(Message):
        """The cursor is on another kernel."""

    class Chosen(Message):
        """Enter (or a click) on the kernel under the cursor."""

    class SortBy(Message):
        def __init__(self, column: str) -> None:
            super().__init__()
            self.column = column

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.entries: list[KernelEntry] = []
        self.cells: list[tuple[str, ...]] = []
        self.widths = [len(h) for h in LIST_HEADERS]

    # -- content ---------------------------------------------------------------------------------

    def populate(
        self, entries: Sequence[KernelEntry], status: dict[str, KernelStatus], keep: str | None
    ) -> None:
        """Show `entries` in order, the cursor on `keep` when it is among them."""
        self.entries = list(entries)
        self.cells = [row(e, status.get(e.name, NO_STATUS)) for e in self.entries]
        self._measure()
        names = [e.name for e in self.entries]
        at = names.index(keep) if keep in names else 0
        if at == self.cursor_row:
            self.post_message(self.Highlighted())  # other kernels, same row: still news
        self.cursor_row = at
        self.refresh()

    def update_status(self, entry: KernelEntry, status: KernelStatus) -> None:
        names = [e.name for e in self.entries]
        if entry.name in names:
            cells = row(entry, status)
            i = names.index(entry.name)
            if self.cells[i] != cells:
                self.cells[i] = cells
                self._measure()
                self.refresh()

    def _measure(self) -> None:
        rows = [LIST_HEADERS, *self.cells]
        self.widths = [max(len(r[i]) for r in rows) for i in range(len(LIST_HEADERS))]
        self.virtual_size = Size(sum(self.widths) + 2 * len(self.widths), len(self.cells) + 1)

    def get_content_width(self, container: Size, viewport: Size) -> int:
        return self.virtual_size.width

    @property
    def selected(self) -> KernelEntry | None:
        if not self.entries:
            return None
        return self.entries[min(self.cursor_row, len(self.entries) - 1)]

    @property
    def row_count(self) -> int:
        return len(self.cells)

    def get_row_at(self, index: int) -> tuple[str, ...]:
        return self.cells[index]

    def column_at(self, x: int) -> str | None:
        """The header under screen column `x` of the widget."""
        edge = -round(self.scroll_x)
        for header, width in zip(LIST_HEADERS, self.widths):
            edge += width + 2
            if x < edge:
                return header
        return None

    # -- drawing ---------------------------------------------------------------------------------

    def _line(self, cells: Sequence[str]) -> str:
        return " " + "  ".join(c.ljust(w) for c, w in zip(cells, self.widths)) + " "

    def render_line(self, y: int) -> Strip:
        width, scroll_x = self.size.width, round(self.scroll_x)
        base = self.rich_style
        if y == 0:  # the header stays in place as the rows scroll
            style = base + self.get_component_rich_style("kernel-list--header")
            return Strip([Segment(self._line(LIST_HEADERS), style)]).crop_extend(
                scroll_x, scroll_x + width, style
            )
        index = round(self.scroll_y) + y - 1
        if index >= len(self.cells):
            return Strip.blank(width, base)
        style = base
        if index % 2:
            style += self.get_component_rich_style("kernel-list--even")
        if index == self.cursor_row:
            style += self.get_component_rich_style("kernel-list--cursor")
        marked = self.get_component_rich_style("kernel-list--flag")
        flag = Style(color=marked.color, bold=marked.bold)  # on the row's own background
        segments = [Segment(" ", style)]
        for i, (cell, w) in enumerate(zip(self.cells[index], self.widths)):
            text = cell.ljust(w) + ("  " if i < len(self.widths) - 1 else " ")
            segments.append(Segment(text, style + flag if cell in self.FLAGS else style))
        return Strip(segments).crop_extend(scroll_x, scroll_x + width, style)

    # -- moving ----------------------------------------------------------------------------------

    def watch_cursor_row(self, old: int, new: int) -> None:
        top, rows = round(self.scroll_y), max(self.size.height - 1, 1)
        if new < top:
            self.scroll_to(y=new, animate=False)
        elif new >= top + rows:
            self.scroll_to(y=new - rows + 1, animate=False)
        self.refresh()
        if old != new:
            self.post_message(self.Highlighted())

    def action_move(self, by: int) -> None:
        if self.entries:
            self.cursor_row = max(0, min(self.cursor_row + by, len(self.entries) - 1))

    def action_page(self, by: int) -> None:
        self.action_move(by * max(1, self.size.height - 2))

    def action_jump(self, where: int) -> None:
        """1: the first kernel; -1: the last."""
        self.action_move(-where * len(self.entries))

    def action_choose(self) -> None:
        if self.entries:
            self.post_message(self.Chosen())

    def on_click(self, event: Click) -> None:
        if event.y == 0:
            column = self.column_at(event.x)
            if column is not None:
                self.post_message(self.SortBy(column))
            return
        index = round(self.scroll_y) + event.y - 1
        if 0 <= index < len(self.entries):
            self.cursor_row = index
