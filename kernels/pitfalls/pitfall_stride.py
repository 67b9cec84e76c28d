"""Ignored strides: a 2-D bias + ReLU that assumes dense rows, beside its fixed twin.

The flawed kernel finds element (row, col) of x at `row * n_cols + col` and bias[col] at
`col`: true for a contiguous x and bias, and so for every contiguous check, but a strided view
(a slice of a wider buffer, a transposed matrix, every other column) reads other elements. Its
outputs are dense, so only the strided cases fail. The twin takes the strides as arguments and
addresses x as `row * stride_xm + col * stride_xn` and the bias as `col * stride_b`.
"""

import torch
import triton
import triton.language as tl

from workbench.catalog.spec import KernelSpec

BLOCK_M = 32
BLOCK_N = 128
WARPS = 4


@triton.jit
def _bias_relu_dense_kernel(
    x_ptr, b_ptr, y_ptr, M, n_cols, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr
):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < n_cols)
    offs = rows[:, None] * n_cols + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=cols < n_cols).to(tl.float32)
    y = tl.maximum(x + b[None, :], 0.0)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _bias_relu_kernel(
    x_ptr,
    b_ptr,
    y_ptr,
    M,
    N,
    stride_xm,
    stride_xn,
    stride_b,
    stride_ym,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    rows = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :] * stride_xn, mask=mask)
    b = tl.load(b_ptr + cols * stride_b, mask=cols < N)
    y = tl.maximum(x.to(tl.float32) + b.to(tl.float32)[None, :], 0.0)
    tl.store(
        y_ptr + rows[:, None] * stride_ym + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask
    )


def _grid(M: int, N: int) -> tuple[int, int]:
    return triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N)


def bias_relu_dense(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """relu(x + bias) addressing x as row * n_cols + col: wrong on strided inputs."""
    M, N = x.shape
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    _bias_relu_dense_kernel[_grid(M, N)](
        x, bias, y, M, N, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, num_warps=WARPS
    )
    return y


def bias_relu(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """relu(x + bias) through the strides of x and bias."""
    M, N = x.shape
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    _bias_relu_kernel[_grid(M, N)](
        x, bias, y, M, N, x.stride(0), x.stride(1), bias.stride(0), y.stride(0),
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, num_warps=WARPS,
    )  # fmt: skip
    return y


def _reference(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return torch.relu(x.float() + bias.float()).to(x.dtype)


def _inputs(shape, dtype, device):
    M, N = shape
    x = torch.randn((M, N), dtype=dtype, device=device)
    return x, torch.randn(N, dtype=dtype, device=device)


def _bytes(shape, esize: int) -> float:
    M, N = shape
    return float(2 * M * N + N) * esize


SHAPES = {
    "regular": [(64, 256), (128, 128)],
    "irregular": [(7, 1000), (33, 65), (1, 1)],
    "bench": [(16384, 8192)],
}
_SAME = {
    "shapes": SHAPES,
    "noncontig": True,  # the strided cases are where the flawed one fails
    "reference_fn": _reference,
    "make_inputs": _inputs,
    "flops": lambda s: 2.0 * s[0] * s[1],
    "bytes_moved": _bytes,
}

STRIDE = KernelSpec(
    name="pitfall_stride", kernel_fn=bias_relu_dense, jit=(_bias_relu_dense_kernel,), **_SAME
)

STRIDE_FIXED = KernelSpec(
    name="pitfall_stride_fixed", kernel_fn=bias_relu, jit=(_bias_relu_kernel,), **_SAME
)
