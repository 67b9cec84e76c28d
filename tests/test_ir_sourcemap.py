"""Source-line maps parsed from real IR (compiled from tests/fixtures/ir_kernels/ir_small.py by
Triton 3.9 for sm_90 and Triton 3.4 for sm_80), and IR diffs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import FIXTURES

from workbench.ir.diff import diff_variants, normalize, resource_changes, stage_diff
from workbench.ir.linemap import (
    STAGES,
    SourceMap,
    fold,
    is_library,
    map_mlir,
    map_ptx,
    map_sass,
)
from workbench.ir.result import IrVariant

pytestmark = pytest.mark.versions  # CI runs these under every Triton release

KERNEL = "ir_small.py"
# Lines of _row_softmax in the fixture module (checked against the file below).
LOAD, MAX, EXP, SUM, STORE = 15, 16, 17, 18, 19


def texts(version: str) -> dict[str, str]:
    return {s: (FIXTURES / f"ir_softmax_{version}.{s}").read_text() for s in STAGES}


def kernel_file(smap: SourceMap) -> str:
    (file,) = smap.files()
    return file


def test_fixture_lines_are_the_kernel_lines():
    source = (FIXTURES / "ir_kernels" / KERNEL).read_text().splitlines()
    assert "tl.max(" in source[MAX - 1] and "tl.sum(" in source[SUM - 1]
    assert "tl.load(" in source[LOAD - 1] and "tl.store(" in source[STORE - 1]


@pytest.mark.parametrize("version", ["39", "34"])
def test_every_stage_maps_every_kernel_line(version):
    smap = SourceMap.build(texts(version))
    file = kernel_file(smap)
    assert file.endswith(KERNEL)  # inlined tl.max/tl.sum never show up as standard.py keys
    for stage, m in smap.stages.items():
        lines = {line for f, line in m.lines}
        assert {LOAD, EXP, STORE} <= lines, (stage, lines)
        # tl.max and tl.sum are inlined from triton/language: folded back onto their callers.
        assert {MAX, SUM} <= lines, (stage, lines)


@pytest.mark.parametrize("version", ["39", "34"])
def test_trail_shows_each_stage_op_of_the_reduction(version):
    smap = SourceMap.build(texts(version))
    trail = smap.trail(kernel_file(smap), MAX)
    assert any("tt.reduce" in t for _, t in trail["ttir"])
    assert any("maxnum" in t or "arith.max" in t for _, t in trail["ttgir"])
    assert any("shfl" in t for _, t in trail["ptx"])
    assert any("SHFL" in t for _, t in trail["sass"])
    assert not any("FADD" in t for _, t in trail["sass"])  # the sum is another line
    for stage, rows in trail.items():
        ir = texts(version)[stage].splitlines()
        assert rows and all(ir[n - 1] == t for n, t in rows)


def test_region_op_opening_line_gets_its_closing_loc():
    text = texts("39")["ttir"]
    m = map_mlir(text)
    opening = next(n for n, t in enumerate(text.splitlines(), 1) if '"tt.reduce"' in t)
    owners = [key for key, lines in m.lines.items() if opening in lines]
    assert [line for _, line in owners] == [MAX]


def test_mlir_loc_forms():
    text = "\n".join(
        [
            '#loc = loc("/k.py":3:0)',
            '#loc1 = loc("/k.py":7:12)',
            '#loc2 = loc("/site/triton/language/standard.py":290:36)',
            '#loc3 = loc("acc"(#loc1))',
            "#loc4 = loc(callsite(#loc2 at #loc3))",
            "module {",
            "  %0 = arith.addf %a, %b : f32 loc(#loc4)",
            "  %1 = arith.mulf %a, %b : f32 loc(fused[#loc1, #loc])",
            '  %2 = arith.subf %a, %b : f32 loc("/k.py":9:1)',
            "  %3 = arith.divf %a, %b : f32 loc(unknown)",
            "} loc(#loc)",
        ]
    )
    m = map_mlir(text)
    # The module opener takes the loc of its closing line.
    assert m.lines == {("/k.py", 7): [7, 8], ("/k.py", 9): [9], ("/k.py", 3): [6, 11]}


def test_fold_skips_library_frames():
    lib = "/x/site-packages/triton/language/standard.py"
    assert is_library(lib) and not is_library("/work/k.py")
    assert fold([(lib, 196, 12), (lib, 216, 16), ("/work/k.py", 10, 9)]) == ("/work/k.py", 10)
    assert fold([(lib, 196, 12)]) is None


def test_ptx_inlined_at_chain():
    ptx = "\n".join(
        [
            "\t.loc\t1 10 9",
            "\tmax.f32 %r1, %r2, %r3;",
            "\t.loc\t2 216 16, function_name $L__info_string0, inlined_at 1 10 9",
            "\t.loc\t2 196 12, function_name $L__info_string0, inlined_at 2 216 16",
            "\tshfl.sync.bfly.b32 %r4, %r1, 16, 31, -1;",
            "$L__BB0_1:",
            "\t.loc\t1 11 5",
            "\tst.global.b32 [%rd1], %r4;",
            '\t.file\t1 "/work/k.py"',
            '\t.file\t2 "/s/triton/language/standard.py"',
        ]
    )
    m = map_ptx(ptx)
    assert m.lines == {("/work/k.py", 10): [2, 5], ("/work/k.py", 11): [8]}
    assert m.callers[("/s/triton/language/standard.py", 196)] == {("/work/k.py", 10)}


def test_sass_without_inlining_records_uses_a_unique_ptx_caller():
    sass = "\n".join(
        [
            '\t//## File "/s/triton/language/standard.py", line 167',
            "        /*0010*/                   SHFL.BFLY PT, R3, R2, 0x10, 0x1f ;",
            '\t//## File "/s/triton/language/standard.py", line 260',
            "        /*0020*/                   FADD R3, R2, R3 ;",
        ]
    )
    lib = "/s/triton/language/standard.py"
    callers = {(lib, 167): {("/k.py", 16)}, (lib, 260): {("/k.py", 18), ("/k.py", 30)}}
    assert map_sass(sass, callers=callers).lines == {("/k.py", 16): [2]}


def test_stage_diff_ignores_locations():
    a = '%0 = arith.addf %a, %b : f32 loc(#loc4)\n#loc4 = loc("/k.py":3:1)\n'
    b = '%0 = arith.addf %a, %b : f32 loc(#loc9)\n#loc9 = loc("/k.py":4:1)\n'
    assert stage_diff("ttir", a, b).added == 0
    c = "%0 = arith.mulf %a, %b : f32 loc(#loc4)\n"
    d = stage_diff("ttir", a, c)
    assert (d.added, d.removed) == (1, 1) and "+%_ = arith.mulf" in d.text
    sass = "        /*0010*/                   FADD R3, R2, R3 ;  /* 0x000000030203 */"
    assert normalize("sass", sass) == ["FADD R_, R_, R_ ;"]


def test_stage_diff_ignores_renumbering():
    # One op inserted: every later value, register and label number moves by one.
    a = "%0 = arith.addf %x, %y\n%1 = arith.mulf %0, %0\ntt.store %p, %1\n"
    b = "%0 = arith.addf %x, %y\n%1 = math.exp %0\n%2 = arith.mulf %1, %1\ntt.store %p, %2\n"
    d = stage_diff("ttgir", a, b)
    assert (d.added, d.removed) == (1, 0) and "+%_ = math.exp %_" in d.text
    ptx_a = "add.f32 %f2, %f1, %f1;\n@%p1 bra $L__BB0_2;\n"
    ptx_b = "mov.f32 %f1, %f9;\nadd.f32 %f3, %f2, %f2;\n@%p2 bra $L__BB0_3;\n"
    assert stage_diff("ptx", ptx_a, ptx_b).added == 1
    sass = [
        "/*0100*/ @P1 BRA 0x1e0 ; /* 0x0 */",
        "/*0110*/ MOV R4, 0x3f800000 ;",
        "LDC R1, c[0x0][0x28] ;",
    ]
    assert normalize("sass", "\n".join(sass)) == [
        "@P_ BRA _ ;",
        "MOV R_, 0x3f800000 ;",  # constants and parameter offsets stay
        "LDC R_, c[0x0][0x28] ;",
    ]


def test_resource_changes():
    a = {"regs": 255, "spill_bytes": 512, "occupancy": {"percent": 12.5, "limiter": "registers"}}
    b = {"regs": 182, "spill_bytes": 0, "occupancy": {"percent": 12.5, "limiter": "registers"}}
    rows = {r[0]: r for r in resource_changes(a, b)}
    assert rows["regs"][3] == -73 and rows["spill_bytes"][3] == -512
    assert rows["limiter"] == ("limiter", "registers", "registers", None)


def _variant(version: str, stages: tuple[str, ...], regs: int) -> IrVariant:
    """A variant whose artifacts are the fixture's real IR of one Triton version."""
    return IrVariant(
        label=f"triton {version}",
        function="_row_softmax",
        derived=False,
        file=str(FIXTURES / "ir_kernels" / KERNEL),
        def_line=10,
        values={},
        artifacts={s: str(FIXTURES / f"ir_softmax_{version}.{s}") for s in stages},
        line_counts={},
        sourcemap={},
        resources={"regs": regs, "spill_bytes": 0},
        device=None,
        cross_check=None,
        timings={},
        error=None,
    )


def test_variants_diffed_stage_by_stage_from_their_artifacts():
    a = _variant("34", ("ttir", "ptx", "sass"), regs=40)
    b = _variant("39", ("ttir", "ptx"), regs=32)
    diff = diff_variants("row_softmax", a, "row_softmax", b, STAGES)
    assert [d.stage for d in diff.stages] == ["ttir", "ptx"]  # sass: only a has it
    ptx = stage_diff("ptx", *(Path(v.artifacts["ptx"]).read_text() for v in (a, b)))
    assert diff.stages[1].added == ptx.added > 0
    out = diff.to_dict(text_stage="ptx")
    assert out["a"] == {"kernel": "row_softmax", "label": "triton 34"}
    assert out["resources"][0] == {"field": "regs", "a": 40, "b": 32, "delta": -8}
    assert "text" in out["stages"][1] and "text" not in out["stages"][0]


def test_gpu_path_maps_every_stage():
    """`ir pitfall_spill --json` on an H200 (Triton 3.6): compiled through warmup, loaded. It was
    recorded when pitfall_spill.py had a matmul body of its own, with its dot on line 47 (the
    pitfall now launches the library matmul's body)."""
    result = json.loads((FIXTURES / "ir_gpu_pitfall_spill.json").read_text())["result"]
    assert result["mode"] == "gpu" and result["arch"] == "sm_90"
    (variant,) = result["variants"]
    assert variant["device"]["n_spills"] > 0 and variant["device"]["spills_match"]
    dot = 47
    for stage in STAGES:
        assert variant["line_counts"][stage] > 0
        assert str(dot) in variant["sourcemap"][stage][variant["file"]], stage
