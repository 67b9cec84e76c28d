"""The History tab: every stored run of the kernel, newest first, with when, what, how it ended,
its verdict and how long it took (`workbench history NAME`'s table); then its bench times per
case across runs, each case's times as a sparkline, the regressions beyond the measured noise
marked in red."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import DataTable, Static

from workbench.bench.history import TREND_HEADERS, trend_row
from workbench.run.store import UNREADABLE
from workbench.tui.tabs.base import Pane, View, rows_table
from workbench.tui.widgets.plain import PlainStatic
from workbench.views.bench import spark
from workbench.views.finished import Finished
from workbench.views.history import KERNEL_RUN_HEADERS, KernelHistory, run_row

FLAGGED = ("NOT correct", UNREADABLE)
"""Verdicts drawn in red, as runs that ended in an error: what needs a look."""
STATUS_STYLE = {"cancelled": "yellow"}


class HistoryPane(Pane):
    def body(self) -> ComposeResult:
        yield rows_table("history-runs", KERNEL_RUN_HEADERS)
        yield rows_table("history-cases", TREND_HEADERS)
        yield PlainStatic(id="history-sparks")

    def empty_text(self, view: View) -> str:
        return (
            f"no runs of {view.entry.name} stored: its history lists every run of it (check, "
            f"ir, resources, sweep, diagnose, cache, profile, bench), newest first, with bench "
            f"times per case across runs (the store travels with reports/)"
        )

    def clear(self) -> None:
        super().clear()
        self.query_one("#history-cases", DataTable).display = False

    def render_result(self, result: KernelHistory, finished: Finished) -> None:
        runs = self.query_one("#history-runs", DataTable)
        for rec in result.runs:
            cells = run_row(rec, kernel=False)
            flagged = rec.status not in ("ok", "cancelled") or cells[-1].startswith(FLAGGED)
            style = "bold red" if flagged else STATUS_STYLE.get(rec.status, "")
            runs.add_row(*(Text(c, style) for c in cells))
        table = self.query_one("#history-cases", DataTable)
        table.display = bool(result.trends)
        sparks = Text()
        for t in result.trends:
            cells = trend_row(t)
            style = "bold red" if t.regression else ""
            table.add_row(*(Text(c, style) for c in cells))
            times = [p.ms for p in t.points]
            sparks.append(f"{cells[0]:<40} {spark(times)}  ", style)
            sparks.append(f"{times[0]:.4g} -> {times[-1]:.4g} ms, {t.verdict}\n", style)
        self.query_one("#history-sparks", Static).update(sparks)
