"""A missing tail: SiLU launched on n // BLOCK programs with unmasked loads, beside its fixed twin.

The flawed launcher dropped the mask because, with a floor grid, no program reaches past the
end. It is right whenever BLOCK divides n (every regular shape) and leaves the last n % BLOCK
outputs unwritten otherwise: the irregular shapes fail, with every wrong element inside the
last partial tile. The twin masks its loads and stores and launches triton.cdiv(n, BLOCK)
programs, so the last program covers the tail and stops at n.
"""

import math

import torch
import triton
import triton.language as tl

from workbench.catalog.spec import KernelSpec

BLOCK = 1024
WARPS = 4


@triton.jit
def _silu_unmasked_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs).to(tl.float32)
    tl.store(y_ptr + offs, (x / (1.0 + tl.exp(-x))).to(y_ptr.dtype.element_ty))


@triton.jit
def _silu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    tl.store(y_ptr + offs, (x / (1.0 + tl.exp(-x))).to(y_ptr.dtype.element_ty), mask=mask)


def silu_floor_grid(x: torch.Tensor) -> torch.Tensor:
    """SiLU on n // BLOCK programs, unmasked: the last partial tile is never written."""
    x = x.contiguous()
    y = torch.empty_like(x)
    _silu_unmasked_kernel[(x.numel() // BLOCK,)](x, y, BLOCK=BLOCK, num_warps=WARPS)
    return y


def silu(x: torch.Tensor) -> torch.Tensor:
    """SiLU on cdiv(n, BLOCK) programs, masked loads and stores."""
    x = x.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    _silu_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK, num_warps=WARPS)
    return y


def _x(shape, dtype, device):
    return (torch.randn(shape, dtype=dtype, device=device),)


# 1-D irregular sizes: their tail is the last partial BLOCK, and larger than one BLOCK so that
# some programs run (a size below BLOCK launches none).
SHAPES = {
    "regular": [(4096,), (16, 1024)],
    "irregular": [(3000,), (1025,), (9999,)],
    "bench": [(1 << 28,), ((1 << 28) - 1,)],
}
_SAME = {
    "shapes": SHAPES,
    "reference_fn": torch.nn.functional.silu,
    "make_inputs": _x,
    "flops": lambda s: 4.0 * math.prod(s),  # negate, exp, add, divide
    "bytes_moved": lambda s, esize: 2.0 * math.prod(s) * esize,
}

TAIL = KernelSpec(
    name="pitfall_tail", kernel_fn=silu_floor_grid, jit=(_silu_unmasked_kernel,), **_SAME
)

TAIL_FIXED = KernelSpec(name="pitfall_tail_fixed", kernel_fn=silu, jit=(_silu_kernel,), **_SAME)
