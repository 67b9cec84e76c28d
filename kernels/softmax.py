"""Row softmax over the last dimension: one pass when a row fits one program, online when not.

`softmax` keeps each row in registers (one program per row): one read, one write, the floor.
Above `MAX_FUSED_COLS` a row no longer fits, and `softmax_online` takes over: persistent
programs (a few per SM), each walking its rows in chunks, one chunk loaded ahead. The first
pass keeps a running max and sum per lane (no reductions inside the loop) and loads with
`evict_last`; the second pass walks the chunks backwards, so it starts on the ones read last,
which are the likeliest still in L2, and writes the output. While the rows in flight fit in L2
(N x element size x programs, e.g. 132 x 128 KB for bf16 N = 65536 on an H100), the second read
costs little HBM traffic; wider rows pay a third pass over HBM.

Both read any row and column strides in place; the output is dense. Math in fp32 (exp2 of
log2-scaled inputs), one rounding on the way out.
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from workbench.compat import autotune_configs
from workbench.errors import fail
from workbench.spec import KernelSpec

MAX_FUSED_COLS = 16384
_LOG2E = tl.constexpr(math.log2(math.e))


@triton.autotune(
    configs=autotune_configs(
        [triton.Config({}, num_warps=w) for w in (4, 8, 16)], triton.Config({}, num_warps=4)
    ),
    key=["BLOCK_N"],
)
@triton.jit
def _softmax_kernel(x_ptr, y_ptr, n_cols, stride_xm, stride_xn, stride_ym, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_xm + cols * stride_xn, mask=mask, other=-float("inf"))
    x = x.to(tl.float32) * _LOG2E
    e = tl.exp2(x - tl.max(x, axis=0))
    y = e / tl.sum(e, axis=0)
    tl.store(y_ptr + row * stride_ym + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


_ONLINE_CONFIGS = [
    triton.Config({"BLOCK": b, "OCC": occ}, num_warps=w)
    for b, w, occ in (
        (2048, 8, 1),
        (2048, 8, 2),
        (4096, 8, 1),
        (4096, 8, 2),
        (4096, 16, 1),
        (8192, 16, 1),
    )
]


@triton.autotune(
    configs=autotune_configs(_ONLINE_CONFIGS, triton.Config({"BLOCK": 512, "OCC": 1}, num_warps=4)),
    key=["n_cols"],  # the dtype joins the key by itself
)
@triton.jit
def _softmax_online_kernel(
    x_ptr,
    y_ptr,
    n_rows,
    n_cols,
    stride_xm,
    stride_xn,
    stride_ym,
    BLOCK: tl.constexpr,
    OCC: tl.constexpr,  # programs per SM, read by the grid function only
):
    n_chunks = tl.cdiv(n_cols, BLOCK)
    lanes = tl.arange(0, BLOCK)
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0)):
        x_row = x_ptr + tl.cast(row, tl.int64) * stride_xm
        y_row = y_ptr + tl.cast(row, tl.int64) * stride_ym
        # Pass 1, front to back. Each step loads the next chunk before using this one, so two
        # chunks are in flight per program (Triton does not pipeline loads outside tl.dot loops).
        m = tl.full([BLOCK], -float("inf"), tl.float32)
        s = tl.zeros([BLOCK], tl.float32)
        ahead = tl.load(
            x_row + lanes * stride_xn,
            mask=lanes < n_cols,
            other=-float("inf"),
            eviction_policy="evict_last",
        )
        for c in range(n_chunks):
            x = ahead.to(tl.float32) * _LOG2E
            cols = (c + 1) * BLOCK + lanes
            ahead = tl.load(
                x_row + cols * stride_xn,
                mask=cols < n_cols,
                other=-float("inf"),
                eviction_policy="evict_last",
            )
            m_new = tl.maximum(m, x)
            shift = tl.where(m_new == -float("inf"), 0.0, m_new)  # lanes that saw only -inf
            s = s * tl.exp2(m - shift) + tl.exp2(x - shift)
            m = m_new
        row_max = tl.max(m, axis=0)
        shift = tl.where(m == -float("inf"), 0.0, m - row_max)
        inv_sum = 1.0 / tl.sum(s * tl.exp2(shift), axis=0)
        # Pass 2, back to front: the chunks read last are the likeliest still in L2.
        cols = (n_chunks - 1) * BLOCK + lanes
        ahead = tl.load(x_row + cols * stride_xn, mask=cols < n_cols, eviction_policy="evict_first")
        for _ in range(n_chunks):
            x = ahead.to(tl.float32) * _LOG2E
            out_cols = cols
            cols -= BLOCK
            ahead = tl.load(
                x_row + cols * stride_xn,
                mask=(cols >= 0) & (cols < n_cols),
                eviction_policy="evict_first",
            )
            y = tl.exp2(x - row_max) * inv_sum
            tl.store(y_row + out_cols, y.to(y_ptr.dtype.element_ty), mask=out_cols < n_cols)


def _rows(x: torch.Tensor) -> torch.Tensor:
    if x.ndim == 0:
        raise fail("bad-argument", "x is a 0-d tensor", "pass a tensor with a last dimension")
    return x.reshape(-1, x.shape[-1])


def softmax(x: torch.Tensor) -> torch.Tensor:
    """softmax(x, dim=-1); rows wider than MAX_FUSED_COLS go to `softmax_online`."""
    if x.ndim and x.shape[-1] > MAX_FUSED_COLS:
        return softmax_online(x)
    rows = _rows(x)
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    if y.numel():
        block = triton.next_power_of_2(rows.shape[1])
        _softmax_kernel[(rows.shape[0],)](
            rows, y, rows.shape[1], rows.stride(0), rows.stride(1), rows.shape[1], BLOCK_N=block
        )
    return y


def softmax_online(x: torch.Tensor) -> torch.Tensor:
    """softmax(x, dim=-1) in two passes over each row; for rows of any width."""
    rows = _rows(x)
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n_rows, n_cols = rows.shape
    if y.numel():
        # The interpreter gets a few programs, so each walks several rows.
        sms = torch.cuda.get_device_properties(x.device).multi_processor_count if x.is_cuda else 4

        def grid(meta: dict) -> tuple[int]:
            return (min(n_rows, sms * meta["OCC"]),)

        _softmax_online_kernel[grid](
            rows, y, n_rows, n_cols, rows.stride(0), rows.stride(1), n_cols
        )
    return y


def _x(shape, dtype, device):
    return (torch.randn(shape, dtype=dtype, device=device),)


def _reference(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)


def _bytes(shape, esize) -> float:
    return 2.0 * math.prod(shape) * esize


SOFTMAX = KernelSpec(
    name="softmax",
    kernel_fn=softmax,
    reference_fn=_reference,
    make_inputs=_x,
    shapes={
        "regular": [(8, 256), (4, 2048)],
        "irregular": [(1, 1), (7, 1000), (3, 5, 33), (2, 16384)],
        "bench": [(32768, 4096), (8192, 8192), (32768, 1024)],
    },
    dtypes=("float32", "float16", "bfloat16"),
    flops=lambda s: 5.0 * math.prod(s),
    bytes_moved=_bytes,
    jit=(_softmax_kernel,),
    description="row softmax, one program per row held in registers: one read, one write",
)

SOFTMAX_ONLINE = KernelSpec(
    name="softmax_online",
    kernel_fn=softmax_online,
    reference_fn=_reference,
    make_inputs=_x,
    shapes={
        "regular": [(4, 2048)],
        "irregular": [(1, 1), (9, 1000), (3, 2, 1537)],
        "bench": [(4096, 65536), (2048, 131072), (1024, 262144)],
    },
    dtypes=("float32", "float16", "bfloat16"),
    flops=lambda s: 8.0 * math.prod(s),
    bytes_moved=_bytes,
    jit=(_softmax_online_kernel,),
    description="row softmax for wide rows (up to 256K): persistent, two passes, L2-resident",
)
