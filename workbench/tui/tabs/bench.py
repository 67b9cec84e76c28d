"""The Bench tab: each case's time, bandwidth, throughput, roofline fraction and speedups (the
columns `workbench bench` prints), and the roofline fraction as a bar per case."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import DataTable, Static

from workbench.bench.report import ceilings_line
from workbench.bench.result import BenchRecord
from workbench.tui.tabs.base import Pane, rows_table
from workbench.tui.widgets.plain import PlainStatic
from workbench.views import bench as rows
from workbench.views.finished import Finished


class BenchPane(Pane):
    def body(self) -> ComposeResult:
        yield rows_table("bench-rows", rows.HEADERS)
        yield PlainStatic(id="bench-bars")

    def add_event(self, event: dict) -> None:
        if event.get("event") == "record":
            self.query_one(DataTable).add_row(*rows.row(BenchRecord.from_dict(event["record"])))

    def render_result(self, result: Any, finished: Finished) -> None:
        self.query_one(DataTable).add_rows(rows.row(r) for r in result.records)
        lines = rows.bars(result.records)
        if lines:
            lines += ["", f"{result.device}. {ceilings_line(result.ceilings.to_dict())}"]
        if clocked := [c for r in result.records if (c := rows.clock_line(r))]:
            lines += ["", rows.CLOCK_HEAD + ":", *clocked]
        lines += filter(None, map(rows.unsteady_line, result.records))
        for r in result.records:
            if r.status != "ok":
                lines.append(f"{r.where}: {r.reason}")
        self.query_one("#bench-bars", Static).update(Text("\n".join(lines)))
