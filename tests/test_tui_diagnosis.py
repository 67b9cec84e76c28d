"""The Diagnosis tab: a stored H100 diagnosis shown ranked with the highlighted finding in full,
`y` (a GPU trial) greyed here; and `g` diagnosing a kernel on this CPU host, as a user would."""

from __future__ import annotations

import json

from conftest import FIXTURES, ROOT
from test_tui import PITFALLS, column, head, opened, record, select, settle, show, text, until
from textual.widgets import DataTable, Static

SPILL = str(ROOT / "kernels" / "pitfalls" / "pitfall_spill.py")


async def test_a_stored_h100_diagnosis_is_ranked_and_its_trial_greyed_without_a_gpu():
    stored = json.loads((FIXTURES / "diagnose_h100" / "spill_full.json").read_text())
    record("diagnose", "pitfall_spill", stored["diagnosis"], file=SPILL)
    async with opened([PITFALLS]) as (app, pilot):
        await select(app, pilot, "pitfall_spill")
        await show(app, pilot, "diagnosis")
        shown = head(app, "diagnosis")
        assert "1 finding(s) above info; first register-spill (high, 85% to gain)" in shown
        assert "compute-bound at 0.15x of the measured matmul rate" in shown
        pane = app.screen.pane("diagnosis")
        rows = pane.query_one("#diagnosis-rows", DataTable)
        assert column(rows, 3)[0] == "register-spill"
        detail = text(pane.query_one("#diagnosis-detail", Static))
        assert "8.7 GB through local memory" in detail and "y: try it here" in detail
        # the trial times both sides on a GPU: offered, greyed on this host
        assert app.screen.check_action("in_tab", ("diagnosis", "try_fix")) is None


async def test_g_diagnoses_the_selected_kernel_here():
    async with opened([PITFALLS]) as (app, pilot):
        await select(app, pilot, "pitfall_stride")
        await show(app, pilot, "diagnosis", "g")
        await settle(app, pilot)
        await until(pilot, lambda: "above info" in head(app, "diagnosis"), timeout=120)
        assert "first assumes-contiguous (high)" in head(app, "diagnosis")
        detail = text(app.screen.pane("diagnosis").query_one("#diagnosis-detail", Static))
        assert "not gathered: bench (no GPU here)" in detail
