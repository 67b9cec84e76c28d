"""Snapshots of the TUI's stable screens (pytest-textual-snapshot), from real H100 results in the
store with fixed run ids and times (the IR tab's from a cross-compile, the Cache tab over a real
Triton cache), and a clock held still so ages read the same every run.
`pytest tests/test_tui_snapshots.py --snapshot-update` rewrites them after a wanted change; the
report of a mismatch (snapshot_report.html) shows both side by side."""

from __future__ import annotations

import asyncio
import dataclasses
import gzip
import json
import os
import shutil
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT, cli
from test_tui import check_result, h100_bench

from workbench.cache import scan
from workbench.ir.linemap import STAGES
from workbench.run.store import RunRecord, Store
from workbench.sweep.result import SweepResult
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
    # stored as this version stores a sweep: its losers explained by the static model
    _record("sweep", "pitfall_spill", SweepResult.from_dict(sweep).to_dict())
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
    for key in keys:
        await pilot.press(key)
        assert await asyncio.to_thread(app.queue.wait_idle, 120)  # a job the key started
        await app.workers.wait_for_complete()
        await pilot.pause()
    app.clear_notifications()
    # a pane fills its tables from a thread, and their column widths settle a refresh after the
    # rows land: wait until four frames in a row are the same (two were, once, on a loaded host,
    # before the widths settled)
    before, same = None, 0
    for _ in range(80):
        await pilot.pause(0.05)
        now = app.export_screenshot()
        same = same + 1 if now == before else 0
        if same == 3:
            break
        before = now


def _matches(snap_compare, kernel: str, *keys: str, more: Sequence[str] = ()) -> bool:  # type: ignore[no-untyped-def]
    """The screen with `kernel` selected and `keys` pressed is its stored snapshot (`more`:
    kernel paths listed after the usual ones)."""
    app = WorkbenchApp([*KERNELS, *more])
    return snap_compare(app, terminal_size=SIZE, run_before=lambda p: _shown(p, kernel, *keys))


SCREENS = {
    "kernel_list_and_the_check_tab": ("pitfall_spill",),
    "bench_tab_with_its_bars": ("vector_add", "2"),
    "resources_tab": ("pitfall_spill", "3"),
    "sweep_tab": ("pitfall_spill", "5"),
    "profile_tab": ("pitfall_spill", "6"),
    "diagnosis_tab": ("pitfall_spill", "7"),
    "history_tab": ("vector_add", "h"),
    "help_screen": ("vector_add", "question_mark"),
    "options_dialog": ("vector_add", "o"),
}
"""Screens of the stored results: the kernel selected, then the keys pressed."""


@pytest.mark.parametrize("screen", SCREENS)
def test_screen(snap_compare, screen: str):
    assert _matches(snap_compare, *SCREENS[screen])


@pytest.mark.parametrize("size", [(170, 45), (100, 30)])
async def test_the_sweep_table_names_configs_by_what_differs_and_fits(size):
    from textual.widgets import DataTable, Static

    from workbench.tui.tabs.sweep import SweepPane
    from workbench.views.sweep import NARROW

    app = WorkbenchApp(KERNELS)
    async with app.run_test(size=size) as pilot:
        await _shown(pilot, "pitfall_spill", "5")
        pane = app.screen.query_one(SweepPane)
        table = pane.query_one("#sweep-rows", DataTable)
        columns = list(table.columns.values())
        assert [str(c.label) for c in columns] == list(NARROW)
        assert table.get_row_at(0)[:2] == [1, "BM128 BN256 BK64 w8 s4"]
        shared = str(pane.query_one("#sweep-shared", Static).render())
        assert shared.startswith("every config: GROUP_M=8; BM = BLOCK_M")
        widths = [c.get_render_width(table) for c in columns]
        room = table.scrollable_content_region.width
        # 170 columns show every column; 100 the config and its times (the rest scrolls)
        assert sum(widths) <= room if size[0] == 170 else sum(widths[:4]) <= room
        table.move_cursor(row=15)
        await pilot.pause()
        # and under the table, the highlighted config's whole explanation, on screen
        why = pane.query_one("#sweep-why", Static)
        said = " ".join(str(why.render()).split())  # wrapped at words to the pane
        assert said.startswith("BM64 BN64 BK64 w4 s4: 128% slower: tile intensity 32 FLOP/B")
        assert why.region.height >= 2 and why.region.bottom <= size[1] - 2


def test_ir_tab(snap_compare, tmp_path):
    """vector_add cross-compiled for sm_90 at every stage (the IR job runs on CPU), stored with a
    fixed id and time; the stage files name the kernel by its path in the repository, as they
    would in any checkout. Into the tab, the cursor on the first tl.load: its TTIR lines marked."""
    out = cli(
        "ir", "vector_add", "--stage", "all", "--json",
        env={"WORKBENCH_REPORTS": str(tmp_path / "ir"), "TRITON_CACHE_DIR": str(tmp_path / "tc")},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    ir = json.loads(out.stdout)["result"]
    for variant in ir["variants"]:
        for stage in STAGES:
            path = Path(variant["artifacts"][stage])
            path.write_text(path.read_text().replace(f"{ROOT}/", ""))
    ir["out_dir"] = "reports/runs/ir-vector_add"
    _record("ir", "vector_add", ir)
    assert _matches(snap_compare, "vector_add", "4", "enter", "down", "down", "down")


CACHE_SPEC = """
import torch

from workbench.catalog.spec import KernelSpec


def scale(x):
    out = torch.empty_like(x)
    scale_tuned[lambda m: (triton.cdiv(x.numel(), m["BLOCK"]),)](x, out, x.numel())
    return out


SPEC = KernelSpec(
    name="tiny_scale",
    kernel_fn=scale,
    reference_fn=lambda x: x * 2,
    make_inputs=lambda shape, dtype, device: (torch.randn(shape, dtype=dtype, device=device),),
    shapes={"check": [(4096,)]},
    dtypes=("float32",),
    jit=(scale_tuned,),
    noncontig=False,
)
"""
"""Makes the cache fixtures' kernel (whose source is in its keys) a kernel of the list."""


def test_cache_tab(snap_compare, tmp_path, monkeypatch):
    """`k` on a kernel whose compiled and autotune entries Triton 3.9 wrote elsewhere (the
    cache fixture, written an hour before the clock, which stands still for the job too)."""
    folder = FIXTURES / "cache_versions"
    root = tmp_path / "triton-cache"
    shutil.copytree(folder / "triton_3.9" / "cache", root)
    for path in root.rglob("*"):
        os.utime(path, (T0, T0))
    kernel = tmp_path / "tiny_scale.py"
    kernel.write_text((folder / "tiny_kernel.py").read_text() + CACHE_SPEC)
    monkeypatch.chdir(tmp_path)  # the kernel head names the file from here
    monkeypatch.setenv("TRITON_CACHE_DIR", str(root))
    monkeypatch.setattr(time, "time", lambda: T0 + 3600)
    found = scan.scan  # the cache read where Triton keeps it by default, not in this test's tmp
    monkeypatch.setattr(
        scan, "scan", lambda where: dataclasses.replace(found(where), root="~/.triton/cache")
    )
    assert _matches(snap_compare, "tiny_scale", "k", more=[str(kernel)])
