"""The Cache tab: a cache report (entries, autotune results, findings) as tables and text."""

from __future__ import annotations

import time

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from workbench.views import cache as rows


class CachePane(Vertical):
    """Shows the dict `workbench cache --json` prints (cache.report.build_report)."""

    def compose(self) -> ComposeResult:
        yield Static(id="cache-summary")
        yield DataTable(id="cache-compiled", zebra_stripes=True)
        yield DataTable(id="cache-tuned", zebra_stripes=True)
        yield Static(id="cache-findings")

    def on_mount(self) -> None:
        self.query_one("#cache-compiled", DataTable).add_columns(*rows.COMPILED_HEADERS)
        self.query_one("#cache-tuned", DataTable).add_columns(*rows.TUNED_HEADERS)

    def show(self, report: dict) -> list[str]:
        s, now = report["scan"], time.time()
        summary = rows.summary_line(report)
        self.query_one("#cache-summary", Static).update(Text(summary))
        compiled = self.query_one("#cache-compiled", DataTable)
        compiled.clear()
        for c in s["compiled"]:
            compiled.add_row(*rows.compiled_row(c, now))
        tuned = self.query_one("#cache-tuned", DataTable)
        tuned.clear()
        for t in s["tuned"]:
            tuned.add_row(*rows.tuned_row(t, now))
        self.query_one("#cache-findings", Static).update(
            Text(rows.finding_text(report["findings"]))
        )
        return [summary]
