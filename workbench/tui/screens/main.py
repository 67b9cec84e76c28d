"""The main screen: the kernel list on the left, the selected kernel's tabs on the right, the job
bar and the footer. It turns keys into actions: a run key queues the action on the selected
kernel in the app's job queue; a tab shows, for the selected kernel, this session's newest
result, else the store's, else how to make one. Every result it shows names its kernel and age.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.events import DescendantFocus
from textual.events import Key as KeyEvent
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.widgets import Footer, Header, Input, Static, TabbedContent, TabPane, Tabs

from workbench.app.actions import Selection
from workbench.catalog.discovery import KernelEntry
from workbench.run.kinds import COMMANDS
from workbench.tui import keymap
from workbench.tui.catalog import find_kernels
from workbench.tui.jobqueue import CANCELLED, DONE, QUEUED, RUNNING, Task
from workbench.tui.tabs import TABS, Tab, pane_class, tab
from workbench.tui.tabs.base import Pane, StartAction
from workbench.tui.widgets.job_bar import JobBar
from workbench.tui.widgets.kernel_list import KernelList
from workbench.tui.widgets.kernel_panel import KernelPanel
from workbench.tui.widgets.key_footer import KeyFooter
from workbench.tui.widgets.plain import PlainStatic
from workbench.views.finished import Finished, problem_text
from workbench.views.kernels import LIST_HEADERS, KernelStatus, ordered
from workbench.views.text import escape_controls

if TYPE_CHECKING:
    from workbench.tui.app import WorkbenchApp

STALE_CHECK_S = 1.0
"""How often ages move on and edited sources are looked for (a stat per kernel file)."""


class MainScreen(Screen[None]):
    BINDINGS = keymap.bindings()
    app: WorkbenchApp

    def compose(self) -> ComposeResult:
        """The first frame: the kernel list; the kernel's tabs and the job bar follow it."""
        yield Header()
        with Horizontal(id="body"):
            with Vertical(id="left"):
                yield KernelList(id="kernels")
                yield PlainStatic(id="problems")
        yield KeyFooter()

    def __init__(self) -> None:
        super().__init__()
        self.ready = False
        """The kernel panel and the job bar are mounted (after the list has painted)."""
        self.filter_text = ""
        self.sort_column: str | None = None
        self.sort_reverse = False
        self.status: dict[str, KernelStatus] = {}
        self.reading: set[tuple[str, str]] = set()
        """(kernel, tab) whose stored result is being read."""
        self.looked: set[tuple[str, str]] = set()
        """(kernel, tab) whose store was read (whatever it held)."""
        self.unfiltered: str | None = None
        """The kernel selected when the filter took the focus: esc while typing goes back to it
        (a key typed into the filter by mistake must not leave another kernel selected)."""

    def on_mount(self) -> None:
        self._fill_list(keep=None)
        self._show_problems()
        self.query_one(KernelList).focus()
        self.call_after_refresh(self._after_first_paint)

    async def _after_first_paint(self) -> None:
        """What the first frame need not wait for: the kernel's tabs, the job bar, the store's
        standing of each kernel."""
        await self.query_one("#body").mount(KernelPanel(id="right"))
        field = Input(placeholder="/ filters kernels by name (esc clears)", id="filter")
        await self.query_one("#left").mount(field, before=self.query_one(KernelList))
        await self.mount(JobBar(id="jobbar"), before=self.query_one(Footer))
        self.ready = True
        self._show_kernel_head()
        await self._show_tab_content()
        self.query_one(JobBar).show(self.app.queue)
        self.refresh_bindings()
        self.load_status([e.name for e in self.app.catalog.kernels])
        self.set_interval(STALE_CHECK_S, self.tick)

    # -- the kernel list ---------------------------------------------------------------------

    @property
    def selected(self) -> KernelEntry | None:
        return self.query_one(KernelList).selected

    def _fill_list(self, keep: str | None) -> None:
        entries = ordered(
            self.app.catalog.kernels,
            self.status,
            self.filter_text,
            self.sort_column,
            self.sort_reverse,
        )
        self.query_one(KernelList).populate(entries, self.status, keep)
        self._show_kernel_head()

    def _show_problems(self) -> None:
        problems = self.app.catalog.problems
        text = "\n".join(problem_text("cannot load", p) for p in problems)
        widget = self.query_one("#problems", Static)
        widget.update(Text(text, "red"))
        widget.display = bool(problems)

    def say(self, message: str, severity: SeverityLevel = "information") -> None:
        """A notification naming kernels or paths: shown as it is, not read as markup."""
        self.notify(escape_controls(message), severity=severity, markup=False)

    @work(thread=True, exclusive=True, group="status")
    def load_status(self, names: list[str]) -> None:
        from workbench.runtime.errors import WorkbenchError
        from workbench.views.kernels import statuses

        try:
            found = statuses(names)
        except WorkbenchError as exc:  # a store that cannot be read: say so, keep the list
            self.app.call_from_thread(self.say, str(exc.problem), "error")
            return
        self.app.call_from_thread(self._status_read, found)

    def _status_read(self, found: dict[str, KernelStatus]) -> None:
        if not self.is_attached:  # the app quit while the store was read
            return
        self.status.update(found)
        kernels = self.query_one(KernelList)
        for entry in kernels.entries:
            if entry.name in found:
                kernels.update_status(entry, found[entry.name])
        if self.sort_column not in (None, "name"):
            self._fill_list(keep=self.selected.name if self.selected else None)

    async def on_kernel_list_highlighted(self) -> None:
        self._show_kernel_head()
        await self._show_tab_content()

    def on_kernel_list_chosen(self) -> None:
        """enter: into the tab's first widget that takes keys."""
        pane = self.pane(self.active_tab.id)
        for widget in pane.query("*") if pane is not None else []:
            if widget.focusable and not isinstance(widget, Tabs):
                widget.focus()
                return

    def on_kernel_list_sort_by(self, event: KernelList.SortBy) -> None:
        if self.sort_column == event.column:
            self.sort_reverse = not self.sort_reverse
        else:
            self.sort_column, self.sort_reverse = event.column, False
        self._fill_list(keep=self.selected.name if self.selected else None)
        self.notify(f"sorted by {event.column}" + (" (reversed)" if self.sort_reverse else ""))

    def _show_kernel_head(self) -> None:
        if not self.ready:
            return
        e = self.selected
        head = self.query_one("#kernel-head", Static)
        if e is None:
            found = len(self.app.catalog.kernels)
            why = f"no kernel matches {self.filter_text!r}" if found else "no kernels found"
            head.update(Text(why + " (esc clears the filter; r finds the kernels again)", "dim"))
            return
        text = Text(e.name, "bold")
        text.append(f"  {os.path.relpath(e.file)}:{e.line}  {e.kind}")
        dtypes = ",".join(e.dtypes) if e.dtypes else "from inputs"
        sets = " ".join(f"{s}:{len(v)}" for s, v in (e.shapes or {}).items()) or "from inputs"
        text.append(f"  dtypes {dtypes}  shapes {sets}", "dim")
        if e.description:
            text.append(f"\n{e.description}")
        text.append(f"\n{self.selection(e).describe()} (o changes them)", "cyan")
        if not self.app.gpu:
            gpu_only = ", ".join(a.name for a in COMMANDS.values() if a.gpu_only)
            text.append(f"  · no GPU here: {gpu_only} greyed", "dim")
        head.update(text)

    def selection(self, entry: KernelEntry) -> Selection:
        return self.app.selections.get(entry.name, Selection())

    # -- tabs ----------------------------------------------------------------------------------

    @property
    def active_tab(self) -> Tab:
        return tab(self.query_one(TabbedContent).active.removeprefix("tab-"))

    def pane(self, tab_id: str) -> Pane | None:
        found = self.query_one(f"#tab-{tab_id}", TabPane).children
        return found[0] if found and isinstance(found[0], Pane) else None

    @on(TabbedContent.TabActivated, "#tabs")
    async def _tab_changed(self) -> None:
        self.refresh_bindings()  # some keys belong to one tab
        await self._show_tab_content()

    async def _show_tab_content(self) -> None:
        """The active tab, showing the selected kernel (its pane mounted on first use)."""
        if not self.ready:
            return
        t = self.active_tab
        pane = self.pane(t.id)
        if pane is None:
            pane = pane_class(t)(id=f"pane-{t.id}")
            await self.query_one(f"#tab-{t.id}", TabPane).mount(pane)
        self.show_in(t)

    def show_in(self, t: Tab) -> None:
        from workbench.tui.tabs.base import View

        pane, entry = self.pane(t.id), self.selected
        if pane is None or not pane.is_mounted or entry is None:
            return  # a pane being mounted shows the kernel once it is
        key = (entry.name, t.id)
        finished = self.app.results.get(key)
        if finished is None and key not in self.looked:
            self.reading.add(key)
            self.read_stored(entry, t.id)
        pane.show(
            View(
                entry,
                finished,
                self.task_for(entry, t),
                loading=key in self.reading,
                gpu=self.app.gpu,
                key=t.key,
                action=t.action,
            )
        )

    def task_for(self, entry: KernelEntry, t: Tab) -> Task | None:
        """A running or queued job of this kernel whose result goes to tab `t`."""
        for task in self.app.queue.tasks:
            if (
                task.kernel.name == entry.name
                and t.id in COMMANDS[task.action].tabs
                and task.state in (QUEUED, RUNNING)
            ):
                return task
        return None

    @work(thread=True, group="stored")
    def read_stored(self, entry: KernelEntry, tab_id: str) -> None:
        from workbench.runtime.errors import WorkbenchError
        from workbench.views import stored

        try:
            found = stored.latest(tab_id, entry)
        except WorkbenchError as exc:
            self.app.call_from_thread(self.say, str(exc.problem), "error")
            found = None
        self.app.call_from_thread(self._stored_read, entry, tab_id, found)

    def _stored_read(self, entry: KernelEntry, tab_id: str, found: Finished | None) -> None:
        if not self.is_attached:
            return
        key = (entry.name, tab_id)
        self.reading.discard(key)
        self.looked.add(key)
        results = self.app.results
        if found is not None and key not in results:  # a run of this session wins
            results[key] = found
        if self.selected is entry and self.active_tab.id == tab_id:
            self.show_in(self.active_tab)

    # -- jobs ------------------------------------------------------------------------------------

    def start(self, action: str, extra: dict | None = None) -> None:
        """Queue `action` on the selected kernel with its options, and show its tab."""
        entry = self.selected
        if entry is None:
            return
        queue = self.app.queue
        if queue.find(action, entry.name) is not None and not extra:
            self.say(f"{action} {entry.name} is already queued or running (j shows the queue)")
        else:
            ahead = queue.running
            queue.submit(Task(action, entry, self.selection(entry), dict(extra or {})))
            if ahead is not None:
                self.say(f"{action} {entry.name} queued behind {ahead.action} {ahead.kernel.name}")
        self.action_show_tab(COMMANDS[action].tabs[0])

    def task_changed(self, task: Task, event: dict | None) -> None:
        """From the app, on its own thread: a job's event, or its new state."""
        self.query_one(JobBar).show(self.app.queue)
        if event is None:
            self.refresh_bindings()
        ended = task.state in (DONE, CANCELLED) and event is None
        if ended and task.finished is not None:
            for tab_id in COMMANDS[task.action].tabs:
                self.app.results[(task.kernel.name, tab_id)] = task.finished
            self.app.results.pop((task.kernel.name, "history"), None)
            self.looked.discard((task.kernel.name, "history"))  # every run adds to it
            self.load_status([task.kernel.name])
        entry, t = self.selected, self.active_tab
        if ended and t.id == "history" and entry is not None and entry.name == task.kernel.name:
            self.show_in(t)  # read again, with the run that just ended
            return
        if (
            entry is None
            or entry.name != task.kernel.name
            or t.id not in COMMANDS[task.action].tabs
        ):
            return
        pane = self.pane(t.id)
        if event is None:
            self.show_in(t)
        elif pane is not None and task.state == RUNNING and self.task_for(entry, t) is task:
            pane.add_event(event)
            pane.refresh_head()

    def on_start_action(self, message: StartAction) -> None:
        """A pane asks for an action (the Sweep tab's `n`: ncu on its highlighted config)."""
        message.stop()
        if self.check_action("run", (message.action,)):
            self.start(message.action, message.extra)

    # -- actions (the keymap's) ------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        gpu = self.app.gpu
        if not self.ready:  # the first frame: the list, and a footer that waits for the panel
            return action == "help"  # and the app's quit
        if action == "run":
            if self.selected is None:
                return None
            return None if COMMANDS[str(parameters[0])].gpu_only and not gpu else True
        if action == "in_tab":
            tab_id, method = str(parameters[0]), str(parameters[1])
            if tab_id != self.active_tab.id:
                return False
            pane = self.pane(tab_id)
            if pane is None or not hasattr(pane, f"action_{method}"):
                return False
            if method == "search":  # on the IR tab `/` searches the stage shown, if any
                return bool(getattr(pane, "variants", None))
            if any(k.gpu for k in tab(tab_id).keys if k.method == method) and not gpu:
                return None
            check = getattr(pane, f"check_{method}", None)
            return check() if check else True
        if action == "cancel":
            return True if self.app.queue.running else None
        return True

    def on_key(self, event: KeyEvent) -> None:
        """A greyed GPU key runs nothing: it says why, and a run key shows its tab's stored
        result."""
        if not self.ready:
            return
        for k in keymap.keymap():
            if k.key != event.key or not k.gpu or self.app.gpu:
                continue
            if k.tab is None:
                self.action_show_tab(COMMANDS[k.id].tabs[0])
                self.notify(f"{k.id}: {keymap.NEEDS_GPU}; shown: the newest stored result")
                return
            if k.tab == self.active_tab.id:
                self.notify(f"{k.help}: {keymap.NEEDS_GPU}", severity="warning")
                return

    def action_run(self, action: str) -> None:
        self.start(action)

    def action_show_tab(self, tab_id: str) -> None:
        """Show a tab; focus inside the one being left goes back to the list first (a focused
        widget in a hidden pane would bring its tab back)."""
        tabs = self.query_one(TabbedContent)
        if self.focused is not None and tabs in self.focused.ancestors:
            self.query_one(KernelList).focus()
        tabs.active = f"tab-{tab_id}"

    def action_in_tab(self, tab_id: str, method: str, *args: object) -> None:
        pane = self.pane(tab_id)
        if pane is not None:
            getattr(pane, f"action_{method}")(*args)

    def action_cancel(self) -> None:
        running = self.app.queue.running
        if running is not None:
            self.app.queue.cancel(running)

    def action_filter(self) -> None:
        self.query_one("#filter", Input).focus()

    def on_descendant_focus(self, event: DescendantFocus) -> None:
        if event.widget.id == "filter":  # editing begins: esc comes back to this kernel
            self.unfiltered = self.selected.name if self.selected else None

    @on(Input.Changed, "#filter")
    def _filtered(self, event: Input.Changed) -> None:
        if event.value == self.filter_text:  # cleared by esc, which chose the kernel
            return
        self.filter_text = event.value
        self._fill_list(keep=self.selected.name if self.selected else None)

    @on(Input.Submitted, "#filter")
    def _filter_done(self) -> None:
        self.query_one(KernelList).focus()

    def action_back(self) -> None:
        """esc, innermost first: typing a filter cancels it (the kernel selected before it
        stays); a tab closes what it has open (the IR search, a diff); a filter left standing is
        cleared; else the focus goes back to the kernel list. The selection stays throughout."""
        field = self.query_one("#filter", Input)
        pane = self.pane(self.active_tab.id)
        if field.has_focus:
            self._clear_filter(self.unfiltered)
        elif (back := getattr(pane, "action_back", None)) is not None and back():
            return
        elif field.value:
            self._clear_filter(self.selected.name if self.selected else self.unfiltered)
        self.query_one(KernelList).focus()

    def _clear_filter(self, keep: str | None) -> None:
        """Every kernel listed again, the cursor on `keep` (else where it is)."""
        self.filter_text = ""
        self.query_one("#filter", Input).value = ""
        self._fill_list(keep=keep or (self.selected.name if self.selected else None))

    def action_sort(self) -> None:
        columns = list(LIST_HEADERS)
        now = columns.index(self.sort_column) if self.sort_column in columns else -1
        self.post_message(KernelList.SortBy(columns[(now + 1) % len(columns)]))

    def action_reload(self) -> None:
        keep = self.selected.name if self.selected else None
        self.app.catalog = find_kernels(self.app.paths)
        self.looked.clear()
        self._fill_list(keep)
        self._show_problems()
        self.load_status([e.name for e in self.app.catalog.kernels])

    def action_options(self) -> None:
        from workbench.tui.screens.options import OptionsScreen

        entry = self.selected
        if entry is not None:

            def keep(chosen: Selection | None) -> None:
                if chosen is not None:
                    self.app.selections[entry.name] = chosen
                    self._show_kernel_head()

            self.app.push_screen(OptionsScreen(entry, self.selection(entry)), keep)

    def action_jobs(self) -> None:
        from workbench.tui.screens.jobs import JobsScreen

        self.app.push_screen(JobsScreen(self.app.queue), self._go_to_task)

    def _go_to_task(self, task: Task | None) -> None:
        if task is not None:
            self.select_kernel(task.kernel.name)
            self.action_show_tab(COMMANDS[task.action].tabs[0])

    def select_kernel(self, name: str) -> None:
        """Put the cursor on kernel `name`, clearing a filter that hides it."""
        self._clear_filter(name)

    def action_help(self) -> None:
        from workbench.tui.screens.help import HelpScreen

        self.app.push_screen(HelpScreen(self.help_rows()))

    def help_rows(self) -> list[tuple[str, str, str, str]]:
        """Keys that work anywhere first, then each tab's in the tab bar's order."""
        order = [t.id for t in TABS]
        keys = sorted(keymap.keymap(), key=lambda k: -1 if k.tab is None else order.index(k.tab))
        return [(k.display, k.help, k.tab or "anywhere", self.key_state(k)) for k in keys]

    def key_state(self, k: keymap.Key) -> str:
        """How a key stands on this machine and screen: "", greyed with its reason, elsewhere."""
        if k.gpu and not self.app.gpu:
            return f"greyed: {keymap.NEEDS_GPU}"
        if k.tab is not None and (not self.ready or k.tab != self.active_tab.id):
            return f"in the {tab(k.tab).title} tab"
        return ""

    def tick(self) -> None:
        """Ages move on; a kernel file edited since its results is marked (list and tab)."""
        pane = self.pane(self.active_tab.id)
        if pane is not None:
            pane.refresh_head()
        kernels = self.query_one(KernelList)
        for entry in kernels.entries:
            if entry.name in self.status:
                kernels.update_status(entry, self.status[entry.name])
        if self.app.queue.running:
            self.query_one(JobBar).show(self.app.queue)
