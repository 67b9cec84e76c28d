"""A row sum reduced in fp16: `tl.sum` keeps a float input's type, so an fp16 tile loaded without
a cast is summed in fp16, beside its fixed twin.

Every partial sum of the reduction tree is rounded to fp16's 11 bits, so the error grows with the
row's length (and a row past 65504 overflows to inf). In TTIR it is the `tt.reduce` whose combine
region adds f16 scalars. The twin casts the tile to fp32 before `tl.sum` and rounds once, at the
store.
"""

import math

import torch
import triton
import triton.language as tl

from workbench.catalog.spec import KernelSpec


@triton.jit
def _row_sum_half_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.store(y_ptr + row, tl.sum(x, axis=0))


@triton.jit
def _row_sum_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    tl.store(y_ptr + row, tl.sum(x, axis=0).to(y_ptr.dtype.element_ty))


def _launch(kernel, x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    y = torch.empty(x.shape[0], dtype=x.dtype, device=x.device)
    kernel[(x.shape[0],)](x, y, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
    return y


def row_sum_half(x: torch.Tensor) -> torch.Tensor:
    """Row sums reduced in the input's fp16."""
    return _launch(_row_sum_half_kernel, x)


def row_sum(x: torch.Tensor) -> torch.Tensor:
    """Row sums reduced in fp32, rounded once at the store."""
    return _launch(_row_sum_kernel, x)


def _x(shape, dtype, device):
    return (torch.rand(shape, device=device).to(dtype),)


def _reference(x: torch.Tensor) -> torch.Tensor:
    return x.float().sum(-1).to(x.dtype)


SHAPES = {"regular": [(8, 1024)], "irregular": [(5, 1000)], "bench": [(4096, 4096)]}
_SAME = {
    "shapes": SHAPES,
    "dtypes": ("float16",),
    "reference_fn": _reference,
    "make_inputs": _x,
    "noncontig": False,
    "flops": lambda s: float(math.prod(s)),
    "bytes_moved": lambda s, esize: float(math.prod(s) + s[0]) * esize,
}

HALF_SUM = KernelSpec(
    name="pitfall_half_sum", kernel_fn=row_sum_half, jit=(_row_sum_half_kernel,), **_SAME
)

HALF_SUM_FIXED = KernelSpec(
    name="pitfall_half_sum_fixed", kernel_fn=row_sum, jit=(_row_sum_kernel,), **_SAME
)
