"""Shared-memory bank conflicts on Hopper: a pooling kernel and its fixed twin.

Triton swizzles the shared memory behind `tl.dot` by itself; the conflicts left are in the
scratch that reductions and layout conversions go through. Measured on an H100 (Triton 3.6,
Nsight Compute; conflicts per shared wavefront, loads / stores):

`pitfall_bank_conflicts` is mean pooling over the sequence axis, y[b, :] = mean over l of
x[b, l, :], in BLOCK_L x BLOCK_D = 32 x 128 tiles, each reduced along BLOCK_L (the
non-contiguous axis) as it is loaded. The default layout puts a warp's threads along the
contiguous columns and stacks the 4 warps along the rows, so every `tl.sum(axis=0)` hands
the warps' partial sums to each other through a shared scratch (`tt.reduce` across warps,
then `ttg.convert_layout` of the result), and those accesses conflict: 91 % / 91 % in fp16.
At (128, 512, 4096) fp16 the kernel takes 338 us (1.6 TB/s) with shared-memory throttling
(mio_throttle) its top stall; in fp32 the same tile hides behind DRAM (367 us against 358).

The twin `pitfall_bank_conflicts_fixed` runs the same pooling kernel with the warps side
by side instead: BLOCK_D = 32 threads x 4 warps x one 16-byte vector each. Each thread owns its
columns for all rows of the tile, so the reduction over the rows stays in its registers and no
shared memory is used at all. Its tile is 4 rows deep: at (128, 512, 4096) on an H100 it takes
189 us in fp16 and bf16 (0.95 of the measured copy bandwidth) and 360 us in fp32 (1.00), against
339 us (0.53) for the flawed kernel in fp16. The depth matters on its own: 8 rows measured 241 us
(0.74) in fp16, 16 and 32 rows 191-206 us.
"""

import torch
import triton
import triton.language as tl

from workbench.catalog.spec import KernelSpec

WARPS = 4


@triton.jit
def _mean_pool_kernel(
    x_ptr,
    y_ptr,
    L,
    D,
    stride_xb,
    stride_xl,
    stride_xd,
    stride_yb,
    BLOCK_L: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    b = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    x_row = x_ptr + b * stride_xb + cols[None, :] * stride_xd
    acc = tl.zeros((BLOCK_D,), dtype=tl.float32)
    for start in range(0, L, BLOCK_L):
        rows = start + tl.arange(0, BLOCK_L)
        mask = (rows[:, None] < L) & (cols[None, :] < D)
        x = tl.load(x_row + rows[:, None] * stride_xl, mask=mask, other=0.0)
        acc += tl.sum(x.to(tl.float32), axis=0)
    tl.store(y_ptr + b * stride_yb + cols, (acc / L).to(y_ptr.dtype.element_ty), mask=cols < D)


def _mean_pool(x: torch.Tensor, block_l: int, block_d: int) -> torch.Tensor:
    B, L, D = x.shape
    y = torch.empty((B, D), dtype=x.dtype, device=x.device)
    _mean_pool_kernel[(B, triton.cdiv(D, block_d))](
        x, y, L, D, x.stride(0), x.stride(1), x.stride(2), y.stride(0),
        BLOCK_L=block_l, BLOCK_D=block_d, num_warps=WARPS,
    )  # fmt: skip
    return y


def mean_pool_stacked_warps(x: torch.Tensor) -> torch.Tensor:
    """mean over the sequence axis, 32 x 128 tile: warps combine sums in shared memory."""
    return _mean_pool(x, 32, 128)


def mean_pool(x: torch.Tensor) -> torch.Tensor:
    # One 16-byte vector per thread, 32 threads, WARPS warps across the columns.
    """the same pooling with warps side by side: the sum stays in registers."""
    return _mean_pool(x, 4, 32 * WARPS * (16 // x.element_size()))


def _mean_pool_reference(x: torch.Tensor) -> torch.Tensor:
    return x.float().mean(dim=1).to(x.dtype)


def _pool_inputs(shape, dtype, device):
    return (torch.randn(shape, dtype=dtype, device=device),)


def _pool_bytes(shape, esize: int) -> float:
    B, L, D = shape
    return float(B * L * D + B * D) * esize


SHAPES = {
    "regular": [(2, 64, 512), (4, 128, 256)],
    "irregular": [(3, 50, 300), (1, 1, 1), (2, 17, 1000)],
    "bench": [(128, 512, 4096)],
}
DTYPES = ("float16", "bfloat16", "float32")
_SAME = {
    "reference_fn": _mean_pool_reference,
    "make_inputs": _pool_inputs,
    "shapes": SHAPES,
    "dtypes": DTYPES,
    "flops": lambda s: float(s[0] * s[1] * s[2]),
    "bytes_moved": _pool_bytes,
    "jit": (_mean_pool_kernel,),
}

BANK_CONFLICTS = KernelSpec(
    name="pitfall_bank_conflicts", kernel_fn=mean_pool_stacked_warps, **_SAME
)

BANK_CONFLICTS_FIXED = KernelSpec(name="pitfall_bank_conflicts_fixed", kernel_fn=mean_pool, **_SAME)
