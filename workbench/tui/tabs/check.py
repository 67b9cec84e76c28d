"""The Check tab: one row per case as the check runs, the verdict at the end."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable

from workbench.check.result import CaseResult, CheckReport
from workbench.views.rows import CHECK_HEADERS, check_row, check_verdict


class CheckPane(Vertical):
    def compose(self) -> ComposeResult:
        yield DataTable(id="cases", zebra_stripes=True)

    def on_mount(self) -> None:
        self.query_one(DataTable).add_columns(*CHECK_HEADERS)

    def reset(self) -> None:
        self.query_one(DataTable).clear()

    def add_event(self, event: dict) -> None:
        if event.get("event") == "case":
            self.query_one(DataTable).add_row(*check_row(CaseResult.from_dict(event["case"])))

    def show(self, result: dict) -> list[str]:
        return [check_verdict(CheckReport.from_dict(result))]
