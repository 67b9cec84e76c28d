"""The Diagnosis tab: the steps as they finish, then the roofline, the findings ranked by what
there is to gain (the table `workbench diagnose` prints), the highlighted one in full (evidence,
fix, the configs a fix would time), routing and what was not gathered. `y` tries the highlighted
finding's fix on a GPU host: applied, checked and timed beside the kernel as it is."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static

from workbench.diagnosis.facts import Diagnosis
from workbench.diagnosis.finding import Finding
from workbench.tui.tabs.base import Pane, StartAction, rows_table
from workbench.tui.widgets.plain import PlainStatic
from workbench.views.diagnosis import (
    FINDING_HEADERS,
    closing_lines,
    finding_detail,
    finding_rows,
)
from workbench.views.finished import Finished

SEVERITY_STYLE = {"high": "bold red", "medium": "yellow", "low": "cyan", "info": "dim"}


class DiagnosisPane(Pane):
    def body(self) -> ComposeResult:
        yield PlainStatic(id="diagnosis-steps")
        yield rows_table("diagnosis-rows", FINDING_HEADERS)
        with VerticalScroll(id="diagnosis-extra"):
            yield PlainStatic(id="diagnosis-detail")

    def on_mount(self) -> None:
        self.findings: list[Finding] = []
        self.diagnosis: Diagnosis | None = None
        self.steps: list[str] = []

    def clear(self) -> None:
        self.findings, self.diagnosis, self.steps = [], None, []
        super().clear()

    def add_event(self, event: dict) -> None:
        if event.get("event") == "step":
            self.steps.append(f"{event['step']:<10} {event['seconds']:6.1f} s  {event['said']}")
            self.query_one("#diagnosis-steps", Static).update(Text("\n".join(self.steps)))

    def render_result(self, result: Diagnosis, finished: Finished) -> None:
        self.diagnosis, self.findings = result, list(result.findings)
        self.query_one("#diagnosis-steps", Static).update("")  # the head has the roofline
        table = self.query_one(DataTable)
        rows = finding_rows(self.findings)
        # Columns sized from the rows up front: widths grown row by row left the header drawn
        # at its labels' widths now and then.
        table.clear(columns=True)
        for i, head in enumerate(FINDING_HEADERS):
            table.add_column(head, width=max([len(head), *(len(str(r[i])) for r in rows)]))
        for f, cells in zip(self.findings, rows):
            style = SEVERITY_STYLE.get(f.severity, "")
            table.add_row(cells[0], Text(cells[1], style), *cells[2:])
        self._show_detail(0)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_detail(event.cursor_row)

    def _show_detail(self, row: int) -> None:
        if self.diagnosis is None:
            return
        lines: list[str] = []
        if 0 <= row < len(self.findings):
            f = self.findings[row]
            lines = finding_detail(row + 1, f, self.diagnosis.kernel, [])
            if f.fix_id:
                lines.append("   y: try it here (GPU)")
        elif not self.findings:
            lines = ["no findings"]
        detail = "\n".join(lines + closing_lines(self.diagnosis))
        self.query_one("#diagnosis-detail", Static).update(Text(detail))

    def highlighted(self) -> Finding | None:
        row = self.query_one(DataTable).cursor_row
        return self.findings[row] if 0 <= row < len(self.findings) else None

    def check_try_fix(self) -> bool:
        f = self.highlighted()
        return f is not None and f.fix_id is not None

    def action_try_fix(self) -> None:
        """`diagnose --try ID` on the highlighted finding."""
        f = self.highlighted()
        if f is not None and f.fix_id is not None:
            self.post_message(StartAction("diagnose", {"try_fix": f.id}))
