"""The Cache pane shows a real cache report (scan of a cache Triton 3.4 wrote)."""

from __future__ import annotations

from conftest import FIXTURES
from rich.text import Text
from textual.app import App, ComposeResult
from textual.widgets import DataTable, Static

from workbench.cache import findings, scan
from workbench.tui.tabs.cache import CachePane


class One(App):
    def compose(self) -> ComposeResult:
        yield CachePane()


async def test_cache_pane_shows_entries_and_findings():
    found = scan.scan(str(FIXTURES / "cache_versions" / "triton_3.4" / "cache"))
    report = {
        "scan": found.to_dict(),
        "triton": "3.9.0",
        "findings": [f.to_dict() for f in findings.scan_findings(found, "3.9.0")],
    }
    app = One()
    async with app.run_test(size=(160, 40)) as pilot:
        app.query_one(CachePane).show_report(report)
        await pilot.pause()
        assert app.query_one("#cache-compiled", DataTable).get_row_at(0)[1] == "scale_kernel"
        assert app.query_one("#cache-tuned", DataTable).row_count == 1
        text = app.query_one("#cache-findings", Static).render()
        text = text.plain if isinstance(text, Text) else str(text)
        assert "group-elsewhere" in text and "other-triton" in text
