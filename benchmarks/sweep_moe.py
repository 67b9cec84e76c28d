"""A MoE-style grouped GEMM for the multi-GPU sweep benchmark (benchmarks/sweep_gpus.py): T
tokens, sorted by the expert a seeded router sends each to, times that expert's (K, N) weight;
one launch for all experts, each program finding its expert's row tile from the offsets. The
shape is the token count (a batch of 1 to 4096): the tile that wins moves with it. E,K,N default
to 8,2048,2048 (MOE_EKN=E,K,N to change them)."""

import os

import torch
import triton
import triton.language as tl

from workbench.catalog.spec import MATMUL_TOLERANCES, KernelSpec

E, K, N = (int(v) for v in os.environ.get("MOE_EKN", "8,2048,2048").split(","))
TOKENS = (1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048,
          3072, 4096)  # fmt: skip

CONFIGS = [
    triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk}, num_warps=w, num_stages=s)
    for bm, bn, bk, w, s in ((64, 128, 64, 4, 3), (128, 128, 64, 8, 3), (16, 128, 128, 4, 4))
]


@triton.autotune(configs=CONFIGS, key=["T"])
@triton.jit
def moe_gemm_kernel(x_ptr, w_ptr, y_ptr, offs_ptr, T, N, K, so, sxt, sxk, swe, swk, swn, syt, syn,
                    E: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                    BLOCK_K: tl.constexpr):  # fmt: skip
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    # this program's expert and rows: row tiles are numbered expert after expert
    before = 0
    expert = -1
    start = 0
    end = 0
    for e in tl.static_range(E):
        lo = tl.load(offs_ptr + e * so)
        hi = tl.load(offs_ptr + (e + 1) * so)
        tiles = tl.cdiv(hi - lo, BLOCK_M)
        here = (pid_m >= before) & (pid_m < before + tiles)
        expert = tl.where(here, e, expert)
        start = tl.where(here, lo + (pid_m - before) * BLOCK_M, start)
        end = tl.where(here, hi, end)
        before += tiles
    if expert < 0:  # the grid is sized for the worst spread of tokens
        return
    rows = start + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    a_ptrs = x_ptr + rows[:, None] * sxt + ks[None, :] * sxk
    b_ptrs = w_ptr + expert * swe + ks[:, None] * swk + cols[None, :] * swn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=(rows[:, None] < end) & (ks[None, :] < left), other=0.0)
        b = tl.load(b_ptrs, mask=(ks[:, None] < left) & (cols[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * sxk
        b_ptrs += BLOCK_K * swk
    mask = (rows[:, None] < end) & (cols[None, :] < N)
    tl.store(y_ptr + rows[:, None] * syt + cols[None, :] * syn, acc.to(y_ptr.dtype.element_ty),
             mask)  # fmt: skip


def kernel_fn(x, w, offs):
    t = x.shape[0]
    y = torch.empty((t, w.shape[2]), device=x.device, dtype=x.dtype)

    def grid(meta):
        return (triton.cdiv(t, meta["BLOCK_M"]) + E, triton.cdiv(w.shape[2], meta["BLOCK_N"]))

    moe_gemm_kernel[grid](x, w, y, offs, t, w.shape[2], w.shape[1], offs.stride(0),
                          x.stride(0), x.stride(1), w.stride(0), w.stride(1), w.stride(2),
                          y.stride(0), y.stride(1), E=E)  # fmt: skip
    return y


def reference_fn(x, w, offs):
    bounds = offs.tolist()
    return torch.cat([x[bounds[e] : bounds[e + 1]] @ w[e] for e in range(E)])


def make_inputs(shape, dtype, device):
    (t,) = shape
    dtype = dtype or torch.bfloat16
    gen = torch.Generator().manual_seed(t)
    counts = torch.bincount(torch.randint(0, E, (t,), generator=gen), minlength=E)
    offs = torch.zeros(E + 1, dtype=torch.int32)
    offs[1:] = torch.cumsum(counts, 0)
    x = (torch.randn(t, K, generator=gen) / K**0.5).to(dtype)
    w = torch.randn(E, K, N, generator=gen).to(dtype)
    return x.to(device), w.to(device), offs.to(device)


def get_inputs():
    return list(make_inputs((256,), None, "cuda"))


SPEC = KernelSpec(
    name="moe_gemm",
    kernel_fn=kernel_fn,
    reference_fn=reference_fn,
    make_inputs=make_inputs,
    shapes={"check": [(64,)], "bench": [(t,) for t in TOKENS]},
    dtypes=("bfloat16",),
    tolerances=MATMUL_TOLERANCES,
    jit=(moe_gemm_kernel,),
)
