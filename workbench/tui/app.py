"""The terminal UI: the kernel list; check, resources, IR and ncu profile of the selected kernel.

Screens and widgets only: the catalog comes from `workbench.catalog.discovery`, work runs through
`workbench.run.jobs` (profiles through `workbench.profilers.session`, as the CLI's) in a child
process, rows come from `workbench.views.rows`. Nothing here imports torch or triton, so the list
paints at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.text import Text
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Footer, Header, ProgressBar, Static, TabbedContent, TabPane

from workbench.cache.freshness import changed_since
from workbench.cache.report import build_report
from workbench.catalog.discovery import Catalog, KernelEntry, discover
from workbench.profilers import saved
from workbench.run import jobs, machine
from workbench.runtime.errors import Problem, WorkbenchError
from workbench.sweep import spread
from workbench.tui.tabs.cache import CachePane
from workbench.tui.tabs.check import CheckPane
from workbench.tui.tabs.compiled import IR_STAGES, IRPane, ResourcesPane
from workbench.tui.tabs.profile import ProfilePane
from workbench.tui.tabs.sweep import SweepPane
from workbench.views.rows import KERNEL_HEADERS, kernel_row, no_profile_line, outcome_lines

if TYPE_CHECKING:
    from workbench.profilers.session import ProfileRun

TABS = (
    ("Check", "tab-check", CheckPane),
    ("Resources", "tab-resources", ResourcesPane),
    ("IR", "tab-ir", IRPane),
    ("Profile", "tab-profile", ProfilePane),
    ("Sweep", "tab-sweep", SweepPane),
    ("Cache", "tab-cache", CachePane),
)
JOB_PANES: dict[str, type[CheckPane | ResourcesPane | IRPane]] = {
    "tab-check": CheckPane,
    "tab-resources": ResourcesPane,
    "tab-ir": IRPane,
}
"""The pane that shows a job's events and result, by the tab the job was started from."""
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
        Binding("t", "sweep", "Sweep", id="sweep"),
        Binding("n", "profile_config", "ncu this config", id="profile_config"),
        Binding("k", "cache", "Cache", id="cache"),
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
        self._pane: CheckPane | ResourcesPane | IRPane | None = None
        self._verdict = Text()
        self._shown: tuple[str, float] | None = None
        """(kernel file, when its result on screen started): to say when the file changed."""
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
                    for title, tab, pane in TABS:
                        with TabPane(title, id=tab):
                            yield pane()
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = f"{machine.mode()} mode"
        self.query_one("#kernels", DataTable).add_columns(*KERNEL_HEADERS)
        self.action_reload()
        self.set_interval(2.0, self._mark_stale)

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
        self.refresh_bindings()  # some keys belong to one tab
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
        if action in ("check", "resources", "ir", "cache", "sweep"):
            return not self._busy
        if action == "profile_config":  # on the Sweep tab; greyed without a GPU (ncu needs one)
            if self.query_one("#tabs", TabbedContent).active != "tab-sweep":
                return None
            return (
                self._gpu and not self._busy and self.query_one(SweepPane).highlighted() is not None
            )
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
        self.query_one(IRPane).step(step)

    def _begin(self, tab: str, what: str) -> KernelEntry | None:
        """The selected kernel, with the app now busy on it and `tab` shown; None when no job
        can start (nothing selected, or a job already running)."""
        entry = self.selected()
        if entry is None or self._busy:
            return None
        self._busy = True
        self._cancel.clear()
        self.refresh_bindings()
        self.query_one("#tabs", TabbedContent).active = tab
        self.query_one("#verdict", Static).update(Text(f"{what}: {entry.name} ..."))
        self.query_one("#progress", ProgressBar).update(total=1, progress=0)
        return entry

    def _start(self, kind: str, params: dict, tab: str) -> None:
        entry = self._begin(tab, kind)
        if entry is None:
            return
        self._pane = self.query_one(JOB_PANES[tab])
        self._pane.reset()
        if kind == "ir":
            params = {"configs": [], **params}
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
        elif self._pane is not None:
            self._pane.add_event(event)

    def _on_outcome(self, outcome: jobs.Outcome, tab: str) -> None:
        self._busy = False
        self.refresh_bindings()
        lines = self._pane.show(outcome.result) if outcome.result and self._pane else []
        if outcome.result and tab == "tab-ir":  # one ir job fills both tabs
            self.query_one(ResourcesPane).show(outcome.result)
        elif outcome.result and tab == "tab-resources":
            self.query_one(IRPane).show(outcome.result)
        lines += outcome_lines(outcome, outcome.problem)
        self._show_verdict(lines, outcome.job.kernel, time.time() - outcome.seconds)

    def _show_verdict(self, lines: list[str], kernel: KernelEntry | None, started: float) -> None:
        self._shown = (kernel.file, started) if kernel else None
        self._verdict = Text("\n".join(lines))
        self.query_one("#verdict", Static).update(self._verdict)

    def _mark_stale(self) -> None:
        """A result is about the code that ran: once its file changes on disk, say so."""
        if self._shown and changed_since(*self._shown):
            self._shown = None
            note = "\nthe kernel's file changed since this result: run it again"
            self.query_one("#verdict", Static).update(self._verdict + Text(note, "yellow"))

    # -- sweep: every config of the kernel's autotune space (timed on a GPU host) --------------

    def action_sweep(self) -> None:
        entry = self._begin("tab-sweep", "sweep")
        if entry is not None:
            self.query_one(SweepPane).reset()
            self.run_sweep(entry)

    @work(thread=True, exclusive=True, group="job")
    def run_sweep(self, entry: KernelEntry) -> None:
        pane = self.query_one(SweepPane)
        started = time.time()
        try:
            result, outcomes = spread.run_sweep(
                entry,
                {"space": "own"},
                [],
                lambda e: self.call_from_thread(self._sweep_event, pane, e),
                self._cancel,
            )
        except WorkbenchError as exc:
            self.call_from_thread(self._on_refused, exc.problem)
            return
        self.call_from_thread(self._on_sweep, entry, result, outcomes, started)

    def _sweep_event(self, pane: SweepPane, event: dict) -> None:
        if event.get("event") == "progress" and event.get("total"):
            bar = self.query_one("#progress", ProgressBar)
            bar.update(total=event["total"], progress=event["done"])
        pane.add_event(event)

    def _on_sweep(
        self,
        entry: KernelEntry,
        result: dict | None,
        outcomes: list[jobs.Outcome],
        started: float,
    ) -> None:
        self._busy = False
        self.refresh_bindings()
        lines = self.query_one(SweepPane).show(result) if result else []
        for outcome in outcomes[-1:]:
            lines += outcome_lines(outcome, outcome.problem)
        self._show_verdict(lines, entry, started)

    # -- cache: Triton's compile and autotune caches, with the selected kernel's keys -----------

    def action_cache(self) -> None:
        entry = self._begin("tab-cache", "cache")
        if entry is not None:
            self.run_cache(entry)

    @work(thread=True, exclusive=True, group="job")
    def run_cache(self, entry: KernelEntry) -> None:
        started = time.time()
        try:
            report = build_report(None, entry)
        except WorkbenchError as exc:  # no cache folder yet, or it cannot be read
            self.call_from_thread(self._on_refused, exc.problem)
            return
        self.call_from_thread(self._on_cache, entry, report, started)

    def _on_cache(self, entry: KernelEntry, report: dict, started: float) -> None:
        self._busy = False
        self.refresh_bindings()
        lines = self.query_one(CachePane).show(report)
        problem = report.get("problem")
        if problem:
            lines.append(f"problem: {problem['cause']}; remedy: {problem['remedy']}")
        self._show_verdict(lines, entry, started)

    # -- profile: the latest stored ncu result; on a GPU host, a new run -----------------------

    def action_profile(self) -> None:
        entry = self.selected()
        if entry is None:
            return
        self.query_one("#tabs", TabbedContent).active = "tab-profile"
        self._show_stored_profile()
        if not self._gpu or self._begin("tab-profile", "profile under ncu") is None:
            return
        self.query_one("#progress", ProgressBar).update(total=len(PROFILE_PHASES), progress=0)
        self.run_profile(entry)

    def action_profile_config(self) -> None:
        """ncu on the highlighted sweep row: its config pinned, at its shape and dtype."""
        row = self.query_one(SweepPane).highlighted()
        entry = self._begin("tab-profile", "profile of one config under ncu") if row else None
        if entry is None or row is None:
            return
        self.query_one("#progress", ProgressBar).update(total=len(PROFILE_PHASES), progress=0)
        dtype = self.query_one(SweepPane).dtype
        case = "x".join(map(str, row["shape"])) + (f":{dtype}" if dtype else "")
        self.run_profile(entry, case, row["values"])

    @work(thread=True, exclusive=True, group="job")
    def run_profile(self, entry: KernelEntry, case: str = "", pin: dict | None = None) -> None:
        from workbench.profilers import session

        def on_event(event: dict) -> None:
            self.call_from_thread(self._on_profile_event, event)

        request = session.Request(cases=[case] if case else [], pin=pin or {})
        try:
            run = session.profile(entry, request, on_event, self._cancel)
        except WorkbenchError as exc:  # refused before it started: no ncu, no GPU, bad spec
            self.call_from_thread(self._on_refused, exc.problem)
            return
        self.call_from_thread(self._on_profile, entry, run)

    def _on_profile_event(self, event: dict) -> None:
        if event.get("event") == "phase" and event.get("phase") in PROFILE_PHASES:
            step = PROFILE_PHASES.index(event["phase"]) + 1
            self.query_one("#progress", ProgressBar).update(progress=step)
        elif event.get("event") == "tool":
            self.query_one("#verdict", Static).update(Text(event["line"]))

    def _on_refused(self, problem: Problem) -> None:
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
        self.query_one(ProfilePane).show(summary, source)


def run_app(paths: Sequence[str] = ()) -> int:
    WorkbenchApp(paths).run()
    return 0
