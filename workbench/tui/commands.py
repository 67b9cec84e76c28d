"""The command palette (ctrl+p): every key of the keymap table as a command, greyed ones with
their reason, and every kernel to jump to. Loaded when the palette first opens."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from textual.command import DiscoveryHit, Hit, Hits, Provider

from workbench.tui import keymap


class WorkbenchCommands(Provider):
    def commands(self) -> list[tuple[str, str, Callable[[], Any]]]:
        """(title, help, callback) for each key, then each kernel."""
        screen = self.screen
        out: list[tuple[str, str, Callable[[], Any]]] = []
        for k in keymap.keymap():
            state = screen.key_state(k)  # type: ignore[attr-defined]
            help = f"{k.display}: {k.help}" + (f" ({state})" if state else "")
            out.append((f"{k.help[0].upper()}{k.help[1:]}", help, partial(self._press, k)))
        for entry in self.app.catalog.kernels:  # type: ignore[attr-defined]
            out.append(
                (f"Kernel {entry.name}", f"select {entry.name}", partial(self._select, entry.name))
            )
        return out

    async def discover(self) -> Hits:
        for title, help, callback in self.commands():
            yield DiscoveryHit(title, callback, help=help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help, callback in self.commands():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), callback, help=help)

    async def _press(self, k: keymap.Key) -> None:
        """Run the key's action as its key would, or say why it cannot run here."""
        screen = self.screen
        state = screen.key_state(k)  # type: ignore[attr-defined]
        if state:
            self.app.notify(f"{k.help}: {state}", severity="warning")
            return
        await screen.run_action(k.action)

    def _select(self, name: str) -> None:
        self.screen.select_kernel(name)  # type: ignore[attr-defined]
