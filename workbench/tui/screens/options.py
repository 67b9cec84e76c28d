"""The options of the selected kernel's actions: dtype, shape set, config, arch and sweep space
(the CLI's --dtype, --shapes/--shape, --config/--pin, --arch and --space), checked before they
are kept."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select, Static

from workbench.app.actions import Selection
from workbench.catalog.discovery import KernelEntry
from workbench.ir.occupancy import ARCHS, DEFAULT_ARCH
from workbench.runtime.errors import WorkbenchError
from workbench.sweep.space import SPACES
from workbench.tui.widgets.plain import PlainStatic, escaped
from workbench.views.finished import problem_text

SPACE_HELP = {
    "own": "own: the kernel's @triton.autotune configs",
    "auto": "auto: its tile constexprs x num_warps x num_stages, pruned",
    "neighbours": "neighbours: one step from the config it launches with",
}
"""What `sweep --space` says of each named space."""


class OptionsScreen(ModalScreen[Selection | None]):
    BINDINGS = [Binding("escape", "dismiss(None)", "cancel")]

    def __init__(self, entry: KernelEntry, selection: Selection) -> None:
        super().__init__()
        self.entry = entry
        self.selection = selection

    def compose(self) -> ComposeResult:
        e, sel = self.entry, self.selection
        sets = e.shapes or {}
        with Vertical(id="options", classes="dialog"):
            yield Label(escaped(Text(f"options for {e.name}'s actions", "bold")))
            with Grid(id="options-grid"):
                yield Label("dtype")
                yield Select(
                    [(d, d) for d in e.dtypes or ()],
                    prompt="default: every dtype (check), the first (others)",
                    value=sel.dtype if sel.dtype in (e.dtypes or ()) else Select.NULL,
                    id="opt-dtype",
                    disabled=not e.dtypes,
                )
                yield Label("shape set")
                yield Select(
                    [(f"{name} ({len(shapes)} shape(s))", name) for name, shapes in sets.items()],
                    prompt="default: each action's own",
                    value=sel.shape_set if sel.shape_set in sets else Select.NULL,
                    id="opt-shapes",
                    disabled=not sets,
                )
                yield Label("config")
                yield Input(
                    sel.config, placeholder="K=V,... (default: the kernel's own)", id="opt-config"
                )
                yield Label("arch")
                yield Select(
                    [(f"sm_{a}", f"sm_{a}") for a in ARCHS],
                    prompt=f"default: the GPU's, else sm_{DEFAULT_ARCH}",
                    value=sel.arch if sel.arch in {f"sm_{a}" for a in ARCHS} else Select.NULL,
                    id="opt-arch",
                )
                yield Label("sweep space")
                yield Select(
                    [(SPACE_HELP[s], s) for s in SPACES],
                    value=sel.space,
                    allow_blank=False,
                    id="opt-space",
                )
            yield Static(
                "config: ir and resources compile only it; profile pins it. "
                "shape set: check runs it; ir, resources and profile take its first shape; "
                "sweep and bench all of it.",
                classes="hint",
            )
            yield PlainStatic(id="opt-problem")
            with Horizontal(classes="buttons"):
                yield Button("keep", variant="primary", id="opt-keep")
                yield Button("cancel", id="opt-cancel")

    def _value(self, selector: str) -> str | None:
        value = self.query_one(selector, Select).value
        return None if value is Select.NULL else str(value)

    def on_input_submitted(self) -> None:
        self._keep()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "opt-keep":
            self._keep()
        else:
            self.dismiss(None)

    def _keep(self) -> None:
        chosen = Selection(
            dtype=self._value("#opt-dtype"),
            shape_set=self._value("#opt-shapes"),
            config=self.query_one("#opt-config", Input).value.strip(),
            arch=self._value("#opt-arch"),
            space=str(self.query_one("#opt-space", Select).value),
        )
        try:
            self.dismiss(chosen.validated())
        except WorkbenchError as exc:
            self.query_one("#opt-problem", Static).update(
                Text(problem_text("error", exc.problem), "red")
            )
