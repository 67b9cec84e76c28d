"""The compute-bound kernels (matmul, matmul + bias + GELU, flash attention) against PyTorch.

Checks run the check job as the worker runs it on this CPU-only machine, under
TRITON_INTERPRET=1 (two child processes share the kernels): fp32 and fp16 must pass every shape
in both layouts, bf16 is reported as skipped. The TMA paths only run on Hopper, so their
kernels are also driven directly in the interpreter (which takes tensor descriptors from
Triton 3.4 on) to check tile walk and edges.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from conftest import ROOT, interpreter_checks

from workbench.runtime.errors import WorkbenchError

SPECS = ("matmul", "matmul_bias_gelu", "attention", "attention_causal")
DTYPES = ["float32", "float16", "bfloat16"]


@pytest.fixture(scope="module")
def results() -> dict[str, dict]:
    todo = [(ROOT / "kernels", name, {"dtypes": DTYPES}) for name in SPECS]
    return interpreter_checks(todo[0::2], todo[1::2])


@pytest.mark.parametrize("name", SPECS)
def test_check_passes_in_the_interpreter(results, name):
    result = results[name]
    cases = result["cases"]
    ran = [c for c in cases if c["dtype"] in ("float32", "float16")]
    assert ran and all(c["status"] == "passed" for c in ran), [
        (c["dtype"], c["shape"], c["layout"], c["reason"]) for c in ran if c["status"] != "passed"
    ]
    assert {c["layout"] for c in ran} == {"contiguous", "strided"}
    assert {c["shape_set"] for c in ran} == {"regular", "irregular"}
    assert all(c["unwritten"] == 0 and c["rel_l2"] < 1e-3 for c in ran)
    assert all(c["deterministic"] for c in ran if c["layout"] == "contiguous")
    bf16 = [c for c in cases if c["dtype"] == "bfloat16"]
    assert bf16 and all(c["status"] == "skipped" and "interpreter" in c["reason"] for c in bf16)
    assert result["correct"] is True


# The GPU-only TMA kernels, launched directly under the interpreter with small explicit tiles:
# a persistent grid smaller than the tile count, edges that are not tile multiples, the split
# epilogue, and both attention masks.
_TMA_SCRIPT = textwrap.dedent(
    """
    import math, sys, torch, triton
    from triton.tools.tensor_descriptor import TensorDescriptor as TD
    from kernels import attention as at, matmul as mm
    from workbench.runtime import compat

    compat.fix_interpreter()  # what the worker does (Triton < 3.7, numpy >= 2.4)
    F = torch.nn.functional
    worst = 0.0
    # strides of 16 elements: Triton 3.4's interpreter checks them in elements, not bytes
    for (M, N, K), split in (((100, 80, 48), 1), ((160, 96, 48), 2)):
        a, b = mm._matmul_inputs((M, N, K), torch.float16, "cpu")
        bias = torch.randn(N, dtype=torch.float16)
        c = torch.full((M, N), float("nan"), dtype=torch.float16)
        bm, bn, bk = 32, 32, 32  # partial M, N and K tiles
        descs = (TD(a, [M, K], [K, 1], [bm, bk]), TD(b, [K, N], [N, 1], [bk, bn]),
                 TD(c, [M, N], [N, 1], [bm, bn // split]))
        mm._matmul_tma_kernel.fn[(5,)](*descs, bias, M, N, K, 1, HAS_BIAS=True, GELU=True,
            FAST_TANH=False, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=2, EPILOGUE_SPLIT=split,
            FLATTEN=True)
        ref = F.gelu(a.double() @ b.double() + bias.double(), approximate="tanh")
        worst = max(worst, float((c.double() - ref).norm() / ref.norm()))
    for causal in (False, True):
        B, H, S, D = 2, 2, 128, 64
        q, k, v, _ = at._inputs(causal)((B, H, S, D), torch.float16, "cpu")
        o = torch.full_like(q, float("nan"))
        bm, bn = 64, 32
        descs = [TD(t, [B * H * S, D], [D, 1], [bm if i in (0, 3) else bn, D])
                 for i, t in enumerate((q, k, v, o))]
        at._attn_fwd_tma.fn[(S // bm, B * H)](*descs, at.LOG2E / math.sqrt(D), S, HEAD_DIM=D,
            CAUSAL=causal, BLOCK_M=bm, BLOCK_N=bn)
        ref = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=causal)
        worst = max(worst, float((o.double() - ref).norm() / ref.norm()))
    print(worst)
    """
)


def test_tma_kernels_walk_every_tile_in_the_interpreter():
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", _TMA_SCRIPT],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert float(proc.stdout.split()[-1]) < 1e-3  # NaN (an unwritten tile) fails too


def test_bad_operands_name_the_cause():
    import torch

    from kernels.attention import attention
    from kernels.matmul import matmul, matmul_bias_gelu

    a, b = torch.randn(4, 8), torch.randn(6, 5)
    with pytest.raises(WorkbenchError, match="inner dimensions") as err:
        matmul(a, b)
    assert err.value.problem.kind == "bad-input"
    with pytest.raises(WorkbenchError, match="one bias value per output column"):
        matmul_bias_gelu(a, torch.randn(8, 5), torch.randn(4))
    with pytest.raises(WorkbenchError, match="float16, bfloat16, float32"):
        matmul(a, torch.randn(8, 5, dtype=torch.float64))
    q = torch.randn(1, 2, 16, 48)
    with pytest.raises(WorkbenchError, match="power of two"):
        attention(q, q, q, causal=False)


def test_attention_tiles_fit_the_dtype():
    # fp32 at head_dim 128 needs its own small tiles: the 16-bit ones overflow shared memory.
    import torch

    from kernels import attention as at

    configs = [at._cfg(*s) for s in at._SHAPES + at._FP32_WIDE]

    def pruned(dtype: torch.dtype, d: int, s: int = 4096) -> set[tuple[int, ...]]:
        args = {"q_ptr": torch.empty(1, dtype=dtype), "S": s}
        return {at._shape(c) for c in at._prune(configs, args, HEAD_DIM=d, CAUSAL=False)}

    assert pruned(torch.float32, 128) == set(at._FP32_WIDE)
    assert pruned(torch.float16, 128).isdisjoint(at._FP32_WIDE)
    assert pruned(torch.float32, 64) == set(at._SHAPES)
    assert pruned(torch.float32, 128, s=128) == {at._FP32_WIDE[-1]}
