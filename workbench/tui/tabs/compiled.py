"""The Resources tab: registers, spills, shared memory and occupancy per compiled config, and the
static findings, from an ir job (`workbench resources`' columns)."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import DataTable, Static

from workbench.tui.tabs.base import Pane, rows_table
from workbench.tui.widgets.plain import PlainStatic
from workbench.views.finished import Finished
from workbench.views.rows import RESOURCE_HEADERS, finding_lines, resource_row


class ResourcesPane(Pane):
    def body(self) -> ComposeResult:
        yield rows_table("resources", RESOURCE_HEADERS)
        yield PlainStatic(id="findings")

    def add_event(self, event: dict) -> None:
        if event.get("event") == "variant" and event["variant"].get("error"):
            label = event["variant"]["label"]
            self.query_one(DataTable).add_row(label, *["-"] * 6, "did not compile")

    def render_result(self, result: Any, finished: Finished) -> None:
        table = self.query_one(DataTable)
        for v in result.variants:
            if v.error:
                table.add_row(v.label, *["-"] * 6, "did not compile")
            else:
                table.add_row(*resource_row(v))
        self.query_one("#findings", Static).update(Text(finding_lines(result.findings)))
