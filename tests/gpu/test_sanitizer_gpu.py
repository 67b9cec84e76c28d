"""Accesses out of bounds, shared-memory races and uninitialised reads found on the GPU:
compute-sanitizer around the check (`check --sanitize TOOL`) at the kernel's lines, each twin
clean, within 5x the plain check's time; the guard regions in real launches, placed at their
store by the launch's TTIR; `diagnose` running memcheck when the check fails. Run on the GPU
host with `python -m pytest -m gpu tests/gpu/test_sanitizer_gpu.py`; skipped elsewhere (and
where compute-sanitizer is missing, which the skip says with where it looked).
"""

from __future__ import annotations

import json
import time

import pytest
from conftest import ROOT, cli

from workbench.check.result import CheckReport
from workbench.profilers import sanitizer
from workbench.runtime.errors import WorkbenchError

pytestmark = pytest.mark.gpu

PITFALLS = ROOT / "kernels" / "pitfalls"
PLANTED = {  # kernel -> (tool, kinds it must find, (jit function, text of the line))
    # memcheck stops the kernel at its first fault (the H200): the load one past the end
    "pitfall_off_by_one": ("memcheck", {"read"}, ("_scale_le_kernel", "tl.load(x_ptr")),
    "pitfall_oob_write": ("memcheck", {"write"}, ("_pair_sum_input_mask_kernel", "tl.store(")),
    "pitfall_oob_read": ("memcheck", {"read"}, ("_diff_unshifted_mask_kernel", "+ 1,")),
    "pitfall_uninit": ("initcheck", {"uninitialised-read"}, ("_axpy_kernel", "tl.load(y_ptr")),
    "pitfall_race": ("racecheck", {"race"}, ("_reverse_racy_kernel", "inline_asm_elementwise")),
}


@pytest.fixture(scope="module", autouse=True)
def _tool() -> None:
    try:
        sanitizer.find()
    except WorkbenchError as exc:
        pytest.skip(str(exc.problem))


def line_of(name: str, function: str, text: str) -> int:
    lines = (PITFALLS / f"{name.removesuffix('_fixed')}.py").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"def {function}("))
    return next(i for i in range(start, len(lines)) if text in lines[i]) + 1


def check(name: str, *args: str) -> tuple[CheckReport, float]:
    start = time.monotonic()
    proc = cli("check", name, "--path", str(PITFALLS), "--json", *args, timeout=900)
    seconds = time.monotonic() - start
    out = json.loads(proc.stdout)
    assert out["result"] is not None and out["result"]["mode"] == "gpu", proc.stderr[-3000:]
    return CheckReport.from_dict(out["result"]), seconds


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_the_sanitizer_finds_each_planted_access_at_its_line(name):
    tool, kinds, (function, text) = PLANTED[name]
    report, _ = check(name, "--sanitize", tool)
    found = report.sanitizer["accesses"]
    print(json.dumps(report.sanitizer, indent=1)[:4000])
    assert kinds <= {r["kind"] for r in found}, report.sanitizer
    lines = {r["line"] for r in found if r["kind"] in kinds}
    assert all(str(r.get("file", "")).endswith(f"{name}.py") for r in found), found
    assert lines == {line_of(name, function, text)}, found
    assert not report.correct and report.summary()["verdict"] != "correct"


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_each_twin_is_clean_under_the_same_tool(name):
    tool = PLANTED[name][0]
    report, _ = check(f"{name}_fixed", "--sanitize", tool)
    assert report.sanitizer["errors"] == 0 and report.sanitizer["accesses"] == [], report.sanitizer
    assert report.correct


def test_a_sanitized_check_takes_at_most_5x_the_plain_one():
    _, plain = check("pitfall_off_by_one_fixed")
    _, sanitized = check("pitfall_off_by_one_fixed", "--sanitize", "memcheck")
    print(f"plain check {plain:.1f} s, under memcheck {sanitized:.1f} s: {sanitized / plain:.2f}x")
    assert sanitized <= 5 * plain


@pytest.mark.parametrize("name", ["pitfall_off_by_one", "pitfall_oob_write"])
def test_guard_regions_in_real_launches_are_placed_at_the_store_by_the_ttir(name):
    report, _ = check(name, "--dtype", "float32")
    writes = [r for c in report.cases for r in c.accesses if r["kind"] == "write"]
    assert writes and all(r["source"] == "guards" for r in writes)
    store = line_of(name, PLANTED[name][2][0], "tl.store(")
    assert {r.get("line") for r in writes} == {store}, writes
    assert report.summary()["verdict"] == "writes out of bounds"


def test_diagnose_runs_the_asked_tool_and_ranks_the_race_first(tmp_path):
    proc = cli(
        "diagnose", "pitfall_race", "--sanitize", "racecheck", "--json",
        "--path", str(PITFALLS), timeout=900,
    )  # fmt: skip
    out = json.loads(proc.stdout)
    steps = {s["step"]: s["said"] for s in out["steps"]}
    assert steps["sanitize"].startswith("racecheck:"), steps
    first = out["diagnosis"]["findings"][0]
    assert (first["id"], first["severity"]) == ("smem-race", "high"), out["diagnosis"]["findings"]
    assert first["line"] == line_of("pitfall_race", "_reverse_racy_kernel", "inline_asm")
