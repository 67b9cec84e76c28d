"""The Sweep tab: a row per config as the sweep finishes it; at the end the ranked table, the
terminal plot (time per config, markers for spills, low occupancy, failures), Triton's pick and
the config set to paste into @triton.autotune. `n` profiles the highlighted config (GPU)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static

from workbench.sweep import analysis, plot
from workbench.sweep.result import SweepResult
from workbench.sweep.space import autotune_snippet
from workbench.tui.tabs.base import Pane, StartAction, rows_table
from workbench.tui.widgets.plain import PlainStatic
from workbench.views.actions import Finished
from workbench.views.sweep import HEADERS, rows_of, shared_text, table_order


class SweepPane(Pane):
    def body(self) -> ComposeResult:
        yield rows_table("sweep-rows", HEADERS)
        with VerticalScroll(id="sweep-extra"):
            yield PlainStatic(id="sweep-plot")
            yield PlainStatic(id="sweep-notes")

    def on_mount(self) -> None:
        self.rows: list[dict] = []
        """The table's rows as data, in its order."""
        self.dtype: str | None = None

    def clear(self) -> None:
        self.rows = []
        super().clear()

    def add_event(self, event: dict) -> None:
        """Live: each config's row as it lands (unranked until the end)."""
        if event.get("event") == "config":
            row = dict(event["row"])
            row.setdefault("why", "")
            self.rows.append(row)
            cells = rows_of([row], short=False)[0]
            self.query_one(DataTable).add_row("-", *cells[1:])  # ranked when the sweep ends

    def render_result(self, result: SweepResult, finished: Finished) -> None:
        self.dtype = result.dtype
        table = self.query_one(DataTable)
        plots, notes = [], []
        self.rows = []
        for shape, rows in analysis.by_shape(result.rows).items():
            self.rows += table_order(rows)
            for cells in rows_of(rows):
                table.add_row(*cells[:1], f"{shape} {cells[1]}", *cells[2:])
            if any(r["status"] == analysis.TIMED for r in rows):
                plots += [shape, *plot.bars(rows, width=30)]
            info = result.shapes[shape]
            if shared_text(rows):
                notes.append(f"{shape}: {shared_text(rows)}")
            if (info.get("triton") or {}).get("label"):
                notes.append(f"{shape}: Triton's autotuner picks {info['triton']['label']}")
            if info.get("finding"):
                notes.append(f"{shape}: {info['finding']}")
        chosen = result.minimal_set.get("configs")
        if chosen:
            notes.append(autotune_snippet(chosen))
        self.query_one("#sweep-plot", Static).update(
            Text("\n".join(plots + [plot.LEGEND]) if plots else "")
        )
        self.query_one("#sweep-notes", Static).update(Text("\n".join(notes)))

    def highlighted(self) -> dict | None:
        """The sweep row under the table's cursor (what `n` profiles)."""
        row = self.query_one(DataTable).cursor_row
        return self.rows[row] if 0 <= row < len(self.rows) else None

    def check_profile_row(self) -> bool:
        return self.highlighted() is not None

    def action_profile_row(self) -> None:
        """ncu on the highlighted config: pinned, at its shape and dtype (`profile --pin`)."""
        row = self.highlighted()
        if row is None:
            return
        case = "x".join(map(str, row["shape"])) + (f":{self.dtype}" if self.dtype else "")
        self.post_message(StartAction("profile", {"case": case, "pin": row["values"]}))
