"""The Cache tab: Triton's compile and autotune caches as `workbench cache NAME` reads them: the
findings (stale, broken, unreachable entries), the keys this kernel's inputs are served, and the
kernel's own entries."""

from __future__ import annotations

import time

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static

from workbench.tui.tabs.base import Pane, View, rows_table
from workbench.tui.widgets.plain import PlainStatic
from workbench.views import cache as rows
from workbench.views.cache_reach import reach_lines, reach_of
from workbench.views.finished import Finished


class CachePane(Pane):
    def body(self) -> ComposeResult:
        with VerticalScroll(id="cache-body"):
            yield PlainStatic(id="cache-findings")
            yield PlainStatic(id="cache-reach")
            yield rows_table("cache-compiled", rows.COMPILED_HEADERS, cursor="cell")
            yield rows_table("cache-tuned", rows.TUNED_HEADERS, cursor="cell")

    def empty_text(self, view: View) -> str:
        return (
            f"no cache report for {view.entry.name} in this session: {view.key} reads Triton's "
            f"caches and recomputes the keys {view.entry.name}'s inputs are served (a child job)"
        )

    def render_result(self, result: dict, finished: Finished) -> None:
        self.show_report(result)

    def show_report(self, report: dict) -> None:
        """The dict `workbench cache --json` prints (`cache.report.build_report`): findings
        first, the kernel's keys, then its own entries (every entry when its keys are unknown).
        A dict by design: built in this process around the cache job's typed `reach`."""
        now = time.time()
        self.query_one("#cache-findings", Static).update(
            Text(rows.finding_text(report["findings"]))
        )
        compiled, tuned, note = rows.own_entries(report)
        lines = reach_lines(reach_of(report)) + ([note] if note else [])
        self.query_one("#cache-reach", Static).update(Text("\n".join(lines)))
        self.query_one("#cache-compiled", DataTable).add_rows(
            rows.compiled_row(c, now) for c in compiled
        )
        self.query_one("#cache-tuned", DataTable).add_rows(rows.tuned_row(t, now) for t in tuned)
