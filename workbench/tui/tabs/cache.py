"""The Cache tab: Triton's compile and autotune caches as `workbench cache NAME` reads them, with
the keys this kernel's inputs are served and the findings (stale, broken, unreachable entries)."""

from __future__ import annotations

import time
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static

from workbench.tui.tabs.base import Pane, View
from workbench.views import cache as rows
from workbench.views.actions import Finished


class CachePane(Pane):
    def body(self) -> ComposeResult:
        with VerticalScroll(id="cache-body"):
            yield DataTable(id="cache-compiled", zebra_stripes=True)
            yield DataTable(id="cache-tuned", zebra_stripes=True)
            yield Static(id="cache-findings")

    def on_mount(self) -> None:
        self.query_one("#cache-compiled", DataTable).add_columns(*rows.COMPILED_HEADERS)
        self.query_one("#cache-tuned", DataTable).add_columns(*rows.TUNED_HEADERS)

    def empty_text(self, view: View) -> str:
        return (
            f"no cache report for {view.entry.name} in this session: {view.key} reads Triton's "
            f"caches and recomputes the keys {view.entry.name}'s inputs are served (a child job)"
        )

    def clear(self) -> None:
        for table in self.query(DataTable):
            table.clear()
        self.query_one("#cache-findings", Static).update("")

    def render_result(self, result: Any, finished: Finished) -> None:
        self.show_report(result)

    def show_report(self, report: dict) -> None:
        """The dict `workbench cache --json` prints (`cache.report.build_report`)."""
        s, now = report["scan"], time.time()
        compiled = self.query_one("#cache-compiled", DataTable)
        compiled.add_rows(rows.compiled_row(c, now) for c in s["compiled"])
        tuned = self.query_one("#cache-tuned", DataTable)
        tuned.add_rows(rows.tuned_row(t, now) for t in s["tuned"])
        self.query_one("#cache-findings", Static).update(
            Text(rows.finding_text(report["findings"]))
        )
