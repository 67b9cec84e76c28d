"""The goal's workload: a grouped bf16 matmul with 16 @triton.autotune configs, 4096^3 by default;
a KernelSpec for matmul tolerances (`sweep --shape MxNxK` for another size), and `get_inputs` for
the plain autotune baseline (SWEEP_MNK=M,N,K for another size). Its tiles go in the library
matmul's grouped order (kernels/matmul.py)."""

import os

import torch
import triton
import triton.language as tl

from kernels.matmul import _tile_coords
from workbench.catalog.spec import MATMUL_TOLERANCES, KernelSpec

M, N, K = (int(v) for v in os.environ.get("SWEEP_MNK", "4096,4096,4096").split(","))


def _cfg(bm: int, bn: int, bk: int, warps: int, stages: int) -> triton.Config:
    kw = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8}
    return triton.Config(kw, num_warps=warps, num_stages=stages)


CONFIGS = [
    _cfg(bm, bn, bk, w, s)
    for bm, bn, bk, w in ((128, 256, 64, 8), (128, 128, 64, 8), (64, 256, 64, 4), (128, 128, 32, 4))
    for s in (3, 4)
] + [
    _cfg(bm, bn, bk, w, s)
    for bm, bn, bk, w in ((256, 128, 64, 8), (64, 128, 64, 4), (128, 64, 64, 4), (64, 64, 64, 4))
    for s in (3, 4)
]


@triton.autotune(configs=CONFIGS, key=["M", "N", "K"])
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_M: tl.constexpr):  # fmt: skip
    pid_m, pid_n = _tile_coords(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * sam + offs_k[None, :] * sak
    b_ptrs = b_ptr + offs_k[:, None] * sbk + offs_n[None, :] * sbn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * sak
        b_ptrs += BLOCK_K * sbk
    cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (cm[:, None] < M) & (cn[None, :] < N)
    tl.store(c_ptr + cm[:, None] * scm + cn[None, :] * scn, acc.to(c_ptr.dtype.element_ty), mask)


def kernel_fn(a, b):
    m, k = a.shape
    n = b.shape[1]
    c = torch.empty((m, n), device=a.device, dtype=a.dtype)

    def grid(meta):
        return (triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(n, meta["BLOCK_N"]),)

    matmul_kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        c.stride(0), c.stride(1))  # fmt: skip
    return c


def reference_fn(a, b):
    return a @ b


def operands(shape: tuple[int, ...], device: str) -> list[torch.Tensor]:
    m, n, k = shape
    a = (torch.randn(m, k, device=device) / k**0.5).to(torch.bfloat16)
    return [a, torch.randn(k, n, device=device, dtype=torch.bfloat16)]


def get_inputs():
    return operands((M, N, K), "cuda")


SPEC = KernelSpec(
    name="matmul16",
    kernel_fn=kernel_fn,
    reference_fn=reference_fn,
    make_inputs=lambda shape, dtype, device: tuple(operands(shape, device)),
    shapes={"bench": [(4096, 4096, 4096)]},
    dtypes=("bfloat16",),
    tolerances=MATMUL_TOLERANCES,
    jit=(matmul_kernel,),
)
