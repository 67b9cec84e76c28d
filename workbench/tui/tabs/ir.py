"""The IR tab: the kernel's Python source beside one stage of one compiled config. The cursor on a
Python line marks the lines it became in the stage, and follows it through every stage; the
cursor on an IR line finds its Python line. `[` `]` change stage, `v` the config, `/` searches
the stage (`n` `N` step through the matches), `d` diffs two configs (`workbench ir --diff`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Input, Static, Tab, Tabs

from workbench.ir.diff import VariantDiff, diff_variants
from workbench.ir.linemap import STAGES
from workbench.ir.result import IrResult, IrVariant
from workbench.tui.tabs.base import Pane
from workbench.tui.widgets.code_view import CodeView
from workbench.tui.widgets.plain import PlainStatic
from workbench.views import irview
from workbench.views.finished import Finished
from workbench.views.text import fmt, table


class IRPane(Pane):
    def body(self) -> ComposeResult:
        yield Tabs(*(Tab(s, id=f"stage-{s}") for s in STAGES), id="ir-stages")
        with Horizontal(id="ir-body"):
            yield CodeView(id="ir-source")
            yield CodeView(id="ir-code")
        yield PlainStatic(id="ir-status")
        yield Input(placeholder="search this stage (enter; esc closes)", id="ir-search")

    def on_mount(self) -> None:
        self.result: IrResult | None = None
        self.variants: list[IrVariant] = []
        self.index = 0
        self.stage = STAGES[0]
        self.line: int | None = None
        """The Python line being followed."""
        self.found: list[int] = []
        self.diff: VariantDiff | None = None
        self.shown: str | None = None
        """The kernel on screen: the followed line and config are its own."""
        self.query_one("#ir-search", Input).display = False

    # -- rendering -------------------------------------------------------------------------------

    def clear(self) -> None:
        self.result, self.variants, self.diff, self.found = None, [], None, []
        for view in self.query(CodeView):
            view.load([])
            view.border_title = ""  # not the last kernel's file and stage over an empty pane
        self.query_one("#ir-status", Static).update("")

    def render_result(self, result: Any, finished: Finished) -> None:
        if self.shown != result.kernel:
            self.shown, self.line, self.index = result.kernel, None, 0
        self.result, self.diff = result, None
        self.variants = [v for v in result.variants if not v.error]
        self.index = min(self.index, max(len(self.variants) - 1, 0))
        if self.variant is not None and self.line is None:  # follow the kernel's first line
            self.line = min(irview.mapped_lines(self.variant, self.stage), default=None)
        self._load_source()
        self._load_stage()

    def _load_source(self) -> None:
        """The Python file the configs came from, the lines the compiler refused marked."""
        assert self.result is not None
        source = self.query_one("#ir-source", CodeView)
        first = self.result.variants[0] if self.result.variants else None
        file = first.file if first else self.view.entry.file
        try:
            source.load(Path(file).read_text(errors="replace").splitlines())
        except OSError as exc:
            source.load([f"cannot read {file}: {exc.strerror}"])
        source.border_title = Path(file).name
        errors = [v.error for v in self.result.variants if v.error]
        broken = {int(e["line"]) for e in errors if e.get("line")}
        source.classify({n: "removed" for n in broken})
        if broken:
            source.go_to(min(broken), post=False)
        elif self.line is not None:
            source.go_to(self.line, post=False)

    @property
    def variant(self) -> IrVariant | None:
        return self.variants[self.index] if self.variants else None

    def _load_stage(self) -> None:
        code = self.query_one("#ir-code", CodeView)
        self.query_one("#ir-stages", Tabs).active = f"stage-{self.stage}"
        v = self.variant
        if self.diff is not None:
            self._show_diff()
            return
        if v is None:
            code.load(["no config compiled: the errors above say why (cause, file:line, remedy)"])
        elif self.result is not None and self.stage not in v.artifacts:
            code.load(
                [f"no {self.stage} in this run (it compiled {', '.join(self.result.stages)}):"]
                + [f"{self.view.key} compiles every stage"]
            )
        else:
            path = v.artifacts[self.stage]
            try:
                code.load(Path(path).read_text(errors="replace").splitlines())
            except OSError:
                code.load([f"{path} is gone: run it again ({self.view.key})"])
        code.border_title = f"{self.stage}: {v.function}" if v else self.stage
        self.found = []
        if self.line is not None:
            self._follow(self.line)
        self._status()

    def _follow(self, line: int) -> None:
        """Mark what Python line `line` became in this stage and bring the first of it in view."""
        self.line = line
        v, code = self.variant, self.query_one("#ir-code", CodeView)
        if v is None or self.diff is not None:
            return
        found = irview.ir_lines(v, self.stage, line)
        code.mark(found)
        if found:
            code.go_to(found[0], post=False)
        self.query_one("#ir-source", CodeView).mark({line})

    def _status(self, extra: str = "") -> None:
        v = self.variant
        if v is None:
            self.query_one("#ir-status", Static).update("")
            return
        parts = [f"{self.stage} ({STAGES.index(self.stage) + 1}/{len(STAGES)})"]
        if self.line is not None and self.diff is None:
            parts.append(irview.trail(v, self.stage, self.line))
        code = self.query_one("#ir-code", CodeView)
        if code.cursor in self.found:
            parts.append(f"match {self.found.index(code.cursor) + 1}/{len(self.found)} (n N)")
        if extra:
            parts.append(extra)
        parts.append(f"config {self.index + 1}/{len(self.variants)}: {v.label}")
        self.query_one("#ir-status", Static).update(Text(" · ".join(parts)))

    # -- cursor: Python line <-> IR lines ---------------------------------------------------------

    @on(CodeView.CursorMoved, "#ir-source")
    def _python_line(self, event: CodeView.CursorMoved) -> None:
        if self.variant is not None and self.diff is None:
            self._follow(event.line)
            self._status()

    @on(CodeView.CursorMoved, "#ir-code")
    def _ir_line(self, event: CodeView.CursorMoved) -> None:
        v = self.variant
        if v is None or self.diff is not None:
            return
        line = irview.python_line(v, self.stage, event.line)
        if line is None:
            self._status(f"{self.stage} line {event.line}: no Python line")
            return
        self.line = line
        self.query_one("#ir-source", CodeView).go_to(line, post=False)
        self.query_one("#ir-source", CodeView).mark({line})
        self.query_one("#ir-code", CodeView).mark(irview.ir_lines(v, self.stage, line))
        self._status()

    @on(Tabs.TabActivated, "#ir-stages")
    def _stage_clicked(self, event: Tabs.TabActivated) -> None:
        event.stop()  # the kernel's tab bar is another Tabs
        stage = str(event.tab.id).removeprefix("stage-")
        if stage != self.stage:
            self.stage = stage
            self._load_stage()

    # -- keys (the screen calls these through the keymap) ----------------------------------------

    def action_stage(self, by: int) -> None:
        self.stage = STAGES[(STAGES.index(self.stage) + by) % len(STAGES)]
        self._load_stage()

    def action_variant(self, by: int) -> None:
        if len(self.variants) > 1:
            self.index = (self.index + by) % len(self.variants)
            self._load_stage()

    def action_search(self) -> None:
        field = self.query_one("#ir-search", Input)
        field.display = True
        self.call_after_refresh(field.focus)  # a widget takes focus once it is displayed

    @on(Input.Submitted, "#ir-search")
    def _searched(self, event: Input.Submitted) -> None:
        code = self.query_one("#ir-code", CodeView)
        self.found = irview.search(code.lines, event.value)
        code.show_matches(self.found)
        code.focus()
        self.action_match(1)

    def action_match(self, by: int) -> None:
        code = self.query_one("#ir-code", CodeView)
        if not self.found:
            self._status(f"no match for {self.query_one('#ir-search', Input).value!r}")
            return
        after = [n for n in self.found if (n - code.cursor) * by > 0]
        target = (after[0] if by > 0 else after[-1]) if after else self.found[0 if by > 0 else -1]
        code.go_to(target)
        self._status()

    def action_back(self) -> bool:
        """esc: close the search, else leave the diff; False when neither is open."""
        field = self.query_one("#ir-search", Input)
        if field.display:
            field.display = False
            self.query_one("#ir-code", CodeView).focus()
        elif self.diff is not None:
            self._leave_diff()
        else:
            return False
        return True

    def action_diff(self) -> None:
        """Diff two compiled configs, or leave the diff."""
        if self.diff is not None:
            self._leave_diff()
            return
        if len(self.variants) < 2:
            self.app.notify(
                "one config compiled: a diff needs two (choose another config with o and run i, "
                "or use a kernel with autotune configs)",
                severity="warning",
            )
            return
        from workbench.tui.screens.pick import PickTwo

        labels = [v.label for v in self.variants]
        self.app.push_screen(PickTwo(labels, self.index), self._diff_chosen)

    def _leave_diff(self) -> None:
        self.diff = None
        self._load_source()
        self._load_stage()

    def _diff_chosen(self, pair: tuple[int, int] | None) -> None:
        if pair is None or self.result is None:
            return
        a, b = (self.variants[i] for i in pair)
        kernel = self.result.kernel
        self.diff = diff_variants(kernel, a, kernel, b, STAGES)
        self.query_one("#ir-search", Input).display = False  # matches of a stage, not of a diff
        self._show_diff()

    def _show_diff(self) -> None:
        assert self.diff is not None
        d = self.diff
        stage = next((s for s in d.stages if s.stage == self.stage), None)
        lines = (stage.text or f"{self.stage}: no difference").splitlines() if stage else []
        code = self.query_one("#ir-code", CodeView)
        code.load(lines or [f"{self.stage}: not written for both configs"])
        code.border_title = f"{self.stage}: diff a -> b"
        code.classify(
            {
                i: "added" if t.startswith("+") else "removed"
                for i, t in enumerate(code.lines, 1)
                if t[:1] in "+-" and not t.startswith(("+++", "---"))
            }
        )
        changes = [(k, fmt(x), fmt(y), fmt(delta)) for k, x, y, delta in d.resources]
        counts = ", ".join(f"{s.stage} +{s.added} -{s.removed}" for s in d.stages)
        source = self.query_one("#ir-source", CodeView)
        source.border_title = "resources a -> b"
        source.load(
            [f"a: {d.a.label}", f"b: {d.b.label}", ""]
            + table(("resource", "a", "b", "b-a"), changes).splitlines()
            + ["", counts, "", "d or esc leaves the diff"]
        )
        self.query_one("#ir-status", Static).update(
            Text(f"diff {self.stage}: a {d.a.label} -> b {d.b.label}")
        )
