"""Accesses out of bounds and of unwritten memory, watched by the check on CPU.

The pitfall kernels of kernels/pitfalls/ (an off-by-one mask, a store masked with the input's
size, a shifted load masked for the unshifted one, an accumulator from torch.empty) and their
twins run through the check job as the worker runs it, in Triton's interpreter: guard regions
around every tensor and the interpreter's bounds each see the planted access, at its line; the
twins and every library kernel, on their smallest cases, show none. The diagnosis ranks the
access first with its line and fix. Guard regions themselves are checked on hand-made tensors.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
import triton
import triton.language as tl
from conftest import ROOT, cli, cpu_env, interpreter_checks

from workbench.catalog.discovery import discover
from workbench.check import bounds, guards
from workbench.check.result import CaseResult, CheckReport
from workbench.diagnosis import Facts, diagnose
from workbench.runtime import compat, tensors

PITFALLS = ROOT / "kernels" / "pitfalls"
PLANTED = {
    "pitfall_off_by_one": ("write", "read"),
    "pitfall_oob_write": ("write",),
    "pitfall_oob_read": ("read",),
    "pitfall_uninit": ("uninitialised-read",),
}
FIRST = {
    "pitfall_off_by_one": ("out-of-bounds-read", "out-of-bounds-write"),
    "pitfall_oob_write": ("out-of-bounds-write",),
    "pitfall_oob_read": ("out-of-bounds-read",),
    "pitfall_uninit": ("uninitialised-read",),
}
GPU_ONLY = ("pitfall_race", "pitfall_race_fixed", "pitfall_bf16_acc", "pitfall_bf16_acc_fixed")
"""Inline PTX and bf16 only: the interpreter runs neither."""


def line_of(file: Path, function: str, text: str) -> int:
    """The line of `text` inside `function`'s body."""
    lines = file.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"def {function}("))
    return next(i for i in range(start, len(lines)) if text in lines[i]) + 1


@pytest.fixture(scope="module")
def reports() -> dict[str, CheckReport]:
    names = sorted(PLANTED) + [f"{n}_fixed" for n in sorted(PLANTED)]
    todo = [(PITFALLS, n, {"dtypes": ["float32"]}) for n in names]
    return {
        n: CheckReport.from_dict(d) for n, d in interpreter_checks(todo[0::2], todo[1::2]).items()
    }


@pytest.fixture(scope="module")
def library() -> dict[str, CheckReport]:
    """Every kernel of kernels/ the interpreter runs, on its smallest case per shape set."""
    catalog = discover([str(ROOT / "kernels")])
    todo = []
    for k in catalog.kernels:
        if k.name in GPU_ONLY:
            continue
        dtypes = [d for d in k.dtypes or () if d != "bfloat16"][:1] or None
        todo.append((Path(k.file), k.name, {"dtypes": dtypes, "smallest": True}))
    found = interpreter_checks(todo[0::2], todo[1::2])
    return {n: CheckReport.from_dict(d) for n, d in found.items()}


def _records(report: CheckReport) -> list[dict]:
    return [r for c in report.cases for r in c.accesses]


# ---- the planted accesses ----------------------------------------------------------------------


def test_the_off_by_one_mask_is_seen_by_the_guards_and_the_interpreter_at_its_lines(reports):
    report = reports["pitfall_off_by_one"]
    file = PITFALLS / "pitfall_off_by_one.py"
    load = line_of(file, "_scale_le_kernel", "tl.load(")
    store = line_of(file, "_scale_le_kernel", "tl.store(")
    for c in report.cases:
        n = math.prod(c.shape)
        if n % 1024 == 0:  # no lane reaches offset n: nothing wrong
            assert c.status == "passed" and not c.accesses, (c.shape, c.accesses)
            continue
        assert c.status == "failed" and c.bad == 0  # every compared output right
        write = next(r for r in c.accesses if r["kind"] == "write")
        read = next(r for r in c.accesses if r["kind"] == "read")
        assert "output 0" in write["tensor"] and write["line"] == store
        assert (write["offset"], write["extent"], write["count"]) == (n, n, 1)
        assert {"guards", "interpreter"} <= set(write["source"].split(", "))
        assert read["line"] == load and read["offset"] == n and read["tensor"].startswith("x_ptr")
        if c.layout == "contiguous":  # the guarded input: its margin value reached y's margin
            assert {"guards", "interpreter"} <= set(read["source"].split(", "))
    summary = report.summary()
    assert summary["verdict"] == "writes out of bounds" and "<" in summary["fix"]
    assert not report.correct


def test_a_store_masked_with_the_input_size_writes_up_to_a_block_past_the_output(reports):
    report = reports["pitfall_oob_write"]
    store = line_of(PITFALLS / "pitfall_oob_write.py", "_pair_sum_input_mask_kernel", "tl.store(")
    for c in report.cases:
        n_out = math.prod(c.shape) // 2
        past = -n_out % 1024  # the rest of the last tile
        writes = [r for r in c.accesses if r["kind"] == "write"]
        if not past:
            assert c.status == "passed" and not writes
            continue
        (w,) = writes
        assert (w["count"], w["farthest"], w["line"]) == (past, past, store), w
        assert not [r for r in c.accesses if r["kind"] != "write"]


def test_a_shifted_load_reads_one_element_past_its_input_at_every_size(reports):
    report = reports["pitfall_oob_read"]
    shifted = line_of(PITFALLS / "pitfall_oob_read.py", "_diff_unshifted_mask_kernel", "+ 1,")
    for c in report.cases:
        (r,) = c.accesses
        n = math.prod(c.shape)
        assert (r["kind"], r["offset"], r["extent"], r["line"]) == ("read", n, n, shifted)
        if c.layout == "contiguous":  # the guard payload came out in y[n - 1]
            assert "guards" in r["source"] and "output 0" in r["via"]


def test_an_accumulator_from_torch_empty_is_read_before_anything_wrote_it(reports):
    report = reports["pitfall_uninit"]
    load = line_of(PITFALLS / "pitfall_uninit.py", "_axpy_kernel", "tl.load(y_ptr")
    for c in report.cases:
        (r,) = c.accesses
        assert r["kind"] == "uninitialised-read" and r["line"] == load
        assert r["count"] == math.prod(c.shape) and "output 0" in r["tensor"]
    assert report.summary()["verdict"] == "reads uninitialised memory"


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_each_twin_touches_nothing_outside_its_tensors(reports, name):
    report = reports[f"{name}_fixed"]
    assert report.correct and not _records(report), _records(report)


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_the_access_is_ranked_first_with_its_line_and_fix(reports, name):
    d = diagnose(Facts(kernel=name, check=reports[name]))
    first = d.findings[0]
    assert first.id in FIRST[name] and first.severity == "high", [f.id for f in d.findings]
    assert first.file and first.file.endswith(f"{name}.py") and first.line
    assert first.fix and "{" not in first.fix
    planted = {r["kind"] for r in _records(reports[name])}
    assert planted == set(PLANTED[name])


def test_the_library_and_every_twin_touch_nothing_outside_their_tensors(library):
    flawed = set(PLANTED)
    assert len(library) > 30
    for name, report in library.items():
        found = _records(report)
        if name in flawed:
            continue
        assert not found, (name, found)
        assert all(c.status != "error" for c in report.cases), name


def test_the_off_by_one_is_ranked_first_by_diagnose_with_the_mask_line(tmp_path):
    proc = cli(
        "diagnose", "pitfall_off_by_one", "--gpu-facts", "none", "--json",
        "--path", str(PITFALLS), env=cpu_env(tmp_path),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    findings = json.loads(proc.stdout)["diagnosis"]["findings"]
    first = findings[0]
    file = PITFALLS / "pitfall_off_by_one.py"
    mask = line_of(file, "_scale_le_kernel", "offs <= n")
    assert first["id"] in FIRST["pitfall_off_by_one"] and first["severity"] == "high"
    assert first["line"] == line_of(file, "_scale_le_kernel", "tl.load(")
    assert f"line {mask}" in first["fix"] and "< n, not <= n" in first["fix"]
    # the mask the TTIR shows and the failed irregular cases are folded into the access
    ids = [f["id"] for f in findings]
    assert "off-by-one-mask" not in ids and "no-boundary-mask" not in ids, ids
    folded = [g["id"] for f in findings for g in f["evidence"].get("folded", [])]
    assert "off-by-one-mask" in folded


# ---- guard regions themselves ------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32, torch.uint8])
def test_a_guarded_copy_keeps_values_strides_and_alignment(dtype):
    base = (torch.arange(24) % 7).to(dtype)
    strided = base.reshape(4, 6)[:, ::2]  # gaps inside the view are copied too
    g = tensors.guard(strided, "x", 3)
    assert torch.equal(g.view, strided) and g.view.stride() == strided.stride()
    assert g.view.data_ptr() % 256 == g.buffer.data_ptr() % 256  # as aligned as an allocation
    for side in ("before", "after"):
        assert bool((g.region(side) == g.margin_bits(side)).all())
    assert g.margin_bits("before") != g.margin_bits("after")
    assert g.margin_bits("after") != tensors.guard_bits(dtype, 4, "after")


def test_margins_tell_a_write_past_the_end_and_a_read_that_reached_an_output():
    x = torch.randn(100)
    watch = guards.Watch(lambda x: x, (x,), interpreter=False)
    (gx,) = watch.guards
    with watch.kernel():
        y = torch.empty(100)
    y.copy_(watch.args[0] * 2)
    y.view(-1)[:1].copy_(gx.buffer[gx.margin + 100 : gx.margin + 101])  # x[100] read into y[0]
    watch.guards[1].buffer[watch.guards[1].margin + 100 + 2] = 0.0  # y[102] written
    case = CaseResult("irregular", [100], "float32", "contiguous")
    watch.conclude(case, [y])
    kinds = {(r["kind"], r["tensor"], r.get("side")) for r in case.accesses}
    assert kinds == {("write", "output 0", "after"), ("read", "x", "after")}
    write = next(r for r in case.accesses if r["kind"] == "write")
    assert (write["offset"], write["farthest"], write["count"]) == (102, 3, 1)
    assert case.status == "failed" and "written past its end" in case.reason


def test_without_guards_nothing_is_copied_or_watched():
    x = torch.randn(10)
    watch = guards.Watch(lambda x: x, (x,), interpreter=True, enabled=False)
    assert watch.args[0] is x and not watch.guards
    with watch.kernel(poison=False):
        fresh = torch.empty(4)
    case = CaseResult("regular", [10], "float32", "contiguous")
    watch.conclude(case, [fresh])
    assert not case.accesses and case.status == "passed"


def _far(p, n):
    tl.atomic_cas(p + n, 0, 1)  # one past a view of 8 (inside its 16-element storage)
    tl.store(p + (1 << 28) + tl.arange(0, 4), 1)  # a gigabyte away: nobody's memory


def test_the_interpreter_records_atomics_and_masks_off_lanes_in_nobodys_memory():
    with compat.interpreter(True):
        far = triton.jit(_far)
    assert bounds.install()
    x = torch.zeros(16, dtype=torch.int32)
    with bounds.watching(lambda t: None) as found:
        far[(1,)](x[:8], 8)  # survives: the far lanes never reach memory
    cas, store = sorted(found, key=lambda r: r["line"])
    assert (cas["kind"], cas["offset"], cas["extent"], cas.get("masked_off")) == (
        "write",
        8,
        8,
        None,
    )
    assert store["count"] == 4 and store["masked_off"] == 4 and store["farthest"] > 1 << 27
    assert int(x[8]) == 1 and int(x.sum()) == 1
