"""A store masked with the wrong size: pairwise sums written with the input's mask, beside its
fixed twin.

The kernel halves its input (y[i] = x[2i] + x[2i+1], n // 2 outputs) on cdiv(n // 2, BLOCK)
programs. Its loads are masked right, but its store is masked with `offs < n`, the input's
size: where the last tile is partial, the lanes past n // 2 store zeros up to a block past
the output's end. Every output the check compares is right; the guard regions see the output's
margin written, the interpreter's bounds and memcheck see the store. The twin masks the store
with the output's own size.
"""

import math

import torch
import triton
import triton.language as tl

from workbench.catalog.spec import KernelSpec

BLOCK = 1024
WARPS = 4


@triton.jit
def _pair_sum_input_mask_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    a = tl.load(x_ptr + 2 * offs, mask=2 * offs + 1 < n, other=0.0)
    b = tl.load(x_ptr + 2 * offs + 1, mask=2 * offs + 1 < n, other=0.0)
    tl.store(y_ptr + offs, (a + b).to(y_ptr.dtype.element_ty), mask=offs < n)


@triton.jit
def _pair_sum_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n // 2
    a = tl.load(x_ptr + 2 * offs, mask=mask)
    b = tl.load(x_ptr + 2 * offs + 1, mask=mask)
    tl.store(y_ptr + offs, (a + b).to(y_ptr.dtype.element_ty), mask=mask)


def _launch(kernel, x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    n = x.numel()
    y = torch.empty(n // 2, dtype=x.dtype, device=x.device)
    kernel[(triton.cdiv(n // 2, BLOCK),)](x, y, n, BLOCK=BLOCK, num_warps=WARPS)
    return y


def pair_sum_input_mask(x: torch.Tensor) -> torch.Tensor:
    """x[0::2] + x[1::2], stored with the input's mask: writes past the output's end."""
    return _launch(_pair_sum_input_mask_kernel, x)


def pair_sum(x: torch.Tensor) -> torch.Tensor:
    """x[0::2] + x[1::2], stored with the output's mask."""
    return _launch(_pair_sum_kernel, x)


def _reference(x: torch.Tensor) -> torch.Tensor:
    flat = x.reshape(-1)
    return flat[0::2] + flat[1::2]


def _x(shape, dtype, device):
    return (torch.randn(shape, dtype=dtype, device=device),)


# Even sizes: n // 2 outputs, a multiple of BLOCK at the regular sizes only.
SHAPES = {
    "regular": [(8192,), (16, 1024)],
    "irregular": [(2000,), (6002,)],
    "bench": [((1 << 28) - 2,)],
}
_SAME = {
    "shapes": SHAPES,
    "reference_fn": _reference,
    "make_inputs": _x,
    "flops": lambda s: math.prod(s) / 2.0,
    "bytes_moved": lambda s, esize: 1.5 * math.prod(s) * esize,
}

OOB_WRITE = KernelSpec(
    name="pitfall_oob_write",
    kernel_fn=pair_sum_input_mask,
    jit=(_pair_sum_input_mask_kernel,),
    **_SAME,
)

OOB_WRITE_FIXED = KernelSpec(
    name="pitfall_oob_write_fixed", kernel_fn=pair_sum, jit=(_pair_sum_kernel,), **_SAME
)
