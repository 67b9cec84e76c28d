"""The right side of the main screen: the selected kernel's head (file, dtypes, shape sets, the
options its actions run with) over its tabs, one `TabPane` per row of `tabs.TABS`, each filled
by its pane when first shown."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import TabbedContent, TabPane

from workbench.tui.tabs import TABS
from workbench.tui.widgets.plain import PlainStatic


class KernelPanel(Vertical):
    def compose(self) -> ComposeResult:
        yield PlainStatic(id="kernel-head")
        with TabbedContent(id="tabs"):
            for t in TABS:
                yield TabPane(t.title, id=f"tab-{t.id}")
