"""The Launches tab: what kernel_fn launches, a row per launch (`workbench launches`' columns)."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.widgets import DataTable

from workbench.tui.tabs.base import Pane, rows_table
from workbench.views.finished import Finished


class LaunchesPane(Pane):
    def body(self) -> ComposeResult:
        yield rows_table("launches", ("function", "programs", "autotuned"))

    def render_result(self, result: Any, finished: Finished) -> None:
        table = self.query_one(DataTable)
        for x in result.launches:
            table.add_row(x.name, str(x.programs), "yes" if x.tuned else "no")
