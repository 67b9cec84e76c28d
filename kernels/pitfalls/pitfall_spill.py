"""Register spills: a 256x128 fp32 accumulator held by too few warps, beside its fixed twin.

With 4 warps each thread owns 256x128/128 = 256 accumulator values, more than the 255
registers a thread may have, so ptxas moves part of the tile to local memory (spills) on every
arch. The twin runs the same tile with 8 warps: 128 values per thread, no spills.
"""

import torch
import triton
import triton.language as tl

from workbench.catalog.spec import MATMUL_TOLERANCES, KernelSpec

TILE = {"BLOCK_M": 256, "BLOCK_N": 128, "BLOCK_K": 32}


@triton.jit
def _matmul_kernel(
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
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        kk = k * BLOCK_K + rk
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_ptrs, mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


def _matmul(a: torch.Tensor, b: torch.Tensor, num_warps: int) -> torch.Tensor:
    (M, K), (_, N) = a.shape, b.shape
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    grid = (triton.cdiv(M, TILE["BLOCK_M"]), triton.cdiv(N, TILE["BLOCK_N"]))
    _matmul_kernel[grid](
        a,
        b,
        c,
        M,
        N,
        K,
        a.stride(0),
        a.stride(1),
        b.stride(0),
        b.stride(1),
        c.stride(0),
        c.stride(1),
        **TILE,
        num_warps=num_warps,
        num_stages=3,
    )
    return c


def matmul_spilling(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return _matmul(a, b, num_warps=4)


def matmul_fixed(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return _matmul(a, b, num_warps=8)


def _inputs(shape, dtype, device):
    m, n, k = shape
    a = torch.randn((m, k), dtype=dtype, device=device)
    b = torch.randn((k, n), dtype=dtype, device=device)
    return a, b


def _flops(shape) -> float:
    m, n, k = shape
    return 2.0 * m * n * k


def _bytes(shape, esize: int) -> float:
    m, n, k = shape
    return float(m * k + k * n + m * n) * esize


SPILL = KernelSpec(
    name="pitfall_spill",
    kernel_fn=matmul_spilling,
    reference_fn=torch.matmul,
    make_inputs=_inputs,
    shapes={
        "regular": [(256, 128, 64)],
        "irregular": [(300, 200, 100)],
        "bench": [(4096, 4096, 4096)],
    },
    dtypes=("float16",),
    tolerances=MATMUL_TOLERANCES,
    flops=_flops,
    bytes_moved=_bytes,
    jit=(_matmul_kernel,),
    description="matmul, 256x128 fp32 tile on 4 warps: spills registers",
)

FIXED = KernelSpec(
    name="pitfall_spill_fixed",
    kernel_fn=matmul_fixed,
    reference_fn=torch.matmul,
    make_inputs=_inputs,
    shapes={
        "regular": [(256, 128, 64)],
        "irregular": [(300, 200, 100)],
        "bench": [(4096, 4096, 4096)],
    },
    dtypes=("float16",),
    tolerances=MATMUL_TOLERANCES,
    flops=_flops,
    bytes_moved=_bytes,
    jit=(_matmul_kernel,),
    description="the same tile on 8 warps: no spills",
)
