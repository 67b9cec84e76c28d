"""Two kernels with config spaces too big to time whole, for benchmarks/record_spaces.py: a
MoE-style grouped GEMM over batch sizes 1..4096 and a row softmax over three widths.

moe_gemm: tokens routed to TOP_K of E experts (a fixed seed), their rows gathered and sorted by
expert, then Y[rows of expert e] = X[rows] @ W[e] for each expert: one program per (expert,
BLOCK_M rows of it, BLOCK_N columns), the row ranges read from the experts' start offsets; the
grid covers the busiest expert, and the programs past an expert's rows return at once.

softmax_rows: ROWS rows per program, each walked in BLOCK_N chunks twice (a running max and
sum, then the output), so any width runs with any chunk.
"""

import torch
import triton
import triton.language as tl

from workbench.catalog.spec import MATMUL_TOLERANCES, KernelSpec

EXPERTS, TOP_K, HIDDEN, INTERMEDIATE = 8, 2, 2048, 1024
BATCHES = [(1,), (2,), (4,), (8,), (16,), (32,), (64,), (128,), (256,), (512,), (1024,), (2048,),
           (4096,)]  # fmt: skip
"""Batch sizes: tokens before routing."""


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": 64}, num_warps=w, num_stages=3)
        for m, n, w in ((16, 64, 4), (32, 128, 4), (64, 128, 4), (128, 128, 8))
    ],
    key=["T_MAX", "N", "K"],
)
@triton.jit
def moe_gemm_kernel(x_ptr, w_ptr, y_ptr, offsets_ptr, N, K, T_MAX,
                    stride_xm, stride_xk, stride_we, stride_wk, stride_wn, stride_ym, stride_yn,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                    BLOCK_K: tl.constexpr):  # fmt: skip
    tiles = tl.cdiv(T_MAX, BLOCK_M)
    expert = tl.program_id(0) // tiles
    end = tl.load(offsets_ptr + expert + 1)
    row0 = tl.load(offsets_ptr + expert) + (tl.program_id(0) % tiles) * BLOCK_M
    if row0 < end:
        offs_m = row0 + tl.arange(0, BLOCK_M)
        offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
        offs_k = tl.arange(0, BLOCK_K)
        m_ok, n_ok = offs_m < end, offs_n < N
        a_ptrs = x_ptr + offs_m[:, None] * stride_xm + offs_k[None, :] * stride_xk
        b_ptrs = w_ptr + expert * stride_we
        b_ptrs += offs_k[:, None] * stride_wk + offs_n[None, :] * stride_wn
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, K, BLOCK_K):
            a = tl.load(a_ptrs, mask=m_ok[:, None] & (offs_k[None, :] < K - k), other=0.0)
            b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k) & n_ok[None, :], other=0.0)
            acc = tl.dot(a, b, acc)
            a_ptrs += BLOCK_K * stride_xk
            b_ptrs += BLOCK_K * stride_wk
        y_ptrs = y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :] * stride_yn
        tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=m_ok[:, None] & n_ok[None, :])


def moe_gemm(x: torch.Tensor, w: torch.Tensor, offsets: torch.Tensor, t_max: int) -> torch.Tensor:
    """Y = X[rows of e] @ W[e] for every expert e, the rows sorted by expert."""
    experts, k, n = w.shape
    offsets = offsets.contiguous()  # read one int32 after another
    y = torch.empty(x.shape[0], n, device=x.device, dtype=x.dtype)

    def grid(meta: dict) -> tuple[int, int]:
        return experts * triton.cdiv(t_max, meta["BLOCK_M"]), triton.cdiv(n, meta["BLOCK_N"])

    moe_gemm_kernel[grid](x, w, y, offsets, n, k, t_max, x.stride(0), x.stride(1), w.stride(0),
                          w.stride(1), w.stride(2), y.stride(0), y.stride(1))  # fmt: skip
    return y


def moe_reference(x: torch.Tensor, w: torch.Tensor, offsets: torch.Tensor, t_max: int):
    bounds = offsets.tolist()
    return torch.cat([x[s:e] @ w[i] for i, (s, e) in enumerate(zip(bounds, bounds[1:]))])


def moe_inputs(shape: tuple[int, ...], dtype: torch.dtype, device: str) -> tuple:
    """The routed rows of `shape[0]` tokens sorted by expert, the expert weights, the experts'
    start offsets and the busiest expert's row count."""
    (tokens,) = shape
    gen = torch.Generator().manual_seed(tokens)
    chosen = torch.rand(tokens, EXPERTS, generator=gen).topk(TOP_K, dim=1).indices.flatten()
    order = torch.argsort(chosen, stable=True)
    counts = torch.bincount(chosen, minlength=EXPERTS)
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), counts.cumsum(0)]).to(torch.int32)
    x = torch.randn(tokens, HIDDEN, generator=gen)[order // TOP_K]
    w = torch.randn(EXPERTS, HIDDEN, INTERMEDIATE, generator=gen) / HIDDEN**0.5
    return (x.to(device, dtype), w.to(device, dtype), offsets.to(device), int(counts.max()))


MOE_GEMM = KernelSpec(
    name="moe_gemm",
    kernel_fn=moe_gemm,
    reference_fn=moe_reference,
    make_inputs=moe_inputs,
    shapes={"check": [(5,), (64,)], "bench": BATCHES},
    dtypes=("bfloat16", "float16"),
    tolerances=MATMUL_TOLERANCES,
    flops=lambda s: 2.0 * s[0] * TOP_K * HIDDEN * INTERMEDIATE,
    jit=(moe_gemm_kernel,),
    description="MoE-style grouped GEMM: tokens routed to 2 of 8 experts",
)


@triton.autotune(
    configs=[
        triton.Config({"ROWS": r, "BLOCK_N": n}, num_warps=w, num_stages=2)
        for r, n, w in ((1, 1024, 4), (1, 4096, 8), (4, 1024, 8))
    ],
    key=["n_rows", "n_cols"],
)
@triton.jit
def softmax_rows_kernel(x_ptr, y_ptr, n_rows, n_cols, stride_xm, stride_xn, stride_ym,
                        ROWS: tl.constexpr, BLOCK_N: tl.constexpr):  # fmt: skip
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    x_rows = x_ptr + rows[:, None].to(tl.int64) * stride_xm
    y_rows = y_ptr + rows[:, None].to(tl.int64) * stride_ym
    row_ok = rows[:, None] < n_rows
    top = tl.full((ROWS,), -float("inf"), tl.float32)
    total = tl.zeros((ROWS,), tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)[None, :]
        x = tl.load(x_rows + cols * stride_xn, mask=row_ok & (cols < n_cols), other=-float("inf"))
        x = x.to(tl.float32)
        new_top = tl.maximum(top, tl.max(x, axis=1))
        total = total * tl.exp(top - new_top) + tl.sum(tl.exp(x - new_top[:, None]), axis=1)
        top = new_top
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)[None, :]
        mask = row_ok & (cols < n_cols)
        x = tl.load(x_rows + cols * stride_xn, mask=mask, other=-float("inf")).to(tl.float32)
        y = tl.exp(x - top[:, None]) / total[:, None]
        tl.store(y_rows + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def softmax_rows(x: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dimension of a 2-D tensor."""
    n_rows, n_cols = x.shape
    y = torch.empty(n_rows, n_cols, device=x.device, dtype=x.dtype)
    softmax_rows_kernel[lambda meta: (triton.cdiv(n_rows, meta["ROWS"]),)](
        x, y, n_rows, n_cols, x.stride(0), x.stride(1), y.stride(0)
    )
    return y


SOFTMAX_ROWS = KernelSpec(
    name="softmax_rows",
    kernel_fn=softmax_rows,
    reference_fn=lambda x: torch.softmax(x.float(), dim=-1).to(x.dtype),
    make_inputs=lambda shape, dtype, device: (torch.randn(shape, device=device, dtype=dtype),),
    shapes={"check": [(37, 1000)], "bench": [(16384, 1024), (4096, 4096), (512, 32768)]},
    dtypes=("float16", "float32"),
    bytes_moved=lambda s, esize: 2.0 * s[0] * s[1] * esize,
    jit=(softmax_rows_kernel,),
    description="row softmax, ROWS rows a program, BLOCK_N columns a step",
)
