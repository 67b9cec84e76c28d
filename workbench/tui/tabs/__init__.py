"""The tabs of a kernel, one table: a tab is one module here (a `Pane` subclass, see `base`) plus
one row of TABS; the command its key starts is the one `run.kinds.COMMANDS` shows there first.
The app builds its tab bar, its keys (the run key, `1`-`9`, the tab's own keys), the help screen
and the command palette from this table, and imports a tab's module only when the tab is first
shown, so the kernel list paints without them.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from workbench.run.kinds import for_tab

if TYPE_CHECKING:
    from workbench.tui.tabs.base import Pane


@dataclass(frozen=True)
class TabKey:
    """A key that acts inside one tab: `key` calls the pane's `action_<method>(*args)`."""

    key: str
    method: str
    args: tuple[object, ...]
    title: str
    """Footer text."""
    help: str
    """What it does, for the help screen and the command palette."""
    gpu: bool = False
    show: bool = True


@dataclass(frozen=True)
class Tab:
    id: str
    title: str
    module: str
    """The module under workbench.tui.tabs that holds the pane."""
    pane: str
    """The `Pane` subclass in it."""
    key: str
    """The key that runs `action` on the selected kernel and shows the tab (shows it, if none)."""
    keys: tuple[TabKey, ...] = ()

    @property
    def action(self) -> str | None:
        """The command the key starts (`run.kinds.for_tab`); None: the tab only reads the store."""
        command = for_tab(self.id)
        return command.name if command else None


TABS: tuple[Tab, ...] = (
    Tab("check", "Check", "check", "CheckPane", "c"),
    Tab("bench", "Bench", "bench", "BenchPane", "b"),
    Tab("resources", "Resources", "compiled", "ResourcesPane", "s"),
    Tab(
        "ir",
        "IR",
        "ir",
        "IRPane",
        "i",
        (
            TabKey("left_square_bracket", "stage", (-1,), "prev stage", "previous IR stage"),
            TabKey("right_square_bracket", "stage", (1,), "next stage", "next IR stage"),
            TabKey("v", "variant", (1,), "config", "show the next compiled config"),
            TabKey("d", "diff", (), "diff", "diff two configs: resources and the stage's code"),
            TabKey("n", "match", (1,), "next", "next search match", show=False),
            TabKey("N", "match", (-1,), "prev", "previous search match", show=False),
        ),
    ),
    Tab(
        "sweep",
        "Sweep",
        "sweep",
        "SweepPane",
        "t",
        (TabKey("n", "profile_row", (), "ncu config", "ncu on the highlighted config", gpu=True),),
    ),
    Tab("profile", "Profile", "profile", "ProfilePane", "p"),
    Tab(
        "diagnosis",
        "Diagnosis",
        "diagnosis",
        "DiagnosisPane",
        "g",
        (
            TabKey(
                "y",
                "try_fix",
                (),
                "try fix",
                "apply the highlighted finding's fix, check it and time it beside the kernel",
                gpu=True,
            ),
        ),
    ),
    Tab("cache", "Cache", "cache", "CachePane", "k"),
    Tab("history", "History", "history", "HistoryPane", "h"),
)


def tab(tab_id: str) -> Tab:
    return next(t for t in TABS if t.id == tab_id)


def pane_class(t: Tab) -> type[Pane]:
    return getattr(importlib.import_module(f"workbench.tui.tabs.{t.module}"), t.pane)
