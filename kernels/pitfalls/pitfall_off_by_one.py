"""An off-by-one mask: a scale kernel masked with `offs <= n`, beside its fixed twin.

`<=` lets one lane more through than the tensor has: where the last program's tile is partial
(n not a multiple of BLOCK), the lane at offset n loads one element past the input's end and
stores one past the output's. The outputs the check compares are all right, so only what
watches memory sees it: the guard regions (the output's margin changed, holding the input's
margin value), the interpreter's bounds and compute-sanitizer's memcheck, and the TTIR, where
the mask is an `arith.cmpi sle` against the size argument. Where BLOCK divides n, no lane
reaches offset n and nothing is wrong. The twin masks with `offs < n`.
"""

import math

import torch
import triton
import triton.language as tl

from workbench.catalog.spec import KernelSpec

BLOCK = 1024
WARPS = 4
SCALE = 2.0


@triton.jit
def _scale_le_kernel(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs <= n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, (x * scale).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _scale_kernel(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, (x * scale).to(y_ptr.dtype.element_ty), mask=mask)


def scale_le(x: torch.Tensor) -> torch.Tensor:
    """x * 2 masked with offs <= n: one element read and written past the end."""
    x = x.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    _scale_le_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, SCALE, BLOCK=BLOCK, num_warps=WARPS)
    return y


def scale(x: torch.Tensor) -> torch.Tensor:
    """x * 2 masked with offs < n."""
    x = x.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    _scale_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, SCALE, BLOCK=BLOCK, num_warps=WARPS)
    return y


def _reference(x: torch.Tensor) -> torch.Tensor:
    return x * SCALE


def _x(shape, dtype, device):
    return (torch.randn(shape, dtype=dtype, device=device),)


SHAPES = {
    "regular": [(4096,), (16, 1024)],
    "irregular": [(1000,), (3000,)],
    "bench": [((1 << 28) - 1,)],
}
_SAME = {
    "shapes": SHAPES,
    "reference_fn": _reference,
    "make_inputs": _x,
    "flops": lambda s: float(math.prod(s)),
    "bytes_moved": lambda s, esize: 2.0 * math.prod(s) * esize,
}

OFF_BY_ONE = KernelSpec(
    name="pitfall_off_by_one", kernel_fn=scale_le, jit=(_scale_le_kernel,), **_SAME
)

OFF_BY_ONE_FIXED = KernelSpec(
    name="pitfall_off_by_one_fixed", kernel_fn=scale, jit=(_scale_kernel,), **_SAME
)
