"""A read-only code view for IR and Python source: line numbers, a cursor line, and several
disjoint groups of lines marked at once (the lines one Python line became, search matches, diff
additions and removals), which a TextArea cannot show. Renders only the visible lines, so a
30,000-line SASS dump scrolls as fast as a short one."""

from __future__ import annotations

from typing import Any

from rich.segment import Segment
from rich.style import Style
from textual.events import Click
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from workbench.tui.widgets import LINE_KEYS


class CodeView(ScrollView, can_focus=True):
    COMPONENT_CLASSES = {
        "code-view--gutter",
        "code-view--cursor",
        "code-view--mark",
        "code-view--match",
        "code-view--added",
        "code-view--removed",
    }
    BINDINGS = LINE_KEYS

    cursor: reactive[int] = reactive(1)
    """The 1-based line the cursor is on."""

    class CursorMoved(Message):
        def __init__(self, view: CodeView, line: int) -> None:
            super().__init__()
            self.view = view
            self.line = line

        @property
        def control(self) -> CodeView:
            return self.view

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.lines: list[str] = []
        self.marks: set[int] = set()
        self.matches: set[int] = set()
        self.kinds: dict[int, str] = {}
        """Line -> "added" or "removed" (a diff)."""
        self._gutter = 1

    def load(self, lines: list[str], cursor: int = 1) -> None:
        self.lines = [line.expandtabs(8) for line in lines]
        self.marks, self.matches, self.kinds = set(), set(), {}
        self._gutter = len(str(max(len(self.lines), 1)))
        width = max((len(line) for line in self.lines), default=0) + self._gutter + 2
        self.virtual_size = Size(width, len(self.lines))
        self.set_reactive(CodeView.cursor, max(1, min(cursor, len(self.lines) or 1)))
        self.scroll_to(0, 0, animate=False)
        self.refresh()

    def mark(self, lines: set[int] | list[int]) -> None:
        self.marks = set(lines)
        self.refresh()

    def show_matches(self, lines: set[int] | list[int]) -> None:
        self.matches = set(lines)
        self.refresh()

    def classify(self, kinds: dict[int, str]) -> None:
        self.kinds = dict(kinds)
        self.refresh()

    def go_to(self, line: int, post: bool = True) -> None:
        """Put the cursor on `line` and scroll it to the middle; `post` says whether listeners
        hear of it (not when the move follows the other view, which would echo back)."""
        if not self.lines:
            return
        line = max(1, min(line, len(self.lines)))
        if post:
            self.cursor = line
        else:
            self.set_reactive(CodeView.cursor, line)
        self.call_after_refresh(self._center, line)  # once the new lines have been laid out
        self.refresh()

    def _center(self, line: int) -> None:
        self.scroll_to(y=max(0, line - 1 - self.size.height // 2), animate=False)

    def watch_cursor(self, line: int) -> None:
        top, height = round(self.scroll_y), self.size.height
        if line - 1 < top:
            self.scroll_to(y=line - 1, animate=False)
        elif height and line - 1 >= top + height:
            self.scroll_to(y=line - height, animate=False)
        self.refresh()
        self.post_message(self.CursorMoved(self, line))

    def action_move(self, by: int) -> None:
        if self.lines:
            self.cursor = max(1, min(self.cursor + by, len(self.lines)))

    def action_page(self, by: int) -> None:
        self.action_move(by * max(1, self.size.height - 1))

    def action_jump(self, where: int) -> None:
        if self.lines:
            self.cursor = 1 if where > 0 else len(self.lines)

    def on_click(self, event: Click) -> None:
        line = round(self.scroll_y) + event.y + 1
        if 1 <= line <= len(self.lines):
            self.cursor = line

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        number = scroll_y + y + 1
        base = self.rich_style
        width = self.size.width
        if number > len(self.lines):
            return Strip.blank(width, base)
        style = base + self._line_style(number)
        gutter = self.get_component_rich_style("code-view--gutter")
        segments = [
            Segment(f"{number:>{self._gutter}} ", base + gutter),
            Segment(" " + self.lines[number - 1], style),
        ]
        strip = Strip(segments).crop_extend(scroll_x, scroll_x + width, style)
        return strip.apply_offsets(scroll_x, y)

    def _line_style(self, number: int) -> Style:
        style = Style()
        kind = self.kinds.get(number)
        if kind:
            style += self.get_component_rich_style(f"code-view--{kind}")
        if number in self.marks:
            style += self.get_component_rich_style("code-view--mark")
        if number in self.matches:
            style += self.get_component_rich_style("code-view--match")
        if number == self.cursor and self.has_focus:
            style += self.get_component_rich_style("code-view--cursor")
        elif number == self.cursor:
            style += Style(underline=True)
        return style

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()
