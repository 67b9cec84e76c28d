"""Accumulating in bf16: a matmul whose running sum is rounded to bf16 every K step, beside its
fixed twin.

Triton refuses a bf16 accumulator inside `tl.dot` (out_dtype=bfloat16 is an error), so the
flawed kernel keeps `acc = tl.zeros(..., dtype=tl.bfloat16)` and adds each step's product as
`acc += tl.dot(a, b).to(tl.bfloat16)`: each BLOCK_K slice is multiplied in fp32, but the running
sum is rounded to bf16's 8 bits of precision K / BLOCK_K times. Each rounding errs by up to half an
ulp of the sum, so the output's relative error grows like sqrt(K / BLOCK_K): on an H100 it was
0.44 % at K = 256, 0.99 % at 2048 and 1.9 % at 8192 (relative L2 against cuBLAS), where the
check allows 4x the reference's own error or 2 ulps (1.6 %), in that norm and in the worst
element. The check's shapes keep M and N and grow K to 32768, past the bound. In TTIR it is
the `scf.for` carrying a bf16 tensor, updated by `arith.truncf` of the f32 `tt.dot` and a bf16
`arith.addf`.

The twin is the library's pointer matmul (kernels/matmul.py) on the same tile: the fp32
accumulator is carried through the loop inside `tl.dot` and rounded once, at the store.
"""

import torch
import triton
import triton.language as tl

from kernels.matmul import PLAIN_MATMUL, _matmul_kernel, pointer_matmul
from workbench.catalog.spec import KernelSpec

TILE = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}
LAUNCH = {"num_warps": 4, "num_stages": 3}


@triton.jit
def _matmul_bf16_acc_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.bfloat16)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k) & (offs_n[None, :] < N), other=0.0)
        acc += tl.dot(a, b).to(tl.bfloat16)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def matmul_bf16_acc(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """matmul summing in bf16 (acc += dot.to(bf16)): error grows with K."""
    (M, K), N = a.shape, b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    grid = (triton.cdiv(M, TILE["BLOCK_M"]), triton.cdiv(N, TILE["BLOCK_N"]))
    _matmul_bf16_acc_kernel[grid](
        a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
        c.stride(0), c.stride(1), **TILE, **LAUNCH,
    )  # fmt: skip
    return c


def matmul_fp32_acc(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """the library's matmul on the same tile: fp32 accumulator, one cast at the store."""
    c = torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
    pointer_matmul(a, b, c, None, False, **TILE, GROUP_M=8, **LAUNCH)
    return c


# M and N fixed, K growing: the error grows with the number of bf16 roundings, K / BLOCK_K.
SHAPES = {
    "regular": [(128, 128, 256), (128, 128, 4096), (128, 128, 32768)],
    "irregular": [(100, 72, 30000)],
    "bench": [(4096, 4096, 4096)],
}
DTYPES = ("bfloat16",)
# The library's matmul inputs scale A by 1/sqrt(K): C is O(1) at every K.
_SAME = {**PLAIN_MATMUL, "shapes": SHAPES, "dtypes": DTYPES}

BF16_ACC = KernelSpec(
    name="pitfall_bf16_acc", kernel_fn=matmul_bf16_acc, jit=(_matmul_bf16_acc_kernel,), **_SAME
)

BF16_ACC_FIXED = KernelSpec(
    name="pitfall_bf16_acc_fixed", kernel_fn=matmul_fp32_acc, jit=(_matmul_kernel,), **_SAME
)
