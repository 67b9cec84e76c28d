"""The TUI, driven headlessly with Textual's Pilot on CPU: jobs run through the real job runner
(interpreter, cross-compilation), stored results are real H100 fixtures recorded in this test's
store."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import io
import json
import os
import re
import shutil
import time
from collections.abc import AsyncIterator, Sequence

from conftest import FAULTY, FIXTURES, ROOT, cli
from rich.text import Text
from textual.pilot import Pilot
from textual.widgets import DataTable, Static

from workbench.bench.result import BenchRecord, BenchResult, Ceilings
from workbench.check.result import CaseResult, CheckReport
from workbench.run.store import RunRecord, Store
from workbench.tui.app import WorkbenchApp
from workbench.tui.widgets.kernel_list import KernelList

PITFALLS = str(ROOT / "kernels" / "pitfalls")


def record(
    kind: str,
    kernel: str,
    result: dict | None = None,
    *,
    started: float | None = None,
    summary: dict | None = None,
    run_id: str | None = None,
    file: str | None = None,
    artifacts: str | None = None,
) -> None:
    """A run in this test's store, as a job would have left it."""
    Store().record(
        RunRecord(
            id=run_id or f"{kind}-{kernel}",
            kind=kind,
            kernel=kernel,
            file=file,
            params={},
            status="ok",
            started=time.time() if started is None else started,
            seconds=1.5,
            host="test",
            mode="gpu",
            summary=summary if summary is not None else (result or {}).get("summary"),
            result=result,
            problem=None,
            artifacts=artifacts,
        )
    )


def check_result(kernel: str, statuses: list[str]) -> dict:
    cases = [
        CaseResult.from_dict(
            {
                "shape_set": "regular",
                "shape": [4096 * (i + 1)],
                "dtype": "float32",
                "layout": "contiguous",
                "status": status,
                "max_abs_diff": 0.0 if status == "passed" else 0.5,
                "rel_l2": 0.0 if status == "passed" else 0.1,
                "worst_index": None if status == "passed" else [17],
            }
        )
        for i, status in enumerate(statuses)
    ]
    return CheckReport(kernel, "NVIDIA H100 80GB HBM3", "gpu", cases).to_dict()


def h100_bench(kernel: str = "vector_add") -> dict:
    """The bench of vector_add on the H100 (tests/fixtures), as its bench job returns it."""
    doc = json.loads((FIXTURES / "bench_h100_vector_add.json").read_text())
    records = [BenchRecord.from_dict({**r, "name": kernel}) for r in doc["records"]]
    ceilings = Ceilings.from_dict(doc["ceilings"])
    return BenchResult(kernel, doc["device"], ceilings, records).to_dict()


@contextlib.asynccontextmanager
async def opened(
    paths: Sequence[str] = (), size: tuple[int, int] = (170, 45), notifications: bool = False
) -> AsyncIterator[tuple[WorkbenchApp, Pilot]]:
    """The app on `paths` (default ./kernels), driven headlessly, once its kernel panel is in."""
    app = WorkbenchApp(paths)
    async with app.run_test(size=size, notifications=notifications) as pilot:
        await until(pilot, lambda: app.screen.ready)
        yield app, pilot


async def settle(app: WorkbenchApp, pilot, timeout: float = 120) -> None:  # type: ignore[no-untyped-def]
    """Wait until the app's job queue is idle and the screen has caught up."""
    assert await asyncio.to_thread(app.queue.wait_idle, timeout)
    await app.workers.wait_for_complete()
    await pilot.pause()


async def until(pilot, done, timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    """Let the app run until `done()` holds (work it does after its first paint)."""
    end = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < end, "timed out"
        await pilot.pause(0.05)


def text(widget: Static) -> str:
    """A Static's content as plain text, whatever renderable it holds: for a PlainStatic, the
    text it was given, before it was wrapped to the widget's width."""
    from rich.console import Console

    console = Console(width=400, record=True, file=io.StringIO())
    console.print(getattr(widget, "source", widget.content))
    return console.export_text()


def head(app: WorkbenchApp, tab: str) -> str:
    return text(app.screen.pane(tab).query_one(".head", Static))


async def show(app: WorkbenchApp, pilot, tab: str, key: str | None = None) -> None:  # type: ignore[no-untyped-def]
    """Press the tab's number (or `key`) and wait until its pane shows the selected kernel's
    result or says why there is none (a pane mounts the first time its tab shows, and the
    store is read in the background)."""
    from workbench.tui.tabs import TABS

    await pilot.press(key or str([t.id for t in TABS].index(tab) + 1))

    def shown() -> bool:
        pane = app.screen.pane(tab)
        return pane is not None and pane.is_mounted and "reading the store" not in head(app, tab)

    await until(pilot, lambda: shown() and head(app, tab).strip())


async def select(app: WorkbenchApp, pilot, name: str) -> None:  # type: ignore[no-untyped-def]
    kernels = app.screen.query_one(KernelList)
    kernels.cursor_row = [e.name for e in kernels.entries].index(name)
    await pilot.pause()
    tab = app.screen.active_tab.id
    await until(pilot, lambda: "reading the store" not in head(app, tab))


def column(table: DataTable | KernelList, index: int) -> list[str]:
    return [str(table.get_row_at(i)[index]) for i in range(table.row_count)]


def test_ui_process_imports_no_torch():
    """The startup benchmark's check: the UI process, every tab loaded, imports neither."""
    where = ROOT / "benchmarks" / "tui_startup.py"
    spec = importlib.util.spec_from_file_location("tui_startup", where)
    assert spec is not None and spec.loader is not None
    startup = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(startup)
    assert startup.ui_imports_heavy() == []


async def test_a_pane_empties_its_body_and_keeps_its_head():
    """Every tab's pane, shown a kernel without results: the head says how to get one, and
    emptying the body (which `show` does first) leaves the head alone."""
    from textual.app import App

    from workbench.catalog.discovery import discover
    from workbench.tui.tabs import TABS, pane_class
    from workbench.tui.tabs.base import View

    class Panes(App[None]):
        def compose(self):  # type: ignore[no-untyped-def]
            for t in TABS:
                yield pane_class(t)(id=t.id)

    entry = discover([str(ROOT / "kernels" / "vector_add.py")]).find("vector_add")
    app = Panes()
    async with app.run_test(size=(170, 45)) as pilot:
        for t in TABS:
            pane = app.query_one(f"#{t.id}")
            view = View(entry, gpu=False, key=t.key, action=t.action)
            pane.show(view)
            await pilot.pause()
            assert text(pane.query_one(".head", Static)).strip() == pane.empty_text(view), t.id


async def test_kernel_list_status_filter_sort_and_keys():
    """Status columns come from the store; `/` filters, a header click sorts, Home/End go to
    the ends, `r` keeps the selection."""
    record("check", "vector_add", check_result("vector_add", ["passed", "passed"]))
    record("check", "softmax", check_result("softmax", ["passed", "failed"]))
    record("bench", "vector_add", h100_bench())
    record("cache", "softmax", summary={"compile_dirs": 2, "autotune": 3, "dead": 2})
    async with opened() as (app, pilot):
        await until(pilot, lambda: app.screen.status)
        kernels = app.screen.query_one(KernelList)
        rows = {kernels.get_row_at(i)[0]: kernels.get_row_at(i) for i in range(kernels.row_count)}
        assert rows["vector_add"][1:3] == ("ok", "101%")
        assert rows["softmax"][1] == "FAIL" and rows["softmax"][4] == "stale"
        assert rows["gelu"][1:5] == ("-", "-", "-", "-")

        await pilot.press("end")
        assert kernels.selected.name == column(kernels, 0)[-1]
        await pilot.press("home")
        assert kernels.cursor_row == 0

        await pilot.press("slash", *"soft")
        await pilot.pause()
        assert column(kernels, 0) == ["softmax", "softmax_online"]
        await pilot.press("enter", "down")
        assert kernels.selected.name == "softmax_online"
        await pilot.press("escape")
        await pilot.pause()
        assert kernels.row_count > 2 and kernels.selected.name == "softmax_online"
        await pilot.press("r")  # reload keeps the selected kernel
        await pilot.pause()
        assert kernels.selected.name == "softmax_online"

        roof = sum(kernels.widths[:2]) + 2 * 2 + 1
        await pilot.click(KernelList, offset=(roof, 0))
        await pilot.pause()
        assert column(kernels, 0)[0] == "vector_add"  # the only kernel with a roofline
        await pilot.press("S")  # keys sort too: the next column, findings
        await pilot.pause()
        assert app.screen.sort_column == "find"


async def test_jobs_outlive_switches_queue_cancel_and_show_errors_where_results_go():
    """A hanging check runs while a check and a compile of other kernels wait; each keeps to
    its kernel across kernel and tab switches; `x` cancels the hang and the queued jobs run: the
    check with the options chosen for its kernel (float32 only), the compile of a kernel that
    does not compile with the CLI's error (cause, file:line, remedy) where its IR would be."""
    async with opened([str(FAULTY / "faults.py")], notifications=True) as (app, pilot):
        await select(app, pilot, "fault_hang")
        await pilot.press("c")
        await select(app, pilot, "fault_free_copy")
        await pilot.press("o")
        await pilot.pause()
        app.screen.query_one("#opt-dtype").value = "float32"  # the options of fault_free_copy
        await pilot.click("#opt-keep")
        await pilot.pause()
        assert "dtype float32" in text(app.screen.query_one("#kernel-head", Static))
        await pilot.press("c")
        await pilot.pause()
        assert "queued behind check fault_hang" in str([n.message for n in app._notifications])
        assert "check of fault_free_copy: queued" in head(app, "check")
        await select(app, pilot, "fault_compile")
        await pilot.press("i")

        await show(app, pilot, "check")  # another tab, another kernel: the jobs are the app's
        await select(app, pilot, "fault_hang")
        assert "check of fault_hang: running" in head(app, "check")
        await until(pilot, lambda: app.queue.running is not None and app.queue.running.total > 0)
        assert app.screen.check_action("cancel", ()) is True
        await pilot.press("j")
        await pilot.pause()
        jobs = app.screen.query_one("#jobs-table", DataTable)
        assert column(jobs, 1) == ["ir", "check", "check"]
        assert column(jobs, 3) == ["queued", "queued", "running"]
        await pilot.press("escape", "x")
        await settle(app, pilot)

        assert "[cancelled]" in head(app, "check") and "run it again" in head(app, "check")
        await select(app, pilot, "fault_free_copy")
        cases = app.screen.pane("check").query_one("#cases", DataTable)
        assert cases.row_count and set(column(cases, 1)) == {"float32"}
        assert "fault_free_copy on its given inputs: CORRECT" in head(app, "check")
        kernels = app.screen.query_one(KernelList)
        assert kernels.get_row_at(kernels.cursor_row)[1] == "ok"

        await select(app, pilot, "fault_compile")
        await show(app, pilot, "ir")
        shown = head(app, "ir")
        assert "0 of 1 config(s) compiled" in shown and "1 did not compile" in shown
        assert "(user-code): " in shown and "faults.py:23: Triton could not compile" in shown
        assert "remedy: fix the kernel source at faults.py:23" in shown
        source = app.screen.pane("ir").query_one("#ir-source")
        assert source.kinds == {23: "removed"} and source.cursor == 23
        await show(app, pilot, "resources")
        assert "faults.py:23" in head(app, "resources")
        resources = app.screen.pane("resources").query_one("#resources", DataTable)
        assert column(resources, 7) == ["did not compile"]
        await select(app, pilot, "fault_raises")  # another kernel: its own, empty, tab
        assert head(app, "resources").startswith("no resources of fault_raises yet: s runs it")


async def test_ir_sweep_and_cache_of_one_kernel_then_its_file_changes(tmp_path, monkeypatch):
    """`i`, `t` and `k` queue one after another. The IR tab follows a Python line through the
    stages and back, searches a stage, diffs two configs; the Sweep tab ranks the kernel's own
    configs (statically: no GPU, so `n` is greyed); the Cache tab reads Triton's cache with the
    kernel's keys. Once the file is edited, the tab and the list say the results are older."""
    from workbench.tui.widgets.code_view import CodeView
    from workbench.views import irview

    kernel = tmp_path / "sweep_three_name.py"  # one input: its keys recompute in seconds
    shutil.copy(FIXTURES / "sweep_three_name.py", kernel)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))
    (tmp_path / "triton-cache").mkdir()
    async with opened([str(kernel)]) as (app, pilot):
        await pilot.press("i", "t", "k")
        assert [t.action for t in app.queue.tasks] == ["ir", "sweep", "cache"]
        await settle(app, pilot)

        await show(app, pilot, "ir")
        pane = app.screen.pane("ir")
        source = pane.query_one("#ir-source", CodeView)
        code = pane.query_one("#ir-code", CodeView)
        assert "2 of 3 config(s) compiled" in head(app, "ir")
        assert "must be a power of 2" in head(app, "ir")  # the third config, with its line
        await pilot.press("enter")  # into the tab: the source view
        assert source.has_focus
        source.go_to(20)  # tl.store(...)
        await pilot.pause()
        ttir = irview.ir_lines(pane.variant, "ttir", 20)
        assert ttir and code.marks == set(ttir)
        assert "line 20 -> " in text(pane.query_one("#ir-status", Static))
        await pilot.press("right_square_bracket")  # the same line, followed into TTGIR
        assert pane.stage == "ttgir"
        assert code.marks == set(irview.ir_lines(pane.variant, "ttgir", 20)) != set()
        code.focus()
        code.go_to(sorted(code.marks)[0])  # and back: an IR line finds its Python line
        await pilot.pause()
        assert source.cursor == 20
        await pilot.press("slash", *"tt.load", "enter")
        await pilot.pause()
        assert code.matches and all("tt.load" in code.lines[n - 1] for n in code.matches)
        assert code.cursor in code.matches
        await pilot.press("v")
        assert pane.index == 1 and "config 2/2: BLOCK=1024" in text(pane.query_one("#ir-status"))
        await pilot.press("d")
        await pilot.pause()
        await pilot.click("#pick-go")
        await pilot.pause()
        assert pane.diff is not None
        assert any(line.startswith("regs") for line in source.lines)
        assert "added" in code.kinds.values() or "removed" in code.kinds.values()
        await pilot.press("escape")
        assert pane.diff is None and source.lines[0].startswith('"""A plain user module')
        app.screen.query_one(KernelList).focus()  # on the IR tab `/` searches the IR wherever
        await pilot.press("slash")  # the focus is, not the kernel list
        assert pane.query_one("#ir-search").has_focus
        assert not app.screen.query_one("#filter").has_focus
        await pilot.press("escape")
        await show(app, pilot, "resources")
        regs = column(app.screen.pane("resources").query_one("#resources", DataTable), 1)
        assert regs[:2] != ["-", "-"] and regs[2] == "-"  # two compiled, the third did not

        await show(app, pilot, "sweep")
        rows = app.screen.pane("sweep").query_one("#sweep-rows", DataTable)
        configs = column(rows, 1)
        assert len(configs) == 3 and all("BLOCK=" in c for c in configs), configs
        assert "sweep sweep_three_name: 3 config(s)" in head(app, "sweep")
        assert app.screen.check_action("in_tab", ("sweep", "profile_row")) is None

        await show(app, pilot, "cache")
        shown = head(app, "cache")
        assert "cache " in shown and "compiled" in shown and "changed since" not in shown
        reach = text(app.screen.pane("cache").query_one("#cache-reach", Static))
        assert "sweep_three_name on Triton" in reach and "_scale key" in reach, reach
        os.utime(kernel, (kernel.stat().st_atime, time.time() + 60))
        app.screen.tick()
        await pilot.pause()
        assert "sweep_three_name.py changed since this result: run it again (k)" in head(
            app, "cache"
        )
        assert app.screen.query_one(KernelList).get_row_at(0)[5] == "edited"


async def test_esc_on_the_ir_tab_leaves_the_selection_and_goes_back_to_the_kernel_list():
    """Tab from the IR code lands in the kernel filter: a stage key typed there by mistake
    filters every kernel away, and esc brings them back with the kernel selected before, not
    the first. Esc closes the IR search, then goes back to the list; `/` searches the IR
    wherever the focus is; a kernel without IR shows no other kernel's file or stage."""
    from workbench.tui.widgets.code_view import CodeView

    ir = json.loads((FIXTURES / "ir_gpu_pitfall_spill.json").read_text())["result"]
    record("ir", "pitfall_spill", ir)  # on the H100
    async with opened([PITFALLS]) as (app, pilot):
        await select(app, pilot, "pitfall_spill")
        await show(app, pilot, "ir")
        kernels, pane = app.screen.query_one(KernelList), app.screen.pane("ir")
        await pilot.press("enter", "tab", "tab")  # into the tab, past the IR code
        assert app.screen.query_one("#filter").has_focus
        await pilot.press("right_square_bracket")  # meant for the IR: no kernel matches "]"
        assert kernels.selected is None
        await pilot.press("escape")
        assert kernels.has_focus and kernels.row_count == len(app.catalog.kernels)
        assert kernels.selected.name == "pitfall_spill"
        app.screen.query_one("#filter").focus()  # a filter typed and kept (enter) ...
        await pilot.press(*"tail", "enter", "down")
        assert kernels.selected.name == "pitfall_tail_fixed"
        await pilot.press("enter", "tab", "tab", "x", "escape")  # ... then a stray key: esc
        assert kernels.selected.name == "pitfall_tail_fixed"  # comes back to the kernel kept
        await select(app, pilot, "pitfall_spill")
        await pilot.press("slash", *"spill")  # from the list: the IR's search, not the filter
        search = pane.query_one("#ir-search")
        assert search.has_focus and not app.screen.query_one("#filter").value
        await pilot.press("escape")
        assert not search.display and pane.query_one("#ir-code").has_focus
        for _ in range(2):  # back to the list; then nothing is left to close, nothing moves
            await pilot.press("escape")
            assert kernels.has_focus and kernels.selected.name == "pitfall_spill"
        assert pane.query_one("#ir-code", CodeView).border_title.startswith("ttir: ")
        await select(app, pilot, "pitfall_spill_fixed")
        assert [v.border_title for v in pane.query(CodeView)] == ["", ""]


async def test_at_100x30_no_line_is_cut_mid_word():
    """On a 100x30 terminal: the footer shows whole keys (`?` first), the help screen wraps its
    prose in columns that fit, the Check tab cuts a long note at a word with the whole note
    below the table and scrolls a head too long for half the pane, and texts wrap at words
    with their continuations indented (a config's K=V list breaks after a comma): the CPU check
    of pitfall_tail and the H100 diagnosis of pitfall_spill, as stored."""
    from test_tui_snapshots import _h100_diagnosis

    check = json.loads((FIXTURES / "report" / "check_cpu_pitfall_tail.json").read_text())
    record("check", "pitfall_tail", check["result"])
    record("diagnose", "pitfall_spill", _h100_diagnosis("pitfall_spill"))
    async with opened([PITFALLS], size=(100, 30)) as (app, pilot):
        footer = app.screen.query_one("Footer")
        await until(pilot, lambda: any(not k.display for k in footer.query("FooterKey")))
        keys = list(footer.query("FooterKey"))
        palette = next(k for k in keys if k.has_class("-command-palette"))
        shown = [k for k in keys if k.display and k is not palette]
        assert shown[0].key == "question_mark"
        assert all(k.region.right <= palette.region.x for k in shown)

        await pilot.press("question_mark")
        await pilot.pause(0.3)
        table = app.screen.query_one("#help-keys", DataTable)
        assert table.virtual_size.width <= table.size.width  # every column in view
        first = [str(c) for c in table.get_row_at(0)]  # `?`: its help wraps at words, indented
        assert first[0] == "?" and "\n" in first[1]
        assert first[1].replace("\n  ", " ") == "every key, what it does and what is greyed here"
        assert table.rows[table.coordinate_to_cell_key((0, 0)).row_key].height > 1
        await pilot.press("escape")

        await select(app, pilot, "pitfall_tail")
        await show(app, pilot, "check")
        cases = app.screen.pane("check").query_one("#cases", DataTable)
        notes = column(cases, 9)
        long = next(c for c in check["result"]["cases"] if len(c["reason"]) > 40)
        assert notes[6].endswith("…") and long["reason"].startswith(notes[6][:-1].rstrip())
        assert notes[6][-2] != " " and notes[6][:-1] + " " in long["reason"] + " "  # at a word
        below = text(app.screen.pane("check").query_one("#case-note", Static))
        assert long["reason"] in below.replace("\n", " ")
        head = app.screen.pane("check").query_one(".head-box")  # a long head scrolls, the
        assert head.max_scroll_y > 0 and cases.size.height >= 4  # table keeps its rows in view

        await select(app, pilot, "pitfall_spill")
        await show(app, pilot, "diagnosis")
        detail = app.screen.pane("diagnosis").query_one("#diagnosis-detail", Static)
        width = detail.size.width
        lines = detail.content.plain.split("\n")
        assert width and all(len(line) <= width for line in lines), (width, lines)
        from workbench.tui.widgets.plain import wrapped

        assert wrapped(Text(text(detail).rstrip("\n")), width).plain.split("\n") == lines
        evidence = next(i for i, line in enumerate(lines) if "evidence: " in line)
        assert lines[evidence + 1].startswith("     ")  # under `evidence:`, two further in


async def test_x_stops_a_cache_job_midway_and_the_scan_stays(tmp_path, monkeypatch):
    """`x` kills a running cache job's child as it does any other job's (the keys of a kernel
    whose wrapper hangs are never recomputed); the Cache tab shows the scan read before it,
    marked cancelled."""
    root = tmp_path / "triton-cache"
    shutil.copytree(FIXTURES / "cache_versions" / "triton_3.4" / "cache", root)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(root))
    async with opened([str(FAULTY / "faults.py")], notifications=True) as (app, pilot):
        await select(app, pilot, "fault_hang")
        await pilot.press("k")

        def child_started() -> bool:
            task = app.queue.running
            return task is not None and any(e.get("event") == "started" for e in task.events)

        await until(pilot, child_started, timeout=60)
        await pilot.press("x")
        await settle(app, pilot, timeout=30)
        [task] = app.queue.tasks
        assert task.state == "cancelled" and task.finished.status == "cancelled"
        assert not [n for n in app._notifications if "cannot" in n.message]
        await show(app, pilot, "cache")
        assert "[cancelled]" in head(app, "cache") and "run it again" in head(app, "cache")
        compiled = app.screen.pane("cache").query_one("#cache-compiled", DataTable)
        assert column(compiled, 1) == ["scale_kernel"]


async def test_n_profiles_the_highlighted_sweep_config_on_a_gpu_host(monkeypatch):
    """On a GPU host `n` on the Sweep tab runs ncu on the highlighted row (pinned, at its shape)
    through the profile session; here ncu is missing, and the refusal shows in the Profile tab."""
    monkeypatch.setenv("WORKBENCH_DEVICE", "cuda")
    monkeypatch.setenv("WORKBENCH_NCU", str(ROOT / "no-such-ncu"))
    recorded = json.loads((FIXTURES / "sweep_h100_matmul16.json").read_text())["result"]
    record("sweep", "sweep_three_name", recorded)
    async with opened([str(FIXTURES / "sweep_three_name.py")]) as (app, pilot):
        await show(app, pilot, "sweep")
        pane = app.screen.pane("sweep")
        assert pane.highlighted()["label"] == recorded["shapes"]["4096x4096x4096"]["best"]
        assert app.screen.check_action("in_tab", ("sweep", "profile_row")) is True
        await pilot.press("n")
        await settle(app, pilot)
        assert app.screen.active_tab.id == "profile"
        assert app.queue.tasks[-1].extra["case"] == "4096x4096x4096:bfloat16"
        shown = head(app, "profile")
        assert "tool-missing" in shown or "WORKBENCH_NCU" in shown, shown


def _import(report: str) -> None:
    from workbench.cli.main import main

    assert main(["profile", "--import", str(FIXTURES / report), "--json"]) == 0


async def test_profile_tab_shows_the_stored_profile_or_how_to_make_one(capsys):
    _import("ncu_spill.ncu-rep")  # the CLI's import path records it in this test's store
    capsys.readouterr()
    async with opened([PITFALLS], size=(170, 50), notifications=True) as (app, pilot):
        await select(app, pilot, "pitfall_spill")
        await show(app, pilot, "profile", "p")  # greyed here: shows the tab, says why
        assert app.screen.active_tab.id == "profile" and not app.queue.tasks
        assert "needs a CUDA GPU" in str([n.message for n in app._notifications])
        assert "ncu_spill.ncu-rep" in head(app, "profile")
        pane = app.screen.pane("profile")
        facts = dict(pane.query_one("#profile-kernels", DataTable).get_row_at(i) for i in range(9))
        assert facts["regs"] == "255" and facts["spill inst"] == "290,048"
        findings = text(pane.query_one("#profile-findings", Static))
        assert "register-spill" in findings and "pitfall_spill.py:47" in findings
        assert pane.query_one("#profile-lines", DataTable).get_row_at(0)[1] == "pitfall_spill.py:47"
        await select(app, pilot, "pitfall_spill_fixed")  # no profile stored: says how to get one
        shown = head(app, "profile")
        assert "no profile stored for pitfall_spill_fixed" in shown and "--import FILE" in shown
        assert not pane.query_one("#profile-kernels", DataTable).display


async def test_profile_on_a_gpu_host_is_refused_with_the_sessions_own_problem(monkeypatch):
    monkeypatch.setenv("WORKBENCH_DEVICE", "cuda")
    monkeypatch.setenv("WORKBENCH_NCU", str(ROOT / "no-such-ncu"))
    async with opened([PITFALLS]) as (app, pilot):
        await pilot.press("p")
        await settle(app, pilot)
        await until(pilot, lambda: "[refused]" in head(app, "profile"))
        shown = head(app, "profile")
        assert "[refused]" in shown and "error: WORKBENCH_NCU=" in shown, shown
        assert "remedy: point WORKBENCH_NCU at the ncu program" in shown


async def test_bench_tab_shows_the_stored_h100_bench_and_b_is_greyed_here():
    record("bench", "vector_add", h100_bench(), file=str(ROOT / "kernels" / "vector_add.py"))
    async with opened() as (app, pilot):
        await select(app, pilot, "vector_add")
        assert app.screen.check_action("run", ("bench",)) is None
        await show(app, pilot, "bench", "b")
        pane = app.screen.pane("bench")
        rows = pane.query_one("#bench-rows", DataTable)
        assert column(rows, 1) == ["float32", "float16", "bfloat16"]
        assert column(rows, 6)[0] == "1.01"
        bars = text(pane.query_one("#bench-bars", Static))
        assert "█" * 16 in bars and "101% roofline" in bars and "Measured ceilings" in bars
        assert "stored run bench-vector_add" in head(app, "bench")


async def test_history_tab_lists_every_run_newest_first_as_history_prints_them():
    """Runs of every kind, newest first, each with its verdict (a resources run made here on
    CPU, a failed check, H100 bench runs), the same rows `history NAME` prints; below them the
    bench times per case across runs, the newest float32 case 30 % slower marked as `history
    NAME --trend` marks it."""
    for n, scale in enumerate((1.0, 1.01, 1.3)):
        result = h100_bench()
        for r in result["records"]:
            if r["dtype"] == "float32" or scale < 1.3:
                for k in ("ms", "ms_p20", "ms_p80"):
                    r[k] *= scale
        record("bench", "vector_add", result, started=time.time() - 3600 + n, run_id=f"b{n}")
    record("check", "vector_add", check_result("vector_add", ["passed", "failed"]), run_id="c")
    async with opened() as (app, pilot):
        await select(app, pilot, "vector_add")
        await show(app, pilot, "history", "h")
        await pilot.press("s")  # resources, cross-compiled here: the History tab reads it anew
        await settle(app, pilot)
        await show(app, pilot, "history", "h")
        await until(pilot, lambda: "5 run(s) of vector_add" in head(app, "history"))
        shown = head(app, "history")
        assert "5 run(s) of vector_add, newest first: 1 resources, 1 check, 3 bench" in shown
        assert "3 bench run(s), 3 case(s): 1 regression(s) beyond the noise" in shown
        assert "regression: vector_add 268435456 float32 on NVIDIA H100" in shown
        runs = app.screen.pane("history").query_one("#history-runs", DataTable)
        rows = [tuple(str(c) for c in runs.get_row_at(i)) for i in range(runs.row_count)]
        assert [r[2] for r in rows] == ["resources", "check", "bench", "bench", "bench"]
        assert rows[0][-1] == "1 of 1 compiled for sm_90" and rows[0][4] == "cross-compile"
        assert rows[1][-1].startswith("NOT correct") and rows[2][-1] == "3 of 3 timed"
        printed = cli("history", "vector_add").stdout.splitlines()
        assert printed[0] == "5 run(s) of vector_add, newest first: 1 resources, 1 check, 3 bench"
        assert [tuple(re.split(r"\s{2,}", line)) for line in printed[4:9]] == rows, printed
        table = app.screen.pane("history").query_one("#history-cases", DataTable)
        verdicts = dict(zip(column(table, 0), column(table, 8)))
        assert verdicts["vector_add 268435456 float32"] == "REGRESSION"
        assert verdicts["vector_add 268435456 float16"] == "within noise"
        sparks = text(app.screen.pane("history").query_one("#history-sparks", Static))
        assert "▁▁█" in sparks
        await select(app, pilot, "softmax")
        assert head(app, "history").startswith("no runs of softmax stored")


async def test_help_and_palette_come_from_the_keymap():
    from workbench.tui import keymap

    async with opened([PITFALLS]) as (app, pilot):
        await pilot.press("question_mark")
        await pilot.pause()
        table = app.screen.query_one("#help-keys", DataTable)
        cells = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        rows = {(r[0], r[1]): r[3] for r in cells}  # a long cell wraps: a Text, read as text
        assert len(rows) == len(keymap.keymap())
        greyed = sorted(k for (k, _), state in rows.items() if state.startswith("greyed"))
        assert greyed == sorted(k.display for k in keymap.keymap() if k.gpu)
        assert {"b", "p", "n"} <= set(greyed)  # bench, profile, ncu on a sweep row
        from textual.command import CommandList

        def first_hit() -> str:
            hits = app.screen.query(CommandList)
            return (
                str(hits[0].get_option_at_index(0).prompt) if hits and hits[0].option_count else ""
            )

        await pilot.press("escape", "ctrl+p", *"cache")
        await until(pilot, lambda: "Read Triton's caches" in first_hit())
        await pilot.press("escape", "ctrl+p", *"spill_fi")
        await until(pilot, lambda: "Kernel pitfall_spill_fixed" in first_hit())
        await pilot.press("enter")
        await until(pilot, lambda: getattr(app.screen, "selected", None) is not None)
        assert app.screen.selected.name == "pitfall_spill_fixed"


async def test_options_refuse_a_bad_config_with_the_clis_problem():
    async with opened([PITFALLS]) as (app, pilot):
        await pilot.press("o")
        await pilot.pause()
        app.screen.query_one("#opt-config").value = "BLOCK_M"
        await pilot.click("#opt-keep")
        await pilot.pause()
        problem = text(app.screen.query_one("#opt-problem", Static))
        assert "'BLOCK_M' in config is not KEY=VALUE" in problem and "remedy:" in problem
        field = app.screen.query_one("#opt-config")
        field.value = "BLOCK_M=64,num_warps=8"
        field.focus()
        await pilot.press("enter")  # enter in the field keeps the options too
        await pilot.pause()
        entry = app.screen.selected
        assert app.selections[entry.name].config == "BLOCK_M=64,num_warps=8"
