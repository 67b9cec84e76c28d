"""The terminal UI: the kernel list; check, resources, IR and ncu profile of the selected kernel.

Screens and widgets only: the catalog comes from `workbench.catalog.discovery`, work runs through
`workbench.run.jobs` (profiles through `workbench.profilers.session`, as the CLI's) in a child
process, rows come from `workbench.views.rows`. Nothing here imports torch or triton, so the list
paints at once.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import (
    DataTable,
    Footer,
    Header,
    ProgressBar,
    Static,
    TabbedContent,
    TabPane,
    TextArea,
)

from workbench.catalog.discovery import Catalog, KernelEntry, discover
from workbench.profilers import saved
from workbench.run import jobs, machine
from workbench.runtime.errors import Problem, WorkbenchError
from workbench.views.rows import (
    CHECK_HEADERS,
    KERNEL_HEADERS,
    LINE_HEADERS,
    NO_MEASURED_FINDINGS,
    RESOURCE_HEADERS,
    RULE_HEADERS,
    check_row,
    check_verdict,
    finding_lines,
    hot_line_rows,
    kernel_row,
    measured_finding_rows,
    no_profile_line,
    outcome_lines,
    profile_facts,
    resource_row,
    rule_rows,
)

if TYPE_CHECKING:
    from workbench.profilers.session import ProfileRun

IR_STAGES = ("ttir", "ttgir", "llir", "ptx", "sass")
PROFILE_PHASES = ("warmup", "range", "done")
"""The profiled child's phases, as steps of the progress bar."""


class WorkbenchApp(App[None]):
    TITLE = "triton-workbench"
    CSS = """
    #left { width: 45%; }
    #kernels { height: 1fr; }
    #problems { color: $error; height: auto; max-height: 8; }
    #details { height: auto; padding: 0 1; }
    #progress { padding: 0 1; }
    #verdict { height: auto; padding: 0 1; }
    #cases, #resources { height: 1fr; }
    #findings { height: auto; max-height: 12; padding: 0 1; }
    #ir { height: 1fr; }
    #profile-source, #profile-findings { height: auto; padding: 0 1; }
    #profile-kernels, #profile-rules, #profile-lines { height: auto; margin-bottom: 1; }
    """
    BINDINGS = [
        Binding("c", "check", "Check", id="check"),
        Binding("s", "resources", "Resources", id="resources"),
        Binding("i", "ir", "IR", id="ir"),
        Binding("p", "profile", "Profile", id="profile"),
        Binding("left_square_bracket", "stage(-1)", "Prev stage", show=False),
        Binding("right_square_bracket", "stage(1)", "Next stage", show=False),
        Binding("x", "cancel", "Cancel", id="cancel"),
        Binding("r", "reload", "Reload", id="reload"),
        Binding("q", "quit", "Quit", id="quit"),
    ]

    def __init__(self, paths: Sequence[str] = ()):
        super().__init__()
        self.paths = list(paths)
        self.catalog = Catalog()
        self.running: jobs.Outcome | None = None
        self._cancel = threading.Event()
        self._busy = False
        self._ir: dict[str, str] = {}
        self._stage = 0
        self._gpu = machine.has_gpu()

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal():
            with Vertical(id="left"):
                yield DataTable(id="kernels", cursor_type="row", zebra_stripes=True)
                yield Static(id="problems")
            with Vertical(id="right"):
                yield Static(id="details")
                yield ProgressBar(id="progress", total=1, show_eta=False)
                yield Static(id="verdict")
                with TabbedContent(id="tabs"):
                    with TabPane("Check", id="tab-check"):
                        yield DataTable(id="cases", zebra_stripes=True)
                    with TabPane("Resources", id="tab-resources"):
                        yield DataTable(id="resources", zebra_stripes=True)
                        yield Static(id="findings")
                    with TabPane("IR", id="tab-ir"):
                        yield TextArea(id="ir", read_only=True, show_line_numbers=True)
                    with TabPane("Profile", id="tab-profile"):
                        with VerticalScroll():
                            yield Static(id="profile-source")
                            yield DataTable(id="profile-kernels", zebra_stripes=True)
                            yield Static(id="profile-findings")
                            yield DataTable(id="profile-lines", zebra_stripes=True)
                            yield DataTable(id="profile-rules", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = f"{machine.mode()} mode"
        self.query_one("#kernels", DataTable).add_columns(*KERNEL_HEADERS)
        self.query_one("#cases", DataTable).add_columns(*CHECK_HEADERS)
        self.query_one("#resources", DataTable).add_columns(*RESOURCE_HEADERS)
        self.query_one("#profile-rules", DataTable).add_columns(*RULE_HEADERS)
        self.query_one("#profile-lines", DataTable).add_columns(*LINE_HEADERS)
        self.action_reload()

    # -- kernel list -------------------------------------------------------------------------

    def action_reload(self) -> None:
        self.catalog = discover(self.paths)
        table = self.query_one("#kernels", DataTable)
        table.clear()
        for k in self.catalog.kernels:
            table.add_row(*kernel_row(k), key=k.name)
        problems = "\n".join(f"cannot load: {p}" for p in self.catalog.problems)
        self.query_one("#problems", Static).update(Text(problems))
        self._show_details()

    def selected(self) -> KernelEntry | None:
        table = self.query_one("#kernels", DataTable)
        if not self.catalog.kernels or table.cursor_row < 0:
            return None
        return self.catalog.kernels[min(table.cursor_row, len(self.catalog.kernels) - 1)]

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "kernels":
            self._show_details()
            if self.query_one("#tabs", TabbedContent).active == "tab-profile":
                self._show_stored_profile()

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        if event.pane.id == "tab-profile":
            self._show_stored_profile()

    def _show_details(self) -> None:
        k = self.selected()
        text = Text("no kernels found") if k is None else Text(k.name, style="bold")
        if k:
            text.append(f"  {k.file}" + (f"\n{k.description}" if k.description else ""))
        text.append(
            "\n"
            + ", ".join(f"{a}{'' if ok else ' (needs GPU)'}" for a, ok in machine.actions().items())
        )
        self.query_one("#details", Static).update(text)

    # -- jobs: check, resources, IR ----------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("check", "resources", "ir"):
            return not self._busy
        if action == "profile":  # without a GPU it only shows what the store holds
            return not (self._busy and self._gpu)
        if action == "cancel":
            return True if self._busy else None
        return True

    def action_check(self) -> None:
        self._start("check", {}, "tab-check")

    def action_resources(self) -> None:
        self._start("ir", {"stages": ["ttir"]}, "tab-resources")

    def action_ir(self) -> None:
        self._start("ir", {"stages": list(IR_STAGES)}, "tab-ir")

    def action_cancel(self) -> None:
        self._cancel.set()

    def action_stage(self, step: int) -> None:
        if self._ir:
            self._stage = (self._stage + step) % len(IR_STAGES)
            self._show_stage()

    def _start(self, kind: str, params: dict, tab: str) -> None:
        entry = self.selected()
        if entry is None or self._busy:
            return
        self._busy = True
        self._cancel.clear()
        self.refresh_bindings()
        self.query_one("#tabs", TabbedContent).active = tab
        if kind == "check":
            self.query_one("#cases", DataTable).clear()
        else:
            params = {"file": entry.file, "configs": [], **params}
        self.query_one("#verdict", Static).update(Text(f"{kind}: {entry.name} ..."))
        self.query_one("#progress", ProgressBar).update(total=1, progress=0)
        self.run_job(jobs.Job(kind, entry, params), tab)

    @work(thread=True, exclusive=True, group="job")
    def run_job(self, job: jobs.Job, tab: str) -> None:
        outcome = jobs.run_job(
            job, on_event=lambda e: self.call_from_thread(self._on_event, e), cancel=self._cancel
        )
        self.call_from_thread(self._on_outcome, outcome, tab)

    def _on_event(self, event: dict) -> None:
        if event.get("event") == "progress":
            bar = self.query_one("#progress", ProgressBar)
            bar.update(total=max(event["total"], 1), progress=event["done"])
        elif event.get("event") == "case":
            self.query_one("#cases", DataTable).add_row(*check_row(event["case"]))

    def _on_outcome(self, outcome: jobs.Outcome, tab: str) -> None:
        self._busy = False
        self.refresh_bindings()
        result = outcome.result
        lines = []
        if result and tab == "tab-check":
            lines.append(check_verdict(result))
        elif result:
            self._show_compiled(result, tab)
            lines.append(
                f"{result['kernel']}: {len(result['variants'])} config(s), "
                f"{result['arch']} ({result['mode']})"
            )
        lines += outcome_lines(outcome, outcome.problem)
        self.query_one("#verdict", Static).update(Text("\n".join(lines)))

    def _show_compiled(self, result: dict, tab: str) -> None:
        table = self.query_one("#resources", DataTable)
        table.clear()
        for v in result["variants"]:
            table.add_row(*resource_row(v))
        self.query_one("#findings", Static).update(Text(finding_lines(result["findings"])))
        first = next((v for v in result["variants"] if not v["error"]), None)
        self._ir = {s: p for s, p in (first or {}).get("artifacts", {}).items() if s in IR_STAGES}
        if tab == "tab-ir":
            self._show_stage()

    def _show_stage(self) -> None:
        stage = IR_STAGES[self._stage]
        path = self._ir.get(stage)
        text = Path(path).read_text(errors="replace") if path else f"no {stage} for this kernel"
        area = self.query_one("#ir", TextArea)
        area.load_text(text)
        area.border_title = f"{stage}  ([ ] change stage)"

    # -- profile: the latest stored ncu result; on a GPU host, a new run -----------------------

    def action_profile(self) -> None:
        entry = self.selected()
        if entry is None:
            return
        self.query_one("#tabs", TabbedContent).active = "tab-profile"
        self._show_stored_profile()
        if not self._gpu or self._busy:
            return
        self._busy = True
        self._cancel.clear()
        self.refresh_bindings()
        self.query_one("#verdict", Static).update(Text(f"profile: {entry.name} under ncu ..."))
        self.query_one("#progress", ProgressBar).update(total=len(PROFILE_PHASES), progress=0)
        self.run_profile(entry)

    @work(thread=True, exclusive=True, group="job")
    def run_profile(self, entry: KernelEntry) -> None:
        from workbench.profilers import session

        def on_event(event: dict) -> None:
            self.call_from_thread(self._on_profile_event, event)

        try:
            run = session.profile(entry, session.Request(), on_event, self._cancel)
        except WorkbenchError as exc:  # refused before it started: no ncu, no GPU, bad spec
            self.call_from_thread(self._on_profile_refused, exc.problem)
            return
        self.call_from_thread(self._on_profile, entry, run)

    def _on_profile_event(self, event: dict) -> None:
        if event.get("event") == "phase" and event.get("phase") in PROFILE_PHASES:
            step = PROFILE_PHASES.index(event["phase"]) + 1
            self.query_one("#progress", ProgressBar).update(progress=step)
        elif event.get("event") == "tool":
            self.query_one("#verdict", Static).update(Text(event["line"]))

    def _on_profile_refused(self, problem: Problem) -> None:
        self._busy = False
        self.refresh_bindings()
        self.query_one("#verdict", Static).update(Text(f"[{problem.kind}] {problem}"))

    def _on_profile(self, entry: KernelEntry, run: ProfileRun) -> None:
        self._busy = False
        self.refresh_bindings()
        outcome = run.outcome
        lines = []
        if run.summary:
            found = len(run.summary.get("findings", []))
            lines.append(f"{entry.name}: {run.summary['launches']} launch(es), {found} finding(s)")
        lines += [f"note: {n}" for n in run.notes]
        lines += outcome_lines(outcome, run.problem, f" ({run.tool.name})")
        self.query_one("#verdict", Static).update(Text("\n".join(lines)))
        selected = self.selected()
        if run.summary and selected is not None and selected.name == entry.name:
            self._show_profile(run.summary, f"profile {outcome.run_id}, report {run.report}")

    def _show_stored_profile(self) -> None:
        entry = self.selected()
        if entry is None:
            return
        stored = saved.latest(entry.name)
        if stored is None:
            self._show_profile(None, no_profile_line(entry.name))
        else:
            self._show_profile(stored.summary, stored.describe())

    def _show_profile(self, summary: dict | None, source: str) -> None:
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


SEVERITY_STYLE = {"high": "bold red", "medium": "yellow", "low": "dim"}


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


def run_app(paths: Sequence[str] = ()) -> int:
    WorkbenchApp(paths).run()
    return 0
