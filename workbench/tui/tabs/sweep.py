"""The Sweep tab: a row per config as the sweep finishes it, with progress; at the end the ranked
table, the terminal plot (time per config, markers for spills, low occupancy, failures), Triton's
pick and the config set to paste into @triton.autotune."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, ProgressBar, Static

from workbench.sweep import analysis, plot
from workbench.sweep.space import autotune_snippet
from workbench.views.sweep import HEADERS, rows_of, table_order


class SweepPane(Vertical):
    DEFAULT_CSS = """
    SweepPane #sweep-rows { height: 1fr; }
    SweepPane #sweep-plot, SweepPane #sweep-notes { height: auto; padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        yield ProgressBar(id="sweep-progress", show_eta=True)
        yield DataTable(id="sweep-rows", zebra_stripes=True)
        yield Static(id="sweep-plot")
        yield Static(id="sweep-notes")

    def on_mount(self) -> None:
        self.query_one(DataTable).add_columns(*HEADERS)
        self.rows: list[dict] = []
        """The table's rows as data, in its order."""
        self.dtype: str | None = None

    def reset(self) -> None:
        self.rows = []
        self.query_one(DataTable).clear()
        self.query_one("#sweep-plot", Static).update("")
        self.query_one("#sweep-notes", Static).update("")

    def add_event(self, event: dict) -> None:
        """Live: progress, and each config's row as it lands (unranked until the end)."""
        if event.get("event") == "progress" and event.get("total"):
            self.query_one(ProgressBar).update(total=event["total"], progress=event["done"])
        elif event.get("event") == "config":
            row = dict(event["row"])
            row.setdefault("why", "")
            self.rows.append(row)
            self.query_one(DataTable).add_row(*rows_of([row])[0])

    def show(self, result: dict) -> list[str]:
        """Render a finished (or partial) sweep; returns the lines worth a notification."""
        result = result if "shapes" in result else analysis.summarize(dict(result))
        self.dtype = result.get("dtype")
        table = self.query_one(DataTable)
        table.clear()
        plots, notes = [], []
        self.rows = []
        for shape, rows in analysis.by_shape(result["rows"]).items():
            self.rows += table_order(rows)
            for cells in rows_of(rows):
                table.add_row(*cells[:1], f"{shape} {cells[1]}", *cells[2:])
            if any(r["status"] == analysis.TIMED for r in rows):
                plots += [shape, *plot.bars(rows, width=30)]
            info = result["shapes"][shape]
            if (info.get("triton") or {}).get("label"):
                notes.append(f"{shape}: Triton's autotuner picks {info['triton']['label']}")
            if info.get("finding"):
                notes.append(f"{shape}: {info['finding']}")
        chosen = (result.get("minimal_set") or {}).get("configs")
        if chosen:
            notes.append(autotune_snippet(chosen))
        self.query_one("#sweep-plot", Static).update(
            Text("\n".join(plots + [plot.LEGEND]) if plots else "")
        )
        self.query_one("#sweep-notes", Static).update(Text("\n".join(notes)))
        summary = result["summary"]
        counts = ", ".join(
            f"{summary[k]} {k}"
            for k in ("ok", "static", "pruned", "wrong", "failed", "timeout")
            if summary.get(k)
        )
        shapes = len(result["shapes"])
        head = (
            f"sweep {result['kernel']}: {summary['configs']} config(s) x {shapes} shape(s) "
            f"({counts}), {result['mode']}"
        )
        return [head] + [f"best {s}: {b}" for s, b in summary["best"].items() if b]

    def highlighted(self) -> dict | None:
        """The sweep row under the table's cursor (what `n` profiles)."""
        row = self.query_one(DataTable).cursor_row
        return self.rows[row] if 0 <= row < len(self.rows) else None
