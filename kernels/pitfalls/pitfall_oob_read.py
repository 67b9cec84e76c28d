"""A shifted load masked for the unshifted one: a forward difference reading one element past
its input, beside its fixed twin.

y[i] = x[i + 1] - x[i], and 0 for the last element (torch.diff with the last value appended).
The flawed kernel loads x[i + 1] under `offs < n`, the mask of x[i]: the last lane reads one
element past x's end, at every size, and its difference lands in y[n - 1]. On a GPU that
element is whatever follows the allocation (often the right neighbour in the caching
allocator's block, so y[n - 1] looks plausible); the guard regions put a payload there that
the output then holds, and the interpreter's bounds and memcheck see the load. The twin masks
the shifted load with `offs + 1 < n` and writes 0 for the last element.
"""

import math

import torch
import triton
import triton.language as tl

from workbench.catalog.spec import KernelSpec

BLOCK = 1024
WARPS = 4


@triton.jit
def _diff_unshifted_mask_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    here = tl.load(x_ptr + offs, mask=mask)
    after = tl.load(x_ptr + offs + 1, mask=mask)
    tl.store(y_ptr + offs, (after - here).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _diff_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    inner = offs + 1 < n
    here = tl.load(x_ptr + offs, mask=mask)
    after = tl.load(x_ptr + offs + 1, mask=inner, other=0.0)
    diff = tl.where(inner, after - here, 0.0)
    tl.store(y_ptr + offs, diff.to(y_ptr.dtype.element_ty), mask=mask)


def _launch(kernel, x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    kernel[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK, num_warps=WARPS)
    return y


def diff_unshifted_mask(x: torch.Tensor) -> torch.Tensor:
    """x[i + 1] - x[i] loaded under x[i]'s mask: reads one element past x's end."""
    return _launch(_diff_unshifted_mask_kernel, x)


def diff(x: torch.Tensor) -> torch.Tensor:
    """x[i + 1] - x[i], 0 for the last element."""
    return _launch(_diff_kernel, x)


def _reference(x: torch.Tensor) -> torch.Tensor:
    flat = x.reshape(-1)
    return torch.diff(flat, append=flat[-1:]).reshape(x.shape)


def _x(shape, dtype, device):
    return (torch.randn(shape, dtype=dtype, device=device),)


SHAPES = {
    "regular": [(4096,), (16, 1024)],
    "irregular": [(1000,), (3001,)],
    "bench": [((1 << 28) - 1,)],
}
_SAME = {
    "shapes": SHAPES,
    "reference_fn": _reference,
    "make_inputs": _x,
    "flops": lambda s: float(math.prod(s)),
    "bytes_moved": lambda s, esize: 2.0 * math.prod(s) * esize,
}

OOB_READ = KernelSpec(
    name="pitfall_oob_read",
    kernel_fn=diff_unshifted_mask,
    jit=(_diff_unshifted_mask_kernel,),
    **_SAME,
)

OOB_READ_FIXED = KernelSpec(
    name="pitfall_oob_read_fixed", kernel_fn=diff, jit=(_diff_kernel,), **_SAME
)
