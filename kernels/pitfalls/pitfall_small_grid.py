"""A grid too small for the GPU: a grid-stride clamp on a fixed 16 programs, beside its fixed
twin.

The flawed launcher carries a CUDA habit over: a fixed handful of programs (PROGRAMS = 16),
each walking the tensor in a grid-stride loop. It is correct at every size, but an H100 has 132
SMs, so 116 of them stay idle and each busy SM runs one block of 4 warps: a few percent of the
machine streams the data. The twin launches one program per BLOCK (triton.cdiv(n, BLOCK)
programs), enough to fill every SM many times over at the bench sizes.
"""

import math

import torch
import triton
import triton.language as tl

from workbench.catalog.spec import KernelSpec

BLOCK = 1024
PROGRAMS = 16
LO, HI = -1.0, 1.0


@triton.jit
def _clamp_grid_stride_kernel(x_ptr, y_ptr, n, lo, hi, BLOCK: tl.constexpr):
    step = tl.num_programs(0).to(tl.int64) * BLOCK
    for start in range(tl.program_id(0).to(tl.int64) * BLOCK, n, step):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        tl.store(y_ptr + offs, tl.minimum(tl.maximum(x, lo), hi), mask=mask)


@triton.jit
def _clamp_kernel(x_ptr, y_ptr, n, lo, hi, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.minimum(tl.maximum(x, lo), hi), mask=mask)


def clamp_few_programs(x: torch.Tensor) -> torch.Tensor:
    """clamp on a fixed 16 programs in a grid-stride loop: SMs left idle."""
    x = x.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    _clamp_grid_stride_kernel[(PROGRAMS,)](x, y, n, LO, HI, BLOCK=BLOCK, num_warps=4)
    return y


def clamp(x: torch.Tensor) -> torch.Tensor:
    """clamp on one program per BLOCK: every SM busy."""
    x = x.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    _clamp_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, LO, HI, BLOCK=BLOCK, num_warps=4)
    return y


def _reference(x: torch.Tensor) -> torch.Tensor:
    return x.clamp(LO, HI)


def _x(shape, dtype, device):
    return (torch.randn(shape, dtype=dtype, device=device),)


SHAPES = {
    "regular": [(4096,), (1 << 14,)],
    "irregular": [(1,), (1000,), (3, 5, 7), (9999,)],
    "bench": [(1 << 28,), (1 << 24,)],
}
_SAME = {
    "shapes": SHAPES,
    "reference_fn": _reference,
    "make_inputs": _x,
    "flops": lambda s: 2.0 * math.prod(s),
    "bytes_moved": lambda s, esize: 2.0 * math.prod(s) * esize,
}

SMALL_GRID = KernelSpec(
    name="pitfall_small_grid",
    kernel_fn=clamp_few_programs,
    jit=(_clamp_grid_stride_kernel,),
    **_SAME,
)

SMALL_GRID_FIXED = KernelSpec(
    name="pitfall_small_grid_fixed", kernel_fn=clamp, jit=(_clamp_kernel,), **_SAME
)
