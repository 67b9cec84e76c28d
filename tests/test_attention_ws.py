"""The attention's warp-specialized Gluon path (kernels/_attention_ws.py), cross-compiled for
sm_90 here: its partitions run on register budgets of their own, each consumer leaves a p v in
flight while it runs the next softmax, nothing spills; and `attention` takes that path only for
inputs it fits. Under every Triton the package supports: 3.4 and 3.5 fall back to the `tl`
kernels."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
import triton

from workbench.ir import disasm
from workbench.runtime import compat

pytestmark = pytest.mark.versions
gluon = pytest.mark.skipif(not compat.gluon_hopper_ws(), reason="no Gluon warp specialization")


def test_the_gluon_path_is_there_from_triton_3_6():
    version = tuple(int(x) for x in triton.__version__.split(".")[:2])
    assert compat.gluon_hopper_ws() == (version >= (3, 6))


@gluon
@pytest.mark.parametrize(
    ("d", "causal", "dtype", "consumers"),
    [(128, False, "bfloat16", 2), (64, True, "float16", 2), (64, True, "bfloat16", 3)],
)
def test_the_kernel_compiles_for_sm90_into_partitions_with_no_spill(
    tmp_path: Path, d: int, causal: bool, dtype: str, consumers: int
):
    from kernels import _attention_ws as ws

    t = torch.empty(2, 3, 512, d, dtype=getattr(torch, dtype))
    args, options, grid = ws.launch_args(t, t, t, t, causal, consumers=consumers)
    assert grid == (-(-512 // (consumers * ws.ROWS)), 6)  # 512 rows: 4 or 3 (overhanging) tiles
    assert args[-1] == (consumers == 3)  # RAGGED: only then do consumers sit blocks out
    kernel = compat.cross_compile(ws.attn_fwd_ws, 90, args, options)
    ptx = kernel.asm["ptx"]
    budgets = set(re.findall(r"setmaxnreg\.\w+\.sync\.aligned\.u32\s+(\d+)", ptx))
    assert {str(ws.REGISTERS[consumers][0]), "24"} <= budgets, budgets
    assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n\d+k16", ptx)
    # the scores' wait leaves the previous block's p v in flight: one group outstanding
    assert re.search(r"wgmma\.wait_group\.sync\.aligned 1;", ptx)
    cubin = tmp_path / "attn.cubin"
    cubin.write_bytes(kernel.asm["cubin"])
    used = disasm.kernel_resources(kernel, 90, str(cubin))
    # 4 + 4 (+ 4) + 1 warps: whole warpgroups, one more than the consumers
    assert used.local_bytes == 0 and used.num_warps == 4 * (consumers + 1)


@gluon
def test_the_kernel_takes_16_bit_inputs_whose_rows_fill_its_tiles():
    from kernels import _attention_ws as ws

    def fits(s: int, d: int, dtype: torch.dtype) -> bool:
        return ws.fits(torch.empty(1, 2, s, d, dtype=dtype))

    assert fits(256, 128, torch.float16) and fits(4096, 64, torch.bfloat16)
    assert not fits(256, 128, torch.float32)
    assert not fits(200, 128, torch.float16)  # a ragged tail: the tl kernels mask it
    assert not fits(256, 32, torch.float16)


def test_attention_on_a_cpu_tensor_never_takes_the_gluon_path():
    from kernels import attention as A

    t = torch.empty(1, 2, 256, 128, dtype=torch.float16)
    assert not A._ws_ok(t, t, t)


@gluon
def test_the_ir_job_reads_a_gluon_kernel_from_its_ttgir(tmp_path: Path):
    """A Gluon kernel enters the compiler at TTGIR (it has no TTIR): `ir` writes the stages it
    has and its findings read the TTGIR, where the partitions are."""
    from kernels import _attention_ws as ws
    from workbench.ir import job
    from workbench.ir.capture import Launch
    from workbench.runtime.outdir import OutDir

    t = torch.empty(1, 2, 512, 128, dtype=torch.float16)
    args, options, grid = ws.launch_args(t, t, t, t, True)
    variant = job._variants([Launch(ws.attn_fwd_ws, args, options, grid=grid)], 90)[0]
    out = OutDir(tmp_path, "--out")
    result, facts = job._build(variant, 90, False, out, "ir", ["ttgir", "ptx"], False)
    assert result["error"] is None, result["error"]
    assert {"ttgir", "ptx", "cubin"} <= set(result["artifacts"]) <= {"ttgir", "ptx", "cubin"}
    assert facts is not None and "ttg.warp_specialize" in facts.ttir
    assert result["resources"]["local_bytes"] == 0


@gluon
@pytest.mark.parametrize("space", ["own", "auto", "neighbours"])
def test_a_sweep_of_a_gluon_kernel_says_why_it_has_nothing_to_vary(space: str):
    from kernels import _attention_ws as ws
    from workbench.ir.capture import Launch
    from workbench.runtime.errors import WorkbenchError
    from workbench.sweep import job

    t = torch.empty(1, 2, 512, 128, dtype=torch.float16)
    args, options, grid = ws.launch_args(t, t, t, t, False)
    with pytest.raises(WorkbenchError) as raised:
        job._configs(space, None, Launch(ws.attn_fwd_ws, args, options, grid=grid))
    problem = raised.value.problem
    assert problem.kind == "gluon-kernel" and "attn_fwd_ws is a Gluon kernel" in problem.cause


@gluon
def test_the_diagnosis_reads_its_one_program_an_sm_as_its_design(tmp_path: Path):
    """One 512-thread program an SM (25 % occupancy) is what three consumer warpgroups on 160
    registers ask for: the compile's low-occupancy finding is info, which the profile's follows
    (on the H100 both read the kernel as no tile kernel, Gluon's MMAs not being tt.dot, and the
    profile said "high: fewer registers per thread"); no finding rises above info."""
    from kernels import _attention_ws as ws
    from workbench.diagnosis import diagnose_compile, static
    from workbench.ir import job
    from workbench.ir.capture import Launch
    from workbench.ir.facts import CompileFacts
    from workbench.runtime.outdir import OutDir

    t = torch.empty(1, 2, 512, 64, dtype=torch.bfloat16)
    args, options, grid = ws.launch_args(t, t, t, t, True)
    variant = job._variants([Launch(ws.attn_fwd_ws, args, options, grid=grid)], 90)[0]
    _, compiled = job._build(variant, 90, False, OutDir(tmp_path, "--out"), "ir", ["ttgir"], False)
    assert compiled is not None and static.tile_kernel(compiled.ttir)
    found = diagnose_compile(CompileFacts([compiled], [], [], [(1, 2, 512, 64)]))
    low = [f for f in found if f.id == "low-occupancy"]
    assert [(f.severity, f.evidence["percent"], f.evidence["uses_dot"]) for f in low] == [
        ("info", 25.0, True)
    ]
    assert not [f for f in found if f.severity != "info"]
