"""The Check tab: a row per case as the check runs (the CLI's columns), the verdict on top. A
long note is cut at a word in its cell and shown whole below the table: the highlighted case's,
else the first case's whose note was cut."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import DataTable, Static

from workbench.check.result import CaseResult
from workbench.tui.tabs.base import Pane, rows_table
from workbench.tui.widgets.plain import PlainStatic
from workbench.views.finished import Finished
from workbench.views.rows import CHECK_HEADERS, case_shape, check_row
from workbench.views.text import ELLIPSIS, word_cut

NOTE_CELL = 40
"""Columns a note takes in its cell; the rest shows below the table."""


class CheckPane(Pane):
    def body(self) -> ComposeResult:
        yield rows_table("cases", CHECK_HEADERS)
        yield PlainStatic(id="case-note")

    def on_mount(self) -> None:
        self.cases: list[CaseResult] = []

    def clear(self) -> None:
        self.cases = []
        super().clear()

    def add_event(self, event: dict) -> None:
        if event.get("event") == "case":
            self._add(CaseResult.from_dict(event["case"]))

    def render_result(self, result: Any, finished: Finished) -> None:
        for case in result.cases:
            self._add(case)

    def _add(self, case: CaseResult) -> None:
        cells = check_row(case)
        cut = word_cut(cells[-1], NOTE_CELL)
        note = cells[-1][:cut] + (ELLIPSIS if cut < len(cells[-1]) else "")
        table = self.query_one(DataTable)
        table.add_row(*cells[:-1], note)
        self.cases.append(case)
        self._show_note(table.cursor_row)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_note(event.cursor_row)

    def _show_note(self, row: int) -> None:
        cut = [c for c in self.cases if len(c.reason) > NOTE_CELL]
        here = self.cases[row] if 0 <= row < len(self.cases) else None
        case = here if here in cut else cut[0] if cut else None
        shown = Text()
        if case is not None:
            shown.append(f"{case.status} {case.dtype} {case_shape(case)} {case.layout}: ", "bold")
            shown.append(case.reason)
        self.query_one("#case-note", Static).update(shown)
