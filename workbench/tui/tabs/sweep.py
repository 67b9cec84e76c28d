"""The Sweep tab: a row per config as the sweep finishes it; at the end the ranked table (each
config named by what sets it apart, the values all share said once above), the highlighted
config's whole explanation under it, the terminal plot (time per config, markers for spills,
low occupancy, failures), Triton's pick and the config set to paste into @triton.autotune. `n`
profiles the highlighted config (GPU)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static

from workbench.sweep import analysis, plot
from workbench.sweep.result import SweepResult
from workbench.sweep.row import SweepRow
from workbench.sweep.space import autotune_snippet
from workbench.tui.tabs.base import Pane, StartAction, rows_table
from workbench.tui.widgets.plain import PlainStatic
from workbench.views.finished import Finished
from workbench.views.sweep import NARROW, names, rows_of


class SweepPane(Pane):
    def body(self) -> ComposeResult:
        yield PlainStatic(id="sweep-shared")
        yield rows_table("sweep-rows", NARROW)
        yield PlainStatic(id="sweep-why")
        with VerticalScroll(id="sweep-extra"):
            yield PlainStatic(id="sweep-plot")
            yield PlainStatic(id="sweep-notes")

    def on_mount(self) -> None:
        self.rows: list[SweepRow] = []
        """The table's rows as data, in its order."""
        self.names: dict[str, str] = {}
        self.dtype: str | None = None

    def clear(self) -> None:
        self.rows = []
        super().clear()

    def add_event(self, event: dict) -> None:
        """Live: each config's row as it lands (unranked until the end)."""
        if event.get("event") == "config":
            row: SweepRow = event["row"].copy()
            self.rows.append(row)
            cells = rows_of([row], narrow=True)[0]
            self.query_one(DataTable).add_row("-", *cells[1:])  # ranked when the sweep ends

    def render_result(self, result: SweepResult, finished: Finished) -> None:
        self.dtype = result.dtype
        table = self.query_one(DataTable)
        table.clear(columns=True)  # widths fit the short names, not the live rows' full ones
        table.add_columns(*NARROW)
        plots, notes, shared = [], [], []
        self.rows, self.names = [], {}
        shapes = analysis.by_shape(result.rows)
        for shape, rows in shapes.items():
            self.rows += plot.order(rows)
            self.names |= names(rows)
            # one shape is said in the head; several each name their rows
            for n, config, *rest in rows_of(rows, narrow=True):
                table.add_row(n, f"{shape} {config}" if len(shapes) > 1 else config, *rest)
            if any(r["status"] == analysis.TIMED for r in rows):
                plots += [shape, *plot.bars(rows, width=30)]
            if plot.shared_text(rows):
                shared.append(f"{shape}: " * (len(shapes) > 1) + plot.shared_text(rows))
            info = result.shapes[shape]
            if (info.get("triton") or {}).get("label"):
                notes.append(f"{shape}: Triton's autotuner picks {info['triton']['label']}")
            if info.get("finding"):
                notes.append(f"{shape}: {info['finding']}")
        chosen = result.minimal_set.get("configs")
        if chosen:
            notes.append(autotune_snippet(chosen))
        self.query_one("#sweep-shared", Static).update(Text("\n".join(shared)))
        self.query_one("#sweep-plot", Static).update(
            Text("\n".join(plots + [plot.LEGEND]) if plots else "")
        )
        self.query_one("#sweep-notes", Static).update(Text("\n".join(notes)))
        self.say_why()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.say_why()

    def say_why(self) -> None:
        """The highlighted config's whole explanation, under the table."""
        row = self.highlighted()
        why = (row or {}).get("why")
        name = self.names.get(row["label"], row["label"]) if row else ""
        self.query_one("#sweep-why", Static).update(Text(f"{name}: {why}" if why else ""))

    def highlighted(self) -> SweepRow | None:
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
