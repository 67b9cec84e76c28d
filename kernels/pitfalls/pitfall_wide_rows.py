"""Rows wider than the block: a row softmax with a fixed BLOCK and no loop, beside its fixed twin.

The flawed kernel gives each row one program of BLOCK = 1024 lanes and never loops over the
rest of the row: rows up to 1024 wide are right (every regular and irregular shape), wider rows
get the softmax of their first 1024 elements and leave the others unwritten. The twin sizes the
block to the row, triton.next_power_of_2(n_cols), so a program holds its whole row (up to the
16384 columns it accepts), with the number of warps growing with the block. The failures of
the flawed kernel are regular and irregular alike: in every row wider than BLOCK, the columns
from BLOCK on are unwritten and the rest normalized over the first BLOCK alone.
"""

import math

import torch
import triton
import triton.language as tl

from workbench.catalog.spec import KernelSpec
from workbench.runtime.errors import fail

BLOCK = 1024
MAX_COLS = 16384


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, n_cols, stride_xm, stride_xn, stride_ym, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_xm + cols * stride_xn, mask=mask, other=-float("inf"))
    x = x.to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    y = e / tl.sum(e, axis=0)
    tl.store(y_ptr + row * stride_ym + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def _launch(x: torch.Tensor, block: int, warps: int) -> torch.Tensor:
    rows = x.reshape(-1, x.shape[-1])
    y = torch.empty(rows.shape, dtype=x.dtype, device=x.device)
    _softmax_kernel[(rows.shape[0],)](
        rows, y, rows.shape[1], rows.stride(0), rows.stride(1), y.stride(0),
        BLOCK=block, num_warps=warps,
    )  # fmt: skip
    return y.view(x.shape)


def softmax_fixed_block(x: torch.Tensor) -> torch.Tensor:
    """row softmax with BLOCK=1024 and no loop: rows wider than 1024 go wrong."""
    return _launch(x, BLOCK, 4)


def softmax(x: torch.Tensor) -> torch.Tensor:
    """row softmax with the block sized to the row (next power of two)."""
    if x.shape[-1] > MAX_COLS:
        raise fail(
            "bad-input",
            f"rows of {x.shape[-1]} elements do not fit one program (at most {MAX_COLS})",
            "use kernels/softmax.py's softmax_online for wider rows",
        )
    block = triton.next_power_of_2(x.shape[-1])
    return _launch(x, block, min(16, max(4, block // 1024)))


def _reference(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x.float(), dim=-1).to(x.dtype)


def _x(shape, dtype, device):
    return (torch.randn(shape, dtype=dtype, device=device),)


def _bytes(shape, esize: int) -> float:
    return 2.0 * math.prod(shape) * esize


SHAPES = {
    "regular": [(8, 512), (4, 1024), (4, 4096)],
    "irregular": [(7, 1000), (3, 1), (2, 3, 17), (3, 3000)],
    "bench": [(32768, 4096), (8192, 1024)],
}
_SAME = {
    "shapes": SHAPES,
    "jit": (_softmax_kernel,),
    "reference_fn": _reference,
    "make_inputs": _x,
    "flops": lambda s: 5.0 * math.prod(s),
    "bytes_moved": _bytes,
}

WIDE_ROWS = KernelSpec(name="pitfall_wide_rows", kernel_fn=softmax_fixed_block, **_SAME)

WIDE_ROWS_FIXED = KernelSpec(name="pitfall_wide_rows_fixed", kernel_fn=softmax, **_SAME)
