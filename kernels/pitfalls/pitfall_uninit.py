"""An accumulator never zeroed: a*x1 + b*x2 built by two `y += alpha * x` launches into a
torch.empty buffer, beside its fixed twin.

The launcher allocates y with torch.empty and lets the first launch add to it: every output
starts from whatever the allocator handed back (on a GPU often the result of a previous call,
so it can pass for a while). The check's poisoned allocations make the outputs NaN; the
interpreter sees the first load return that poison (memory nothing wrote) and compute-
sanitizer's initcheck sees the read of uninitialised memory, both at the line of the load of y.
The twin allocates y with torch.zeros.
"""

import math

import torch
import triton
import triton.language as tl

from workbench.catalog.spec import KernelSpec

BLOCK = 1024
WARPS = 4
ALPHA, BETA = 2.0, -0.5


@triton.jit
def _axpy_kernel(y_ptr, x_ptr, alpha, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(y_ptr + offs, mask=mask).to(tl.float32)
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    tl.store(y_ptr + offs, (y + alpha * x).to(y_ptr.dtype.element_ty), mask=mask)


def _combine(y: torch.Tensor, x1: torch.Tensor, x2: torch.Tensor) -> torch.Tensor:
    n = y.numel()
    grid = (triton.cdiv(n, BLOCK),)
    _axpy_kernel[grid](y, x1.contiguous(), ALPHA, n, BLOCK=BLOCK, num_warps=WARPS)
    _axpy_kernel[grid](y, x2.contiguous(), BETA, n, BLOCK=BLOCK, num_warps=WARPS)
    return y


def combine_into_empty(x1: torch.Tensor, x2: torch.Tensor) -> torch.Tensor:
    """2 x1 - x2 / 2 accumulated into torch.empty: reads uninitialised memory."""
    return _combine(torch.empty_like(x1, memory_format=torch.contiguous_format), x1, x2)


def combine(x1: torch.Tensor, x2: torch.Tensor) -> torch.Tensor:
    """2 x1 - x2 / 2 accumulated into torch.zeros."""
    return _combine(torch.zeros_like(x1, memory_format=torch.contiguous_format), x1, x2)


def _reference(x1: torch.Tensor, x2: torch.Tensor) -> torch.Tensor:
    return (ALPHA * x1.float() + BETA * x2.float()).to(x1.dtype)


def _inputs(shape, dtype, device):
    return tuple(torch.randn(shape, dtype=dtype, device=device) for _ in range(2))


SHAPES = {
    "regular": [(4096,), (16, 1024)],
    "irregular": [(1000,)],
    "bench": [(1 << 28,)],
}
_SAME = {
    "shapes": SHAPES,
    "reference_fn": _reference,
    "make_inputs": _inputs,
    "flops": lambda s: 4.0 * math.prod(s),
    "bytes_moved": lambda s, esize: 5.0 * math.prod(s) * esize,
}

UNINIT = KernelSpec(
    name="pitfall_uninit", kernel_fn=combine_into_empty, jit=(_axpy_kernel,), **_SAME
)

UNINIT_FIXED = KernelSpec(
    name="pitfall_uninit_fixed", kernel_fn=combine, jit=(_axpy_kernel,), **_SAME
)
