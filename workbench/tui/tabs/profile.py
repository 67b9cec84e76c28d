"""The Profile tab: the newest ncu profile of the kernel (stored, imported, or run now on a GPU
host): per-launch facts, measured findings with their line and fix, hot lines, NVIDIA's rules."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static

from workbench.tui.tabs.base import Pane, View, rows_table
from workbench.tui.widgets.plain import PlainStatic, PlainTable
from workbench.views.finished import Finished
from workbench.views.rows import (
    LINE_HEADERS,
    NO_MEASURED_FINDINGS,
    RULE_HEADERS,
    hot_line_rows,
    measured_finding_rows,
    no_profile_line,
    profile_facts,
    rule_rows,
)

SEVERITY_STYLE = {"high": "bold red", "medium": "yellow", "low": "dim"}


class ProfilePane(Pane):
    def body(self) -> ComposeResult:
        with VerticalScroll(id="profile-body"):
            yield PlainTable(id="profile-kernels", zebra_stripes=True)
            yield PlainStatic(id="profile-findings")
            yield rows_table("profile-lines", LINE_HEADERS, cursor="cell")
            yield rows_table("profile-rules", RULE_HEADERS, cursor="cell")

    def empty_text(self, view: View) -> str:
        return no_profile_line(view.entry.name)

    def clear(self) -> None:
        super().clear()
        for table in self.query(DataTable):
            table.display = False

    def render_result(self, result: dict, finished: Finished) -> None:
        """The ncu summary: a dict by design (profile.json, what `profile --json` prints); the
        profile-target job's TargetResult stays with the session that reads ncu's report."""
        headers, facts = profile_facts(result)
        kernels = self.query_one("#profile-kernels", DataTable)
        kernels.clear(columns=True)
        kernels.add_columns(*headers)
        tables = {
            "#profile-kernels": facts,
            "#profile-rules": rule_rows(result),
            "#profile-lines": hot_line_rows(result),
        }
        for selector, rows in tables.items():
            table = self.query_one(selector, DataTable)
            table.add_rows(rows)
            table.display = bool(rows)
        self.query_one("#profile-findings", Static).update(findings_grid(result))


def findings_grid(summary: dict) -> Table | Text:
    """Measured findings as a two-column grid, so wrapped titles and fixes keep their column."""
    rows = measured_finding_rows(summary)
    if not rows:
        return Text(NO_MEASURED_FINDINGS)
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column(ratio=1)
    for severity, id, where, title, fix in rows:
        left = Text(f"{severity} {id}", style=SEVERITY_STYLE.get(severity, "")) + Text(f"\n{where}")
        grid.add_row(left, Text(title) + Text(f"\nfix: {fix}", style="italic"))
    return grid
