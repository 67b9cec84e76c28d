"""Deliberately wrong kernels, for tests that `check` catches each kind of mistake.

- `scale_floor_grid`: the grid is n // BLOCK programs instead of cdiv(n, BLOCK), so the last,
  partial tile is never written: wrong only in the boundary tile, and only when BLOCK does not
  divide n (the regular shapes pass).
- `scale_ignores_strides`: reads x as if it were dense, so it is right on contiguous inputs and
  wrong on strided ones.
"""

import torch
import triton
import triton.language as tl

from workbench.catalog.spec import KernelSpec

BLOCK = 256


@triton.jit
def _scale_kernel(x_ptr, y_ptr, n, stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * stride, mask=mask)
    tl.store(y_ptr + offs, x * 2.0, mask=mask)


def scale_floor_grid(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    _scale_kernel[(n // BLOCK,)](x, y, n, 1, BLOCK=BLOCK)  # the bug: floor, not cdiv
    return y


def scale_ignores_strides(x: torch.Tensor) -> torch.Tensor:
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    _scale_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, 1, BLOCK=BLOCK)  # the bug: stride 1
    return y


def _x(shape, dtype, device):
    return (torch.randn(shape, dtype=dtype, device=device),)


FLOOR_GRID = KernelSpec(
    name="scale_floor_grid",
    kernel_fn=scale_floor_grid,
    reference_fn=lambda x: x * 2,
    make_inputs=_x,
    shapes={"regular": [(1024,), (4, 256)], "irregular": [(1000,), (300,)]},
    dtypes=("float32", "float16"),
    jit=(_scale_kernel,),
    description="2 x, launching n // BLOCK programs",
)

IGNORES_STRIDES = KernelSpec(
    name="scale_ignores_strides",
    kernel_fn=scale_ignores_strides,
    reference_fn=lambda x: x * 2,
    make_inputs=_x,
    shapes={"regular": [(1024,), (4, 256)], "irregular": [(1000,)]},
    dtypes=("float32",),
    jit=(_scale_kernel,),
    description="2 x, reading every input as dense",
)
