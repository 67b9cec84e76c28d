"""The `serial-softmax` row: on sm_90, a loop with a tl.dot, an exp, then another tl.dot (the
attention's) whose warps are not specialized is told to overlap them in Gluon; one matrix
multiply a loop, another arch, or a kernel already partitioned is not. Real compiles, here."""

from __future__ import annotations

import pytest
import torch
from triton.tools.tensor_descriptor import TensorDescriptor

from kernels import attention as A
from kernels import matmul as M
from workbench.diagnosis import static
from workbench.ir.linemap import SourceMap
from workbench.runtime import compat


def _attention_ttir(arch: int) -> tuple[str, SourceMap]:
    t = torch.empty((4 * 4096, 64), dtype=torch.float16)
    descs = [TensorDescriptor(t, [4 * 4096, 64], [64, 1], [r, 64]) for r in (128, 64, 64, 128)]
    meta = {"HEAD_DIM": 64, "CAUSAL": True, "BLOCK_M": 128, "BLOCK_N": 64}
    meta |= {"num_warps": 8, "num_stages": 3}
    ttir = compat.cross_compile(A._attn_fwd_tma.fn, arch, (*descs, 0.18, 4096), meta).asm["ttir"]
    return ttir, SourceMap.build({"ttir": ttir})


def test_the_tl_attention_on_hopper_is_told_to_specialize_warps_in_gluon():
    ttir, smap = _attention_ttir(90)
    found = static.serial_softmax_finding(ttir, smap.stages["ttir"], "128x64", 90)
    assert found is not None and found.id == "serial-softmax" and found.severity == "low"
    assert found.file is not None and found.file.endswith("kernels/attention.py")
    source = open(found.file).read().splitlines()[found.line - 1]
    assert "tl.dot" in source  # the second product, after the softmax
    assert "gl.warp_specialize" in found.fix and f"line {found.line}" in found.fix
    # sm_90 alone: the same loop compiled elsewhere has another remedy (or none here)
    assert static.serial_softmax_finding(ttir, smap.stages["ttir"], "128x64", 80) is None


def test_a_matmul_with_an_exp_in_its_epilogue_is_not_a_softmax_between_two():
    """One tl.dot a loop, its GELU's exp2 after it (matmul_bias_gelu): nothing to overlap."""
    a = torch.empty((256, 256), dtype=torch.float16)
    bias = torch.empty(256, dtype=torch.float16)
    launch = (a, a, a, bias, 256, 256, 256, *a.stride(), *a.stride(), *a.stride(), 1)
    meta = {"HAS_BIAS": True, "GELU": True, "FAST_TANH": False}
    meta |= {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 8}
    ttir = compat.cross_compile(M._matmul_kernel, 90, launch, meta).asm["ttir"]
    smap = SourceMap.build({"ttir": ttir})
    assert "tt.dot" in ttir and "math.exp2" in ttir
    assert static.serial_softmax_finding(ttir, smap.stages["ttir"], "m", 90) is None


@pytest.mark.skipif(not compat.gluon_hopper_ws(), reason="no Gluon warp specialization")
def test_the_gluon_kernel_whose_warps_are_specialized_is_not_told_again():
    from kernels import _attention_ws as ws

    q = torch.empty(1, 1, 512, 64, dtype=torch.float16)
    args, options, _ = ws.launch_args(q, q, q, q, False)
    ttgir = compat.cross_compile(ws.attn_fwd_ws, 90, args, options).asm["ttgir"]
    smap = SourceMap.build({"ttgir": ttgir})
    assert static.serial_softmax_finding(ttgir, smap.stages["ttgir"], "ws", 90) is None
