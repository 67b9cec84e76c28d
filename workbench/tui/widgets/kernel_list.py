"""The kernel list: a row per kernel with its standing from the store (`views.kernels`), kept on
the selected kernel through filtering, sorting and reloading; Home and End go to the first and
last row; a click on a header sorts by that column (again: the other way)."""

from __future__ import annotations

from collections.abc import Sequence

from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable

from workbench.catalog.discovery import KernelEntry
from workbench.views.kernels import LIST_HEADERS, NO_STATUS, KernelStatus, row


class KernelList(DataTable):
    BINDINGS = [
        Binding("home", "first", "first kernel", show=False),
        Binding("end", "last", "last kernel", show=False),
    ]

    class SortBy(Message):
        def __init__(self, column: str) -> None:
            super().__init__()
            self.column = column

    def __init__(self, **kwargs: object) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)  # type: ignore[arg-type]
        self.entries: list[KernelEntry] = []

    def on_mount(self) -> None:
        for header in LIST_HEADERS:
            self.add_column(header, key=header)

    def populate(
        self, entries: Sequence[KernelEntry], status: dict[str, KernelStatus], keep: str | None
    ) -> None:
        """Show `entries` in order, the cursor on `keep` when it is among them."""
        self.entries = list(entries)
        self.clear()
        for e in self.entries:
            self.add_row(*row(e, status.get(e.name, NO_STATUS)), key=e.name)
        names = [e.name for e in self.entries]
        if names:
            self.move_cursor(row=names.index(keep) if keep in names else 0, animate=False)

    def update_status(self, entry: KernelEntry, status: KernelStatus) -> None:
        if entry.name not in self.rows:
            return
        for header, cell in zip(LIST_HEADERS, row(entry, status)):
            if self.get_cell(entry.name, header) != cell:
                self.update_cell(entry.name, header, cell)

    @property
    def selected(self) -> KernelEntry | None:
        if not self.entries or self.cursor_row < 0:
            return None
        return self.entries[min(self.cursor_row, len(self.entries) - 1)]

    def action_first(self) -> None:
        self.move_cursor(row=0)

    def action_last(self) -> None:
        self.move_cursor(row=max(self.row_count - 1, 0))

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        self.post_message(self.SortBy(str(event.column_key.value)))
