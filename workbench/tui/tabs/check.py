"""The Check tab: a row per case as the check runs (the CLI's columns), the verdict on top."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.widgets import DataTable

from workbench.check.result import CaseResult
from workbench.tui.tabs.base import Pane, rows_table
from workbench.views.actions import Finished
from workbench.views.rows import CHECK_HEADERS, check_row


class CheckPane(Pane):
    def body(self) -> ComposeResult:
        yield rows_table("cases", CHECK_HEADERS)

    def add_event(self, event: dict) -> None:
        if event.get("event") == "case":
            self.query_one(DataTable).add_row(*check_row(CaseResult.from_dict(event["case"])))

    def render_result(self, result: Any, finished: Finished) -> None:
        table = self.query_one(DataTable)
        for case in result.cases:
            table.add_row(*check_row(case))
