"""What the TUI stands on without a screen: the keymap table, the kernel list's standing, sorting
and filter, the params an action builds from its options, the IR line maps, the bench bars."""

from __future__ import annotations

import json
import os
import re
import time
from collections import Counter

import pytest
from conftest import FIXTURES, ROOT

from workbench.app import actions
from workbench.catalog.discovery import discover
from workbench.ir.result import IrResult
from workbench.run.kinds import COMMANDS, read_result
from workbench.run.params import BenchParams, CheckParams, IrParams, SweepParams
from workbench.runtime.errors import WorkbenchError
from workbench.tui import keymap
from workbench.tui.tabs import TABS, Tab, pane_class
from workbench.views import bench, irview, kernels
from workbench.views.finished import problem_text


def test_every_key_is_bound_once_where_it_acts():
    """A key means one thing in each place: anywhere, or inside one tab (where it may shadow a
    key bound anywhere only by design: `/` searches the IR from inside the IR tab)."""
    keys = keymap.keymap()
    assert len({k.id for k in keys}) == len(keys), "binding ids are what a user keymap moves"
    per_place = Counter((k.key, k.tab) for k in keys)
    assert [kt for kt, n in per_place.items() if n > 1] == []
    shadowed = {k.key for k in keys if k.tab} & {k.key for k in keys if k.tab is None}
    assert shadowed == {"slash"}


def test_the_readme_key_table_is_the_keymap():
    """The key table of README's TUI section names every key of the keymap, and its first column
    no key the app lacks (`1`-`9` is a range; ctrl+p is Textual's palette)."""

    def keys(text: str) -> set[str]:
        ranges = re.findall(r"`(\d)`-`(\d)`", text)
        spans = {str(n) for low, high in ranges for n in range(int(low), int(high) + 1)}
        return spans | set(re.findall(r"`([^`]+)`", text))

    section = (ROOT / "README.md").read_text().split("## The terminal UI", 1)[1]
    rows = [line for line in section.split("\n## ", 1)[0].splitlines() if line.startswith("| `")]
    displays = {k.display for k in keymap.keymap()}
    assert displays - keys("".join(rows)) == set()
    assert keys("".join(row.split("|")[1] for row in rows)) - displays == {"ctrl+p"}


def test_tab_table_keys_reach_real_pane_methods_and_actions():
    for t in TABS:
        pane = pane_class(t)
        assert t.action is None or t.action in COMMANDS
        for k in t.keys:
            assert callable(getattr(pane, f"action_{k.method}")), (t.id, k.method)
    gpu = {k.id for k in keymap.keymap() if k.gpu and k.tab is None}
    assert gpu == {c.name for c in COMMANDS.values() if c.gpu_only} == {"bench", "profile"}


def test_digits_reach_the_first_nine_tabs_and_a_tenth_has_its_letter(monkeypatch):
    """No two-digit key, which no terminal sends and the help screen would list."""
    tenth = Tab("tenth", "Tenth", "history", "HistoryPane", "e")
    monkeypatch.setattr(keymap, "TABS", (*TABS, tenth))
    keys = keymap.keymap()
    assert [k.key for k in keys if k.key.isdigit()] == [str(n) for n in range(1, 10)]
    assert any(k.key == "e" and k.action == "show_tab('tenth')" for k in keys)
    assert keymap.bindings()


def test_every_command_fills_tabs_that_exist_and_the_app_runs_it():
    ids = {t.id for t in TABS}
    for c in COMMANDS.values():
        assert c.tabs and set(c.tabs) <= ids, c.name
    assert set(actions.RUNNERS) == set(COMMANDS)  # in any order: the app looks them up
    assert {t.action for t in TABS if t.action} == set(COMMANDS)


def test_options_become_the_params_the_cli_builds():
    entry = discover([str(ROOT / "kernels" / "vector_add.py")]).find("vector_add")
    default = actions.Selection()
    assert default.check_params(entry) == CheckParams(None, None)
    chosen = actions.Selection(dtype="float16", shape_set="irregular", config="BLOCK=256")
    first = [list(s) for s in entry.shapes["irregular"]]
    assert chosen.check_params(entry) == CheckParams(["float16"], ["irregular"])
    ir = chosen.ir_params(entry, ["ttir"], cross_check=True)
    assert ir == IrParams(None, ["BLOCK=256"], ["ttir"], "float16", first[0], None, True)
    assert actions.Selection(arch="sm_80").ir_params(entry, [], False).arch == 80
    assert chosen.sweep_params(entry).shapes == first
    assert default.sweep_params(entry) == SweepParams(shapes=[])  # what `sweep NAME` builds
    assert actions.Selection(space="auto").sweep_params(entry).space == "auto"
    assert chosen.bench_params(entry) == BenchParams(first, ["float16"])
    bench_shape = "x".join(map(str, entry.shapes["bench"][0]))
    assert actions.Selection(dtype="float16").profile_case(entry) == f"{bench_shape}:float16"
    assert default.profile_case(entry) == ""
    with pytest.raises(WorkbenchError, match="is not KEY=VALUE"):
        actions.Selection(config="BLOCK").validated()


def test_a_problem_reads_as_the_cli_prints_it(capsys):
    from workbench.runtime.errors import Problem
    from workbench.views.text import print_problem

    problem = Problem("x", "it broke", "fix it", file="/k.py", line=7, source="user-code")
    print_problem(problem, prefix="case error")
    assert problem_text("case error", problem) + "\n" == capsys.readouterr().err


def test_kernel_standing_from_the_store_and_its_order(tmp_path):
    """The list reads each kind's newest run back as its typed result: a check report, the
    H100 bench records of vector_add, the compile of the spilling matmul on the GPU."""
    from workbench.bench.result import BenchRecord, BenchResult, Ceilings
    from workbench.check.result import CaseResult, CheckReport
    from workbench.run.store import RunRecord, Store

    catalog = discover([str(ROOT / "kernels")])
    now = time.time()

    def run(kind: str, kernel: str, result=None, summary=None, started=now, status="ok"):  # type: ignore[no-untyped-def]
        Store().record(
            RunRecord(f"{kind}-{kernel}", kind, kernel, None, {}, status, started, 1.0, "h", "gpu",
                      summary, result, None, None)
        )  # fmt: skip

    def check(*statuses: str) -> dict:
        cases = [CaseResult("check", [8], "float32", "contiguous", s) for s in statuses]
        return CheckReport("k", "cuda", "gpu", cases).to_dict()

    h100 = json.loads((FIXTURES / "bench_h100_vector_add.json").read_text())
    bench = BenchResult(
        "gelu",
        h100["device"],
        Ceilings.from_dict(h100["ceilings"]),
        [BenchRecord.from_dict(r) for r in h100["records"]],
    )
    best = max(r.roofline_ratio for r in bench.records if r.status == "ok")
    spill = json.loads((FIXTURES / "ir_gpu_pitfall_spill.json").read_text())["result"]
    run("check", "softmax", check("passed", "failed"))
    run("check", "gelu", check("passed", "skipped"))
    run("check", "layer_norm", None, status="timeout")  # ended before a result: how it ended
    run("ir", "gelu", spill)  # findings high and medium: 2 above info
    run("diagnose", "gelu", summary={"above_info": 3}, started=now - 60)  # the fuller picture
    run("check", "softmax_online", check("passed", "failed"), started=now - 60)
    Store().record(  # a check cancelled midway, after the FAIL: the FAIL stands
        RunRecord("check-again", "check", "softmax_online", None, {}, "cancelled", now, 1.0, "h",
                  "gpu", None, None, None, None)
    )  # fmt: skip
    run("bench", "gelu", bench.to_dict())
    run("cache", "gelu", summary={"dead": 0})
    status = kernels.statuses([k.name for k in catalog.kernels])
    assert status["softmax"].check == "FAIL" and status["gelu"].check == "ok"
    assert status["layer_norm"].check == "timeout"
    assert status["gelu"].findings == 3 and status["gelu"].roofline == best
    assert status["softmax_online"].check == "FAIL"
    assert status["gelu"].stale_cache is False and status["attention"] == kernels.NO_STATUS
    gelu = catalog.find("gelu")
    assert kernels.row(gelu, status["gelu"]) == ("gelu", "ok", f"{best:.0%}", "3", "ok", "")

    names = [e.name for e in kernels.ordered(catalog.kernels, status, column="check")]
    assert names[:4] == ["softmax", "softmax_online", "layer_norm", "gelu"]  # wrong, unfinished, ok
    assert [e.name for e in kernels.ordered(catalog.kernels, status, "soft max")] == [
        "softmax",
        "softmax_online",
    ]
    later = time.time() + 5
    copy = tmp_path / "gelu.py"
    copy.write_text(open(gelu.file).read())
    os.utime(copy, (later, later))
    moved = type(gelu)(**{**gelu.to_dict(), "file": str(copy)})
    assert kernels.source_changed(moved, status["gelu"])
    assert not kernels.source_changed(gelu, status["attention"])


def test_ir_line_maps_go_both_ways_on_an_h100_compile():
    result = IrResult.from_dict(
        json.loads((FIXTURES / "ir_gpu_pitfall_spill.json").read_text())["result"]
    )
    variant = result.variants[0]
    for stage in ("ttir", "ttgir", "llir", "ptx", "sass"):
        lines = irview.mapped_lines(variant, stage)
        assert lines, stage
        for py in lines:
            for ir in irview.ir_lines(variant, stage, py):
                assert irview.python_line(variant, stage, ir) == py
    assert (
        irview.ir_lines(variant, "ttir", 1) == [] and irview.python_line(variant, "ttir", 0) is None
    )
    assert "no ttir code" in irview.trail(variant, "ttir", 1)
    assert irview.search(["a tt.load b", "x", "TT.LOAD"], "tt.load") == [1, 3]
    assert irview.search(["a"], "") == []


def test_bench_bars_fill_to_the_eighth_of_a_cell():
    assert bench.bar(1.0, 4) == "████" and bench.bar(2.0, 4) == "████"
    assert bench.bar(0.5, 3) == "█▌ " and bench.bar(0.0, 2) == "  "
    assert bench.bar(1 / 32, 4) == "▏   "


def test_a_stored_sweep_reads_back_as_the_report_reads_it():
    """The Sweep tab gets a SweepResult from the store read the one way a stored sweep is read
    (`SweepResult.from_dict`, as the report reads it): its rows explained by today's analysis,
    whatever an older run wrote beside them."""
    from workbench.run.store import RunRecord, Store
    from workbench.sweep.result import SweepResult
    from workbench.views import stored

    recorded = json.loads((FIXTURES / "sweep_h100_matmul16.json").read_text())["result"]
    recorded["rows"][-1]["why"] = "what the run said"
    Store().record(
        RunRecord("sweep-1", "sweep", "sweep_three_name", None, {}, "ok", time.time(), 1.0, "h",
                  "gpu", recorded["summary"], recorded, None, None)
    )  # fmt: skip
    entry = discover([str(FIXTURES / "sweep_three_name.py")]).find("sweep_three_name")
    done = stored.latest("sweep", entry)
    assert done is not None and isinstance(done.result, SweepResult)
    today = SweepResult.from_dict(recorded)
    assert done.result == today and done.result.rows[-1]["why"] != "what the run said"
    configs = recorded["summary"]["configs"]
    assert done.lines[0].startswith(f"sweep {recorded['kernel']}: {configs} config(s) x 1 shape")
    assert done.lines[1] == f"best 4096x4096x4096: {recorded['summary']['best']['4096x4096x4096']}"


def test_a_result_kept_as_json_reads_back_as_it_was():
    """A diagnose --try's trial and an imported report have no typed result: their JSON is it."""
    for kind in ("diagnose-try", "profile-import"):
        assert read_result(kind, {"any": 1}) == {"any": 1}


def test_cache_reach_is_read_typed_as_the_cli_prints_it():
    """The H200's `cache verify` report: its reach is the cache job's CacheReach, its lines are
    what `workbench cache` prints under the tables, its functions name the kernel's entries."""
    from workbench.views import cache, cache_reach

    report = json.loads((FIXTURES / "cache_gpu" / "h200_verify_h100_tuning.json").read_text())
    reach = cache_reach.reach_of(report)
    assert reach is not None and reach.to_dict() == report["reach"]
    lines = cache_reach.reach_lines(reach)
    assert lines[0] == "narrow_matmul on Triton 3.6.0, sm_90:"
    assert len(lines) == 1 + len(reach.keys) + len(reach.autotune) + len(reach.verify)
    [key] = reach.keys
    assert lines[1].startswith(f"  narrow_matmul_kernel key {tuple(key['key'])} <- ")
    assert lines[-1].startswith("  verify narrow_matmul_kernel (")
    assert lines[-1].endswith(
        f"served from disk, ok (served {reach.verify[0]['served']['config']})"
    )
    assert "\n".join(lines) in cache.report_text(report)
    assert cache_reach.own_functions(reach) == {"narrow_matmul_kernel"}
    bare = {**report, "kernel": None, "reach": None}
    assert cache_reach.reach_of(bare) is None and cache_reach.own_functions(None) is None
    assert cache_reach.reach_lines(None) == [] and "narrow_matmul on" not in cache.report_text(bare)


def test_cache_name_prints_the_answer_then_only_its_own_entries():
    """`cache NAME` on a shared cache: findings and keys come before any table, and the tables
    hold the kernel's entries only (another project's entry is counted, not listed)."""
    from workbench.views import cache

    report = json.loads((FIXTURES / "cache_gpu" / "h200_verify_h100_tuning.json").read_text())
    other = {**report["scan"]["compiled"][0], "dir": "OTHER", "name": "someone_elses_kernel"}
    report["scan"]["compiled"].append(other)
    text = cache.report_text(report)
    assert "someone_elses_kernel" not in text
    head, tables = text.split("its own entries below")
    assert "narrow_matmul on Triton" in head and "[medium]" in head  # stored as "warning"
    assert "smem B" in tables and "smem B" not in head
    compiled, _, note = cache.own_entries(report)
    assert other not in compiled and note is not None
    assert f"of {len(report['scan']['compiled'])} compiled" in note


def test_the_same_static_finding_of_many_configs_is_one_line_naming_them():
    """`resources` on a many-config module: one line per finding, its configs named."""
    from workbench.views.rows import finding_lines

    occupancy = {"severity": "info", "id": "low-occupancy", "title": "25% (16/64 warps)"}
    found = [
        {**occupancy, "fix": "fewer stages", "evidence": {"config": f"BLOCK={b}"}}
        for b in (16, 32, 64, 128, 256)
    ]
    spill = {"severity": "high", "id": "register-spill", "title": "8 B", "fix": "f", "line": 9}
    text = finding_lines([*found, spill])
    assert text.count("low-occupancy") == 1 and text.count("register-spill:9") == 1
    assert "configs: BLOCK=16, BLOCK=32, BLOCK=64 and 2 more" in text
    assert finding_lines([]) == "no static findings"


def test_a_case_of_get_inputs_is_named_by_its_tensors_shapes():
    """A three-name module's given case has no shape of the spec's: it showed as `-`."""
    from workbench.check.result import CaseResult
    from workbench.views.rows import case_shape, check_row

    given = CaseResult("check", [], "as given", "contiguous", inputs=[[4, 64, 56, 56], [64], []])
    assert case_shape(given) == "4x64x56x56, 64, scalar" == check_row(given)[2]
    assert case_shape(CaseResult("regular", [4096], "float32", "contiguous")) == "4096"
    assert case_shape(CaseResult("check", [], "as given", "contiguous")) == "-"  # stored before


def test_a_line_is_cut_at_a_word_with_an_ellipsis_or_kept_whole():
    from rich.text import Span, Text

    from workbench.tui.widgets.plain import clipped
    from workbench.views.text import word_cut

    line = "x cancels  resources attention: 0/7 configs, 2.4 s, HEAD_DIM=64,CAUSAL=False"
    assert word_cut(line, len(line)) == len(line)
    assert (
        line[: word_cut(line, 70)]
        == "x cancels  resources attention: 0/7 configs, 2.4 s, HEAD_DIM=64,"
    )
    assert line[: word_cut(line, 30)] == "x cancels  resources"  # its spaces left out
    assert word_cut("x" * 50, 20) == 19  # one word wider than the line: cut where it must
    styled = Text("x cancels  ", "dim") + Text(line[11:], "bold")
    shown = clipped(styled, 30)
    assert shown.plain == "x cancels  resources…" and shown.spans[0] == Span(11, 20, "bold")
    assert clipped(styled, 0) is styled  # no width known yet


def test_a_wrapped_line_breaks_at_words_under_its_own_indent():
    from workbench.views.text import hang_indent, line_spans

    def wrap(line: str, width: int) -> list[str]:
        indent = " " * hang_indent(line, width)
        spans = line_spans(line, width)
        return [line[a:b] if i == 0 else indent + line[a:b] for i, (a, b) in enumerate(spans)]

    evidence = "   evidence: config=HAS_BIAS=False,GELU=False,BLOCK_M=256,num_warps=4, regs=255"
    assert wrap(evidence, 40) == [
        "   evidence: config=HAS_BIAS=False,",  # after a comma, not at the space past `evidence:`
        "     GELU=False,BLOCK_M=256,num_warps=4,",
        "     regs=255",
    ]
    assert wrap("fix: mask every tl.load and tl.store with offs < n", 24) == [
        "fix: mask every tl.load",
        "  and tl.store with offs",
        "  < n",
    ]
    assert wrap("in /tmp/reports/runs/20261126-084808-80cca4/x", 20) == [
        "in",
        "  /tmp/reports/runs/",
        "  20261126-084808-80",  # wider than a line: after a slash, else where it must
        "  cca4/x",
    ]
    assert wrap("short", 40) == ["short"] and wrap("   " + "y" * 30, 10)[0] == "   yyyyyyy"
    for width in (1, 2, 3, 7):  # every line within the width, nothing lost
        lines = wrap(evidence, width)
        assert all(len(line) <= width for line in lines)
        assert "".join(line.strip() for line in lines) == evidence.replace(" ", "")


def test_a_finding_said_in_words_shows_its_words_not_a_detail_key():
    from workbench.views.diagnosis import evidence_text

    said = evidence_text({"detail": "key=['BLOCK_N']; n_cols varies", "bytes": 4096, "remove": []})
    assert said == "key=['BLOCK_N']; n_cols varies, bytes=4096"
    assert evidence_text({"regs": 255, "spill_bytes": None}) == "regs=255"
