"""Reduction across blocks with atomics: row sums whose partial sums race, beside their fixed twin.

To fill the GPU when rows are few and long, each row is split into BLOCK-wide pieces, one
program each, and the flawed kernel adds its piece's sum into the row's output with
`tl.atomic_add` on fp32. The result is right to rounding, but floating-point addition is not
associative and the order in which the programs' adds land changes from run to run on a GPU,
so the output's last bits do too (the interpreter runs programs in order: there it is
repeatable). In TTIR it is `tt.atomic_rmw fadd`.

The twin keeps the same split: the first pass stores each piece's sum in its own slot of a
(rows, pieces) buffer, and a second kernel, one program per row, adds a row's slots in a fixed
order. The same GPU-filling grid, one more launch and 4 bytes per piece, and the bits are the
same every run.
"""

import torch
import triton
import triton.language as tl

from workbench.catalog.spec import KernelSpec, Tolerance

BLOCK = 2048
WARPS = 8
PARTS_BLOCK = 1024
"""Partial sums a program of the second pass adds per step."""


@triton.jit
def _row_sum_atomic_kernel(x_ptr, out_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride_row + cols, mask=cols < n_cols, other=0.0)
    tl.atomic_add(out_ptr + row, tl.sum(x.to(tl.float32), axis=0))


@triton.jit
def _row_partial_sums_kernel(x_ptr, part_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    piece = tl.program_id(1)
    cols = piece * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride_row + cols, mask=cols < n_cols, other=0.0)
    tl.store(part_ptr + row * tl.num_programs(1) + piece, tl.sum(x.to(tl.float32), axis=0))


@triton.jit
def _sum_partials_kernel(part_ptr, out_ptr, n_parts, PARTS_BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    acc = tl.zeros((PARTS_BLOCK,), dtype=tl.float32)
    for start in range(0, n_parts, PARTS_BLOCK):
        idx = start + tl.arange(0, PARTS_BLOCK)
        acc += tl.load(part_ptr + row * n_parts + idx, mask=idx < n_parts, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


def _rows(x: torch.Tensor) -> torch.Tensor:
    """x with unit column stride (row strides are read as they are)."""
    return x if x.stride(1) == 1 else x.contiguous()


def row_sum_atomic(x: torch.Tensor) -> torch.Tensor:
    """row sums, each row split over programs combined by fp32 atomic_add: bits vary."""
    x = _rows(x)
    rows, cols = x.shape
    out = torch.zeros(rows, dtype=torch.float32, device=x.device)
    grid = (rows, triton.cdiv(cols, BLOCK))
    _row_sum_atomic_kernel[grid](x, out, cols, x.stride(0), BLOCK=BLOCK, num_warps=WARPS)
    return out


def row_sum_two_pass(x: torch.Tensor) -> torch.Tensor:
    """row sums in two passes: per-piece partial sums, then one program per row."""
    x = _rows(x)
    rows, cols = x.shape
    pieces = triton.cdiv(cols, BLOCK)
    parts = torch.empty((rows, pieces), dtype=torch.float32, device=x.device)
    out = torch.empty(rows, dtype=torch.float32, device=x.device)
    _row_partial_sums_kernel[(rows, pieces)](
        x, parts, cols, x.stride(0), BLOCK=BLOCK, num_warps=WARPS
    )
    _sum_partials_kernel[(rows,)](parts, out, pieces, PARTS_BLOCK=PARTS_BLOCK, num_warps=4)
    return out


def _reference(x: torch.Tensor) -> torch.Tensor:
    return x.sum(dim=1, dtype=torch.float32)


def _x(shape, dtype, device):
    return (torch.randn(shape, dtype=dtype, device=device),)


def _bytes(shape, esize: int) -> float:
    rows, cols = shape
    return float(rows * cols * esize + rows * 4)


# Few, long rows: the case that tempts a split across programs. The check's shapes give each row
# a few pieces: on an H100 their adds landed in another order from run to run at 4 per row.
SHAPES = {
    "regular": [(16, 8192)],
    "irregular": [(3, 5000), (1, 1), (7, 2049)],
    "bench": [(64, 1 << 22)],
}
# A row sum of n unit-sized fp32 terms is off by about sqrt(n) ulps of the running sum in any
# order; the default atol (1e-5) would fail rows whose sum lands near zero.
_TOLERANCES = {"float32": Tolerance(atol=1e-3, rtol=1e-5, rel_l2=1e-5)}
_SAME = {
    "shapes": SHAPES,
    "reference_fn": _reference,
    "tolerances": _TOLERANCES,
    "make_inputs": _x,
    "flops": lambda s: float(s[0] * s[1]),
    "bytes_moved": _bytes,
}

ATOMICS = KernelSpec(
    name="pitfall_atomics", kernel_fn=row_sum_atomic, jit=(_row_sum_atomic_kernel,), **_SAME
)

ATOMICS_FIXED = KernelSpec(
    name="pitfall_atomics_fixed",
    kernel_fn=row_sum_two_pass,
    jit=(_row_partial_sums_kernel, _sum_partials_kernel),
    **_SAME,
)
