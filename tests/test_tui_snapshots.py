"""Snapshots of the TUI's stable screens (pytest-textual-snapshot), from real H100 results in the
store with fixed run ids and times, and a clock held still so ages read the same every run.
`pytest tests/test_tui_snapshots.py --snapshot-update` rewrites them after a wanted change; the
report of a mismatch (snapshot_report.html) shows both side by side."""

from __future__ import annotations

import gzip
import json
import time

import pytest
from conftest import FIXTURES, ROOT
from test_tui import check_result, h100_bench

from workbench.run.store import RunRecord, Store
from workbench.tui.app import WorkbenchApp
from workbench.tui.tabs import base

T0 = 4102444800.0
"""2100-01-01 UTC: stored runs are newer than any kernel file, so none reads as edited."""
SIZE = (150, 40)
KERNELS = [str(ROOT / "kernels" / "vector_add.py"), str(ROOT / "kernels" / "pitfalls")]


def _record(
    kind: str, kernel: str, result: dict | None, artifacts: str | None = None, n: int = 0
) -> None:
    summary = (result or {}).get("summary")
    Store().record(
        RunRecord(
            f"{kind}-{kernel}" + (f"-{n}" if n else ""), kind, kernel, None, {}, "ok", T0 - n,
            2.0, "h100", "gpu", summary, result, None, artifacts,
        )
    )  # fmt: skip


@pytest.fixture(autouse=True)
def stored(monkeypatch, tmp_path):
    """The store the screens read, the clock an hour after its runs, a fixed place and zone."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("TZ", "UTC")
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")
    time.tzset()
    monkeypatch.setattr(base, "clock", lambda: T0 + 3600)
    _record("check", "vector_add", check_result("vector_add", ["passed", "passed", "passed"]))
    _record("check", "pitfall_spill", check_result("pitfall_spill", ["passed", "failed"]))
    _record("bench", "vector_add", h100_bench())
    for n, scale in ((1, 0.8), (2, 0.79)):  # two earlier runs, faster: the newest regressed
        earlier = h100_bench()
        for r in earlier["records"]:
            r["ms"], r["ms_p20"], r["ms_p80"] = (r[k] * scale for k in ("ms", "ms_p20", "ms_p80"))
        _record("bench", "vector_add", earlier, n=n)
    sweep = json.loads((FIXTURES / "sweep_h100_matmul16.json").read_text())["result"]
    _record("sweep", "pitfall_spill", sweep)
    from workbench.profilers import session

    summary = session.import_file(str(FIXTURES / "ncu_spill.ncu-rep"))
    summary["file"] = "ncu_spill.ncu-rep"  # not this checkout's path
    folder = tmp_path / "profile-run"
    folder.mkdir()
    (folder / "profile.json").write_text(json.dumps(summary, default=str))
    _record("profile-import", "pitfall_spill", None, artifacts=str(folder))
    _record("diagnose", "pitfall_spill", _h100_diagnosis("pitfall_spill"))
    ir = json.loads((FIXTURES / "ir_gpu_resources_pitfall_spill.json").read_text())["result"]
    _record("ir", "pitfall_spill", ir)
    yield
    time.tzset()


def _h100_diagnosis(name: str) -> dict:
    """The diagnosis of the kernel's facts gathered on the H100 (its whole catalog's fixture)."""
    from workbench.diagnosis import diagnose
    from workbench.diagnosis.facts import Facts

    with gzip.open(FIXTURES / "diagnose_h100" / "facts_h100.json.gz", "rt") as f:
        facts = json.load(f)[name]["facts"]
    return diagnose(Facts.from_dict(facts)).to_dict()


async def _shown(pilot, kernel: str, *keys: str) -> None:  # type: ignore[no-untyped-def]
    """The app ready, the store read, `kernel` selected, `keys` pressed, nothing moving."""
    app = pilot.app
    while not (app.screen.ready and app.screen.status):
        await pilot.pause(0.05)
    names = [e.name for e in app.screen.query_one("KernelList").entries]
    app.screen.query_one("KernelList").cursor_row = names.index(kernel)
    await pilot.pause()
    await pilot.press(*keys)
    await app.workers.wait_for_complete()
    await pilot.pause()
    app.clear_notifications()
    # a pane fills its tables from a thread, and their column widths settle a refresh after the
    # rows land: wait until two frames in a row are the same
    before = None
    for _ in range(40):
        await pilot.pause(0.05)
        now = app.export_screenshot()
        if now == before:
            break
        before = now


def _matches(snap_compare, kernel: str, *keys: str) -> bool:  # type: ignore[no-untyped-def]
    """The screen with `kernel` selected and `keys` pressed is its stored snapshot."""
    app = WorkbenchApp(KERNELS)
    return snap_compare(app, terminal_size=SIZE, run_before=lambda p: _shown(p, kernel, *keys))


def test_kernel_list_and_the_check_tab(snap_compare):
    assert _matches(snap_compare, "pitfall_spill")


def test_bench_tab_with_its_bars(snap_compare):
    assert _matches(snap_compare, "vector_add", "2")


def test_sweep_tab(snap_compare):
    assert _matches(snap_compare, "pitfall_spill", "5")


def test_profile_tab(snap_compare):
    assert _matches(snap_compare, "pitfall_spill", "6")


def test_resources_tab(snap_compare):
    assert _matches(snap_compare, "pitfall_spill", "3")


def test_diagnosis_tab(snap_compare):
    assert _matches(snap_compare, "pitfall_spill", "7")


def test_history_tab(snap_compare):
    assert _matches(snap_compare, "vector_add", "h")


def test_help_screen(snap_compare):
    assert _matches(snap_compare, "vector_add", "question_mark")


def test_options_dialog(snap_compare):
    assert _matches(snap_compare, "vector_add", "o")
