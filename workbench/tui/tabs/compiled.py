"""The Resources and IR tabs: what one "ir" job compiled, per config and per stage."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Static, TextArea

from workbench.ir.result import IrResult
from workbench.views.rows import RESOURCE_HEADERS, finding_lines, resource_row

IR_STAGES = ("ttir", "ttgir", "llir", "ptx", "sass")


def compiled_line(result: IrResult) -> str:
    return f"{result.kernel}: {len(result.variants)} config(s), {result.arch} ({result.mode})"


class ResourcesPane(Vertical):
    def compose(self) -> ComposeResult:
        yield DataTable(id="resources", zebra_stripes=True)
        yield Static(id="findings")

    def on_mount(self) -> None:
        self.query_one(DataTable).add_columns(*RESOURCE_HEADERS)

    def reset(self) -> None:
        self.query_one(DataTable).clear()
        self.query_one(Static).update("")

    def add_event(self, event: dict) -> None:
        pass

    def show(self, result: dict) -> list[str]:
        compiled = IrResult.from_dict(result)
        table = self.query_one(DataTable)
        table.clear()
        for v in compiled.variants:
            table.add_row(*resource_row(v))
        self.query_one(Static).update(Text(finding_lines(compiled.findings)))
        return [compiled_line(compiled)]


class IRPane(Vertical):
    """One stage at a time of the first config that compiled; `[` `]` step through the stages."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._paths: dict[str, str] = {}
        self._stage = 0

    def compose(self) -> ComposeResult:
        yield TextArea(id="ir", read_only=True, show_line_numbers=True)

    def reset(self) -> None:
        self._paths = {}

    def add_event(self, event: dict) -> None:
        pass

    def show(self, result: dict) -> list[str]:
        compiled = IrResult.from_dict(result)
        first = next((v for v in compiled.variants if not v.error), None)
        artifacts = first.artifacts if first else {}
        self._paths = {s: p for s, p in artifacts.items() if s in IR_STAGES}
        self._show_stage()
        return [compiled_line(compiled)]

    def step(self, by: int) -> None:
        if self._paths:
            self._stage = (self._stage + by) % len(IR_STAGES)
            self._show_stage()

    def _show_stage(self) -> None:
        stage = IR_STAGES[self._stage]
        path = self._paths.get(stage)
        text = Path(path).read_text(errors="replace") if path else f"no {stage} for this kernel"
        area = self.query_one(TextArea)
        area.load_text(text)
        area.border_title = f"{stage}  ([ ] change stage)"
