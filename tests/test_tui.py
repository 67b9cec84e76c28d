"""The TUI, driven headlessly with Textual's Pilot; work runs through the real job runner."""

from __future__ import annotations

import io
import subprocess
import sys

from conftest import FAULTY, FIXTURES, ROOT
from rich.text import Text
from textual.widgets import DataTable, Static

from workbench.tui.app import WorkbenchApp


def test_ui_process_imports_no_torch():
    code = "import sys, workbench.tui.app; print('torch' in sys.modules, 'triton' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.stdout.split() == ["False", "False"]


async def test_kernel_list_and_a_check_with_its_verdict():
    app = WorkbenchApp([str(FAULTY / "faults.py")])
    async with app.run_test(size=(160, 40)) as pilot:
        kernels = app.query_one("#kernels", DataTable)
        names = [kernels.get_row_at(i)[0] for i in range(kernels.row_count)]
        assert "fault_strided" in names
        for _ in range(names.index("fault_strided")):
            await pilot.press("down")
        assert app.check_action("cancel", ()) is None  # nothing to cancel yet
        await pilot.press("c")
        await app.workers.wait_for_complete()
        await pilot.pause()
        cases = app.query_one("#cases", DataTable)
        statuses = sorted(cases.get_row_at(i)[0] for i in range(cases.row_count))
        assert statuses == ["failed", "passed"]
        verdict = app.query_one("#verdict", Static).render()
        assert "NOT CORRECT" in str(verdict) and "stride only errors" in str(verdict)


async def test_broken_modules_show_with_their_cause():
    app = WorkbenchApp([str(FAULTY)])
    async with app.run_test(size=(160, 40)):
        problems = app.query_one("#problems", Static).render()
        text = problems.plain if isinstance(problems, Text) else str(problems)
        assert "syntax_error.py:4" in text and "definitely_not_installed_pkg" in text


async def test_cancel_ends_a_hanging_check():
    app = WorkbenchApp([str(FAULTY / "faults.py")])
    async with app.run_test(size=(160, 40)) as pilot:
        kernels = app.query_one("#kernels", DataTable)
        names = [kernels.get_row_at(i)[0] for i in range(kernels.row_count)]
        for _ in range(names.index("fault_hang")):
            await pilot.press("down")
        await pilot.press("c")
        await pilot.pause(2.5)
        assert app.check_action("cancel", ()) is True
        await pilot.press("x")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert "cancelled" in str(app.query_one("#verdict", Static).render())


async def test_resources_and_ir_of_the_spilling_kernel():
    from textual.widgets import TextArea

    app = WorkbenchApp([str(ROOT / "kernels" / "pitfalls")])
    async with app.run_test(size=(160, 40)) as pilot:
        kernels = app.query_one("#kernels", DataTable)
        names = [kernels.get_row_at(i)[0] for i in range(kernels.row_count)]
        assert names.index("pitfall_spill") == 0
        await pilot.press("s")
        await app.workers.wait_for_complete()
        await pilot.pause()
        rows = app.query_one("#resources", DataTable)
        spills = [int(rows.get_row_at(i)[2]) for i in range(rows.row_count)]
        assert spills and spills[0] > 0
        assert "register-spill" in str(app.query_one("#findings", Static).render())
        await pilot.press("i")
        await app.workers.wait_for_complete()
        await pilot.pause()
        area = app.query_one("#ir", TextArea)
        assert "tt.dot" in area.text and "ttir" in str(area.border_title)
        await pilot.press("right_square_bracket")
        assert "ttgir" in str(area.border_title) and "ttg." in area.text


def _text(widget: Static) -> str:
    """A Static's content as plain text, whatever renderable it holds."""
    from rich.console import Console

    console = Console(width=200, record=True, file=io.StringIO())
    console.print(widget.content)
    return console.export_text()


def _import(report: str) -> None:
    from workbench.cli.main import main

    assert main(["profile", "--import", str(FIXTURES / report), "--json"]) == 0


async def test_profile_tab_shows_the_stored_profile_or_how_to_make_one(capsys):
    _import("ncu_spill.ncu-rep")  # the CLI's import path records it in this test's store
    capsys.readouterr()
    app = WorkbenchApp([str(ROOT / "kernels" / "pitfalls")])
    async with app.run_test(size=(160, 50)) as pilot:
        assert app.query_one("#kernels", DataTable).get_row_at(0)[0] == "pitfall_spill"
        await pilot.press("p")
        await pilot.pause()
        assert app.query_one("#tabs").active == "tab-profile"
        assert "ncu_spill.ncu-rep" in _text(app.query_one("#profile-source", Static))
        table = app.query_one("#profile-kernels", DataTable)
        facts = dict(table.get_row_at(i) for i in range(table.row_count))  # fact -> launch #0
        assert facts["regs"] == "255" and facts["spill inst"] == "290,048"
        assert facts["occ% th/ach"] == "12.5/6.25" and facts["limiter"] == "registers"
        findings = _text(app.query_one("#profile-findings", Static))
        assert "register-spill" in findings and "pitfall_spill.py:47" in findings
        assert "maxnreg" in findings and "255 registers/thread" in findings
        rules = app.query_one("#profile-rules", DataTable)
        assert rules.get_row_at(0)[1] == "TheoreticalOccupancy"
        assert app.query_one("#profile-lines", DataTable).get_row_at(0)[1] == "pitfall_spill.py:47"
        await pilot.press("down")  # the fixed twin has no stored profile
        await pilot.pause()
        source = _text(app.query_one("#profile-source", Static))
        assert "no profile stored for pitfall_spill_fixed" in source
        assert "python -m workbench profile pitfall_spill_fixed" in source
        assert "profile --import FILE" in source
        assert not app.query_one("#profile-kernels", DataTable).display


async def test_profile_on_a_gpu_host_runs_through_the_session_and_reports_refusal(
    monkeypatch, capsys
):
    """On a GPU host `p` starts the CLI's ncu run; here ncu is missing, so the session refuses
    it with its own problem, and the stored profile stays on screen."""
    _import("ncu_spill.ncu-rep")
    capsys.readouterr()
    monkeypatch.setenv("WORKBENCH_DEVICE", "cuda")
    monkeypatch.setenv("WORKBENCH_NCU", str(ROOT / "no-such-ncu"))
    app = WorkbenchApp([str(ROOT / "kernels" / "pitfalls")])
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.press("p")
        await app.workers.wait_for_complete()
        await pilot.pause()
        verdict = _text(app.query_one("#verdict", Static))
        assert "tool-missing" in verdict and "WORKBENCH_NCU" in verdict
        assert app.check_action("profile", ()) is True  # not busy any more
        assert "register-spill" in _text(app.query_one("#profile-findings", Static))


async def test_cache_tab_and_a_result_marked_stale_once_its_file_changes(tmp_path, monkeypatch):
    """`k` reads the Triton cache with the kernel's recomputed keys; after the kernel's file is
    edited, the verdict on screen says it no longer describes the code on disk."""
    import os
    import shutil

    from workbench.tui.tabs.cache import CachePane

    kernel = tmp_path / "sweep_three_name.py"  # one input: its keys recompute in seconds
    shutil.copy(FIXTURES / "sweep_three_name.py", kernel)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))
    (tmp_path / "triton-cache").mkdir()
    app = WorkbenchApp([str(kernel)])
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.press("k")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.query_one("#tabs").active == "tab-cache"
        verdict = _text(app.query_one("#verdict", Static))
        assert "tmp" in verdict or "compiled" in verdict, verdict
        assert app.query_one(CachePane).query_one("#cache-compiled", DataTable) is not None
        assert "changed since" not in verdict
        os.utime(kernel, (kernel.stat().st_atime, kernel.stat().st_mtime + 60))
        await pilot.pause(2.5)
        assert "changed since this result" in _text(app.query_one("#verdict", Static))


async def test_sweep_tab_compiles_every_config_and_ranks_them():
    """`t` sweeps the selected kernel's own autotune configs (statically here: no GPU), with
    each config's row as it lands and the verdict at the end."""
    from workbench.tui.tabs.sweep import SweepPane

    app = WorkbenchApp([str(FIXTURES / "sweep_three_name.py")])
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.press("t")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.query_one("#tabs").active == "tab-sweep"
        rows = app.query_one(SweepPane).query_one("#sweep-rows", DataTable)
        configs = sorted(str(rows.get_row_at(i)[1]) for i in range(rows.row_count))
        assert len(configs) == 3 and all("BLOCK=" in c for c in configs), configs
        verdict = _text(app.query_one("#verdict", Static))
        assert "run " in verdict and "sweep" in verdict.lower(), verdict


async def test_n_profiles_the_highlighted_sweep_config_or_says_why_not(monkeypatch):
    """On the Sweep tab `n` runs ncu on the highlighted config (pinned, at its shape): greyed
    without a GPU; on a GPU host it goes through the profile session, which here refuses it
    for want of ncu, naming the override."""
    import json

    from workbench.tui.tabs.sweep import SweepPane

    recorded = json.loads((FIXTURES / "sweep_h100_matmul16.json").read_text())["result"]
    app = WorkbenchApp([str(FIXTURES / "sweep_three_name.py")])
    async with app.run_test(size=(160, 50)) as pilot:
        app.query_one("#tabs").active = "tab-sweep"
        app.query_one(SweepPane).show(recorded)
        await pilot.pause()
        assert app.check_action("profile_config", ()) is False  # no GPU here: greyed
        assert (
            app.query_one(SweepPane).highlighted()["label"]
            == recorded["shapes"]["4096x4096x4096"]["best"]
        )
    monkeypatch.setenv("WORKBENCH_DEVICE", "cuda")
    monkeypatch.setenv("WORKBENCH_NCU", str(ROOT / "no-such-ncu"))
    app = WorkbenchApp([str(FIXTURES / "sweep_three_name.py")])
    async with app.run_test(size=(160, 50)) as pilot:
        app.query_one("#tabs").active = "tab-sweep"
        app.query_one(SweepPane).show(recorded)
        await pilot.pause()
        assert app.check_action("profile_config", ()) is True
        await pilot.press("n")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.query_one("#tabs").active == "tab-profile"
        verdict = _text(app.query_one("#verdict", Static))
        assert "tool-missing" in verdict and "WORKBENCH_NCU" in verdict, verdict
