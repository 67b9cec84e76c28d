"""The footer: the keys of the screen and the focused tab, each shown whole. Keys that do not fit
the width are left out, from the last on, rather than one cut mid-word; `?` comes first and lists
every key, and ctrl+p, docked right, every action."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.events import Resize
from textual.widgets import Footer


class KeyFooter(Footer):
    def compose(self) -> ComposeResult:
        yield from super().compose()
        self.call_after_refresh(self.fit)  # the keys' places are known once laid out

    def on_resize(self, event: Resize) -> None:
        for key in self.query("FooterKey"):
            key.display = True
        self.call_after_refresh(self.fit)

    def fit(self) -> None:
        """Hide the first key that runs past the width (or into the palette's), and every key
        after it."""
        keys = list(self.query("FooterKey"))
        docked = [k for k in keys if k.has_class("-command-palette")]
        edge = min((k.region.x for k in docked), default=self.region.right)
        over = False
        for key in keys:
            if key in docked:
                continue
            over = over or key.region.right > edge
            key.display = not over
