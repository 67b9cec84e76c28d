"""Pick two compiled configs to diff (`workbench ir --config A --diff B`)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Select


class PickTwo(ModalScreen[tuple[int, int] | None]):
    BINDINGS = [Binding("escape", "dismiss(None)", "cancel")]

    def __init__(self, labels: list[str], first: int) -> None:
        super().__init__()
        self.labels = labels
        self.first = first

    def compose(self) -> ComposeResult:
        options = [(label, i) for i, label in enumerate(self.labels)]
        second = (self.first + 1) % len(self.labels)
        with Vertical(id="pick", classes="dialog"):
            yield Label("diff config a against config b")
            yield Select(options, value=self.first, allow_blank=False, id="pick-a")
            yield Select(options, value=second, allow_blank=False, id="pick-b")
            with Horizontal(classes="buttons"):
                yield Button("diff", variant="primary", id="pick-go")
                yield Button("cancel", id="pick-cancel")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id != "pick-go":
            self.dismiss(None)
            return
        a = self.query_one("#pick-a", Select).value
        b = self.query_one("#pick-b", Select).value
        if isinstance(a, int) and isinstance(b, int):  # allow_blank=False: never blank
            self.dismiss((a, b))
