"""The Profile tab: the newest stored ncu profile of a kernel, or a fresh one on a GPU host."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static

from workbench.views.rows import (
    LINE_HEADERS,
    NO_MEASURED_FINDINGS,
    RULE_HEADERS,
    hot_line_rows,
    measured_finding_rows,
    profile_facts,
    rule_rows,
)

SEVERITY_STYLE = {"high": "bold red", "medium": "yellow", "low": "dim"}


class ProfilePane(VerticalScroll):
    def compose(self) -> ComposeResult:
        yield Static(id="profile-source")
        yield DataTable(id="profile-kernels", zebra_stripes=True)
        yield Static(id="profile-findings")
        yield DataTable(id="profile-lines", zebra_stripes=True)
        yield DataTable(id="profile-rules", zebra_stripes=True)

    def on_mount(self) -> None:
        self.query_one("#profile-rules", DataTable).add_columns(*RULE_HEADERS)
        self.query_one("#profile-lines", DataTable).add_columns(*LINE_HEADERS)

    def show(self, summary: dict | None, source: str) -> None:
        self.query_one("#profile-source", Static).update(Text(source))
        headers, facts = profile_facts(summary) if summary else ((), [])
        kernels = self.query_one("#profile-kernels", DataTable)
        if [str(c.label) for c in kernels.columns.values()] != list(headers):
            kernels.clear(columns=True)
            kernels.add_columns(*headers)
        tables = {
            "#profile-kernels": facts,
            "#profile-rules": rule_rows(summary) if summary else [],
            "#profile-lines": hot_line_rows(summary) if summary else [],
        }
        for selector, rows in tables.items():
            table = self.query_one(selector, DataTable)
            table.clear()
            table.add_rows(rows)
            table.display = bool(rows)
        self.query_one("#profile-findings", Static).update(_findings_grid(summary))


def _findings_grid(summary: dict | None) -> Table | Text:
    """Measured findings as a two-column grid, so wrapped titles and fixes keep their column."""
    if summary is None:
        return Text("")
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
