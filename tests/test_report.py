"""Reports from a store of real results (H100 bench and sweep outputs, an H100 ncu report, the
H100 ir result of the spilling kernel, checks run here in the interpreter) rendered to Markdown
and HTML: every part present or saying how to fill it, plots that exist where pages point,
escaping, safe file names, and a corrupt stored result reported while the rest is written."""

from __future__ import annotations

import html
import json
import re
import sqlite3
from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT
from test_history import H100, PARTIAL, T0, bench_result, put

from workbench.cli.main import main
from workbench.diagnosis import diagnose_profile
from workbench.diagnosis.facts import Diagnosis
from workbench.diagnosis.finding import Finding
from workbench.profilers import saved, session
from workbench.report.render import markdown
from workbench.report.write import safe_names, write
from workbench.run.store import Store

HOUR = 3600.0
EVIL = '<script>alert("x")</script>'
"""A kernel name that is markup in both formats, and not a file name."""
REPORT = FIXTURES / "report"
SPILL = str(ROOT / "kernels" / "pitfalls" / "pitfall_spill.py")
MATMUL16 = str(ROOT / "benchmarks" / "sweep_matmul16.py")
"""Outside the kernel folder: the commands a page suggests for it need --path."""


def _outcome(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


def _diagnosis() -> Diagnosis:
    """A diagnosis as the H100 gives one for the spilling matmul (the spill ncu measured, the
    launched config's neighbours as the alternatives a trial would time, an info finding), its
    texts holding markup characters. `report/diagnose_cpu_pitfall_spill.json` is a real one,
    made here from the H100's ncu report."""
    spill = Finding(
        id="register-spill",
        title="registers spill: 290,048 spill instructions moved 70.7 MB & more <local> traffic",
        severity="high",
        evidence={
            "registers_per_thread": 255,
            "spill_instructions": 290048,
            "config": "BLOCK_M=256,BLOCK_N=128,BLOCK_K=32,num_warps=4,num_stages=3",
            "alternatives": [
                {"label": "BLOCK_M=128,BLOCK_N=128,BLOCK_K=32", "regs": 168, "spill_bytes": 0},
                {"label": "BLOCK_M=256,BLOCK_N=128,BLOCK_K=32,num_warps=8", "regs": 128},
            ],
        },
        fix="cut live registers: a smaller tile, or more warps (num_warps) for a <256> tile",
        file=SPILL,
        line=47,
        gain=0.81,
        fix_id="config",
    )
    info = Finding("roofline", "compute-bound at 0.15x of the matmul rate", "info", {})
    return Diagnosis(
        EVIL,
        [spill, info],
        roofline={"bound": "compute", "ratio": 0.15, "text": "compute-bound at 0.15x of 744 TF"},
        routing="keep the Triton kernel once it stops spilling: the library matmul is 5x faster",
        agreement=[{"ours": "register-spill", "ncu": "RegisterSpilling", "verdict": "agree"}],
        missing={"nsys": "not asked for"},
    )


def _trial() -> dict:
    """`diagnose pitfall_spill --try config` as `Trial.to_dict()` stores it."""
    before = {"label": "BLOCK_M=256,BLOCK_N=128,BLOCK_K=32", "ms": 1.371, "correct": True}
    after = {"label": "BLOCK_M=128,BLOCK_N=128,BLOCK_K=32", "ms": 0.259, "correct": True}
    return {
        "kernel": "pitfall_spill",
        "finding": "register-spill",
        "fix_id": "config",
        "shape": [4096, 4096, 4096],
        "dtype": "float16",
        "before": {**before, "values": None},
        "after": {**after, "values": None},
        "candidates": [{**after, "status": "ok"}],
        "gpu": "NVIDIA H100 80GB HBM3",
        "speedup": 1.371 / 0.259,
        "kept": after,
    }


def _fill(reports: Path) -> None:
    """Every kind of stored result the report reads, for seven kernels (and one corrupt row)."""
    check_ok = _outcome("report/check_cpu_vector_add.json")["result"]
    put("check", "vector_add", check_ok, T0)
    put("check", "pitfall_tail", _outcome("report/check_cpu_pitfall_tail.json")["result"], T0)
    put("check", EVIL, {**check_ok, "kernel": EVIL}, T0)
    for i, scale in enumerate([1.0, 1.004, 0.998]):  # a trend of three runs
        put("bench", "vector_add", bench_result(H100, "vector_add", scale), T0 + i * HOUR)
    softmax = bench_result(PARTIAL, "softmax")
    timed = softmax["records"][0]  # as a bench that times a copy of the case's bytes keeps it
    timed |= {"size_copy_ms": timed["ms"] * 0.9, "vs_copy": 0.9}
    put("bench", "softmax", softmax, T0)
    put("bench", "softmax", {"kernel": "softmax", "records": []}, T0 + HOUR)  # no ceilings
    put("bench", "softmax_online", bench_result(PARTIAL, "softmax_online"), T0)
    put("bench", "softmax_online", None, T0 + HOUR, status="timeout", problem={"cause": "hung"})

    sweep = _outcome("sweep_h100_matmul16.json")["runs"][0]
    folder = reports / "runs" / sweep["run_id"]
    folder.mkdir(parents=True)
    put("sweep", "matmul16", sweep["result"], T0, artifacts=str(folder), file=MATMUL16)

    put("ir", "pitfall_spill", _outcome("ir_gpu_resources_pitfall_spill.json")["result"], T0)
    summary = diagnose_profile(session.import_file(str(FIXTURES / "ncu_spill.ncu-rep")))
    saved.record_import(summary, str(FIXTURES / "ncu_spill.ncu-rep"), None)
    put("diagnose", EVIL, _diagnosis().to_dict(), T0 + HOUR)
    diagnosed = _outcome("report/diagnose_cpu_pitfall_spill.json")["result"]
    put("diagnose", "pitfall_spill", diagnosed, T0 + HOUR, file=SPILL)
    put("diagnose-try", "pitfall_spill", _trial(), T0 + 2 * HOUR, file=SPILL)

    broken = reports / "runs" / "broken-profile"  # an ncu summary without its metrics
    broken.mkdir(parents=True)
    (broken / "profile.json").write_text('{"tool": "ncu", "kernels": [{"launch": 0}]}')
    put("profile-import", "rms_norm", None, T0, artifacts=str(broken))

    put("check", "layer_norm", check_ok, T0)
    bad = put("bench", "layer_norm", bench_result(PARTIAL, "layer_norm"), T0)
    with sqlite3.connect(reports / "workbench.db") as db:  # a row damaged on disk
        db.execute("UPDATE runs SET result = ? WHERE id = ?", ('{"kernel": "layer_', bad))


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Store:
    reports = tmp_path_factory.mktemp("store") / "reports"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("WORKBENCH_REPORTS", str(reports))
        _fill(reports)
    return Store(reports)


@pytest.fixture(scope="module", params=["md", "html"])
def report(request, store, tmp_path_factory):
    out = tmp_path_factory.mktemp(f"report-{request.param}")
    return write([k for k in store.kernels()], out, request.param, store)


def _page(report, kernel: str) -> str:
    """The page as a reader sees it: Markdown's backslash escapes and both formats' entities
    undone (escaping itself is tested on the raw text)."""
    text = next(k for k in report.kernels if k.kernel == kernel).page.read_text()
    return html.unescape(re.sub(r"\\(.)", r"\1", text))


def _images(text: str) -> list[str]:
    return re.findall(r'!\[[^\]]*\]\(([^)]+)\)|<img src="([^"]+)"', text)


def test_every_part_is_shown_or_says_the_command_that_fills_it(report):
    page = _page(report, "vector_add")
    assert "vector_add on its given inputs: CORRECT (5 passed" in page
    assert "3,001 GB/s" in page.replace("3,000.8", "3,001")  # the run's own copy ceiling
    assert "1.063" in page and "roofline.png" in page and "trend.png" in page
    for action in ("sweep", "resources", "profile", "diagnose"):
        assert f"python -m workbench {action} vector_add" in page
    assert page.count("not run yet") == 4

    tail = _page(report, "pitfall_tail")
    assert "pitfall_tail on its given inputs: NOT CORRECT" in tail
    assert "952 of 3000 outputs not written" in tail
    assert "python -m workbench bench pitfall_tail" in tail  # bench and history


def test_bench_sweep_resources_profile_and_diagnosis_from_real_results(report):
    sweep = _page(report, "matmul16")
    assert "BLOCK_M=128,BLOCK_N=256,BLOCK_K=64,GROUP_M=8,num_warps=8,num_stages=4" in sweep
    assert "sweep.png" in sweep and "triton.Config(" in sweep
    assert "python -m workbench bench matmul16 --path benchmarks/sweep_matmul16.py" in sweep

    spill = _page(report, "pitfall_spill")
    assert "255" in spill and "registers" in spill  # the H100 ir result's resources
    assert "TheoreticalOccupancy" in spill  # ncu's rule, from the imported report
    assert "pitfall_spill.py:47" in spill  # the hot line and the diagnosis' finding
    assert "the grid (32 programs) leaves 100 of 132 SMs idle" in spill  # ranked first
    assert "latency-bound: no unit near its peak" in spill  # its roofline placement
    assert "num_warps=8" in spill and "UncoalescedSharedAccess" in spill  # alternatives, ncu
    assert "python -m workbench diagnose pitfall_spill --try register-spill" in spill
    assert "5.29x" in spill  # the trial's before and after

    evil = _page(report, EVIL)
    assert "keep the Triton kernel once it stops spilling" in evil
    assert "BLOCK_M=128,BLOCK_N=128,BLOCK_K=32" in evil  # the alternatives' table

    online = _page(report, "softmax_online")
    assert "ended timeout: hung" in online and "ERROR" in online


def _table(page: str, first: str) -> list[list[str]]:
    """The cells of a page's table whose head starts with `first`, head first (Markdown or
    HTML)."""
    if "<table" in page:
        rows = [
            [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", r)]
            for r in re.findall(r"<tr>(.*?)</tr>", page, re.S)
        ]
    else:
        rows = [
            [c.strip() for c in line.strip().strip("|").split("|")]
            for line in page.splitlines()
            if line.startswith("|") and not line.startswith("|--") and "---" not in line
        ]
    start = next(i for i, r in enumerate(rows) if r and r[0] == first)
    end = next((i for i in range(start + 1, len(rows)) if len(rows[i]) != len(rows[start])), None)
    return rows[start:end]


def test_the_bench_table_says_vs_copy_where_a_copy_was_timed(report):
    head, *rows = _table(_page(report, "softmax"), "shape")
    at = head.index("vs copy")
    assert head[at - 1] == "roofline" and len(rows) == 3
    assert [r[at] for r in rows] == ["0.90", "-", "-"]  # the others were stored before
    head, *rows = _table(_page(report, "vector_add"), "shape")
    assert rows and all(r[head.index("vs copy")] == "-" for r in rows)


def test_image_paths_are_relative_and_exist(report):
    for k in report.kernels:
        text = k.page.read_text()
        paths = [a or b for a, b in _images(text)]
        assert all(not p.startswith(("/", "http")) for p in paths)
        assert {(k.page.parent / p).resolve() for p in paths} == {p.resolve() for p in k.images}
        assert all(p.stat().st_size > 5000 for p in k.images)  # a drawn PNG
    made = {p.name for k in report.kernels for p in k.images}
    assert made == {"roofline.png", "trend.png", "sweep.png"}
    index = report.index.read_text()
    for k in report.kernels:
        href = f"kernels/{k.page.name}"
        assert href in index and (report.out / href).is_file()


def test_names_and_texts_are_escaped_and_file_names_safe(report):
    evil = next(k for k in report.kernels if k.kernel == EVIL)
    assert re.fullmatch(r"[A-Za-z0-9_.-]+", evil.page.name)
    for text in (evil.page.read_text(), report.index.read_text()):
        if report.format == "md":  # a code span shows its text literally: markup is inert there
            text = re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", text)
        assert "<script" not in text and "&lt;script&gt;" in text
    if report.format == "html":  # only the renderer's own tags, every one closed
        for k in report.kernels:
            assert _tags(k.page.read_text()) <= HTML_TAGS, k.kernel
    page = evil.page.read_text()  # its diagnosis' texts hold & < >
    assert "<local>" not in page and "&lt;local&gt;" in page and "&amp; more" in page
    if report.format == "html":
        assert "&lt;256&gt;" in page and "alert(&quot;x&quot;)" in report.index.read_text()


HTML_TAGS = set("html head meta title style body h1 h2 h3 p strong code pre a img".split())
HTML_TAGS |= set("table thead tbody tr th td".split())


def _tags(text: str) -> set[str]:
    """The tags of an HTML page; unbalanced ones fail."""

    class Tags(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.seen: set[str] = set()
            self.open: list[str] = []

        def handle_starttag(self, tag: str, attrs: list) -> None:
            self.seen.add(tag)
            if tag not in ("meta", "img"):
                self.open.append(tag)

        def handle_endtag(self, tag: str) -> None:
            assert self.open.pop() == tag

    parser = Tags()
    parser.feed(text)
    assert parser.open == []
    return parser.seen


def test_a_corrupt_stored_result_is_reported_and_the_rest_is_written(report):
    with_problems = {k.kernel for k in report.kernels if k.problems}
    assert with_problems == {"softmax", "layer_norm", "rms_norm"}
    softmax = _page(report, "softmax")
    [problem] = next(k for k in report.kernels if k.kernel == "softmax").problems
    assert problem.kind == "corrupt-result" and "KeyError" in problem.cause
    assert "python -m workbench bench softmax" in problem.remedy
    assert "cannot read" in softmax and "0.1828" in softmax  # the older result still shown

    layer = next(k for k in report.kernels if k.kernel == "layer_norm")
    assert [p.kind for p in layer.problems] == ["corrupt-store-row"]
    text = layer.page.read_text()
    assert "cannot be decoded" in text and "CORRECT" in text  # the check part still written

    rms = next(k for k in report.kernels if k.kernel == "rms_norm")
    [problem] = rms.problems
    assert "profile-import run" in problem.cause and "NcuLaunch" in problem.cause
    assert "python -m workbench profile rms_norm" in problem.remedy
    assert "python -m workbench bench rms_norm" in rms.missing  # the parts not run yet


def test_safe_names_never_collide():
    names = ["a/b", "a_b", "Foo", "foo", "..", EVIL, "x" * 300]
    stems = safe_names(names)
    assert stems["a_b"] == "a_b" and stems["Foo"] == "Foo"
    assert len({s.casefold() for s in stems.values()}) == len(names)
    assert all(re.fullmatch(r"[A-Za-z0-9_.-]+", s) and len(s) < 80 for s in stems.values())
    assert not any(s.startswith(".") for s in stems.values())


def test_markdown_keeps_markup_characters_literal():
    from workbench.report.doc import Code, Page, para, table

    page = Page("a|b", [para("*bold* _x_ [l](u) <b>"), table(("c",), [(Code("x | y"),)])])
    text = markdown(page)
    assert r"\*bold\* \_x\_ \[l\](u) &lt;b&gt;" in text
    assert r"`x \| y`" in text and r"# a\|b" in text


def test_report_command_writes_the_store_and_refuses_an_unknown_kernel(tmp_path, capsys):
    put("check", "vector_add", _outcome("report/check_cpu_vector_add.json")["result"], T0)
    put("bench", "softmax", {"kernel": "softmax", "records": []}, T0)  # unreadable
    assert main(["report", "--all", "--format", "html", "--out", str(tmp_path / "r")]) == 0
    out, err = capsys.readouterr()
    index = tmp_path / "r" / "index.html"
    assert index.is_file() and out.splitlines()[-1] == str(index)
    assert "unreadable (softmax)" in err and "KeyError: 'device'" in err
    assert main(["report", "vector_add", "--json", "--out", str(tmp_path / "one")]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["index"] is None and [k["kernel"] for k in data["kernels"]] == ["vector_add"]
    assert "python -m workbench bench vector_add" in data["kernels"][0]["missing"]
    # a kernel not run yet, outside the kernel folder: its commands carry its --path
    assert main(["report", "matmul16", "--path", MATMUL16, "--json", "--out", str(tmp_path)]) == 0
    [page] = json.loads(capsys.readouterr().out)["kernels"]
    assert len(page["missing"]) == 7
    assert all("--path" in c and c.endswith("sweep_matmul16.py") for c in page["missing"])
    assert main(["report", "vector_ad"]) == 2
    assert "vector_add" in capsys.readouterr().err  # the near name
    assert main(["report", "vector_add", "--all"]) == 2
