"""The History tab: the kernel's bench times per case across runs (`workbench history NAME
--trend`'s table), each case's times as a sparkline, and the regressions beyond the measured
noise marked in red."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import DataTable, Static

from workbench.bench.history import TREND_HEADERS, trend_row
from workbench.tui.tabs.base import Pane, View, rows_table
from workbench.tui.widgets.plain import PlainStatic
from workbench.views.actions import Finished
from workbench.views.bench import spark


class HistoryPane(Pane):
    def body(self) -> ComposeResult:
        yield rows_table("history-cases", TREND_HEADERS)
        yield PlainStatic(id="history-sparks")

    def empty_text(self, view: View) -> str:
        return (
            f"no bench runs of {view.entry.name} stored: its history is the bench times of each "
            f"case across runs (bench runs on a GPU host; the store travels with reports/)"
        )

    def render_result(self, result: Any, finished: Finished) -> None:
        table = self.query_one(DataTable)
        sparks = Text()
        for t in result:
            cells = trend_row(t)
            style = "bold red" if t.regression else ""
            table.add_row(*(Text(c, style) for c in cells))
            times = [p.ms for p in t.points]
            sparks.append(f"{cells[0]:<40} {spark(times)}  ", style)
            sparks.append(f"{times[0]:.4g} -> {times[-1]:.4g} ms, {t.verdict}\n", style)
        self.query_one("#history-sparks", Static).update(sparks)
