"""Element-wise add: the simplest memory-bound kernel, 3 bytes moved per element per operand."""

import math

import torch
import triton
import triton.language as tl

from workbench.catalog.spec import KernelSpec


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)  # no overflow past 2^31
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """out = x + y, one pass."""
    x, y = x.contiguous(), y.contiguous()
    out = torch.empty_like(x)
    n = out.numel()
    block = 4096
    _add_kernel[(triton.cdiv(n, block),)](x, y, out, n, BLOCK=block, num_warps=8)
    return out


def _inputs(shape, dtype, device):
    return tuple(torch.randn(shape, dtype=dtype, device=device) for _ in range(2))


SPEC = KernelSpec(
    name="vector_add",
    kernel_fn=add,
    reference_fn=torch.add,
    make_inputs=_inputs,
    shapes={
        "regular": [(4096,), (64, 1024)],
        "irregular": [(1,), (1000,), (98_431,)],
        "bench": [(1 << 28,)],
    },
    flops=lambda s: float(math.prod(s)),
    bytes_moved=lambda s, esize: 3.0 * math.prod(s) * esize,
    jit=(_add_kernel,),
)
