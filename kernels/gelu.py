"""GELU, in its erf and tanh forms, and GELU fused with dropout: one pass over the tensor each.

The math runs in fp32 whatever the storage dtype; one rounding on the way out. The tanh form is
written as x * sigmoid(2z), the same function as 0.5 * x * (1 + tanh(z)) with one exp and one
division and no cancellation near zero.

Strided inputs are read in place: a tensor is seen as rows of its last dimension, with a row
stride and an element stride, and the kernel takes the contiguous fast path (a constexpr)
when the tensor is dense. Outputs are always dense.

GELU + dropout keeps element e iff the stream of `kernels._dropout` says so (the tensor is one
row of numel elements there); kept elements are scaled by 1 / (1 - p). Its reference rebuilds
that keep-mask with the same generator (`_dropout.keep_mask`) and applies it to torch's GELU,
so a check compares the fused kernel with an independent composition, element for element.

The generator costs about 10 integer instructions per element (Philox4x32-10, one call per four
elements). In fp32 that hides under the memory traffic; in 16-bit dtypes, half the bytes per
element, the dropout kernels become instruction-bound (the erf form more than the tanh form).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from kernels import _dropout
from workbench.compat import autotune_configs
from workbench.errors import fail
from workbench.spec import KernelSpec

_SQRT_HALF = tl.constexpr(math.sqrt(0.5))
# x * sigmoid(2z) = x / (1 + 2^(-2z log2 e)), z = sqrt(2/pi) (x + 0.044715 x^3)
_TANH_A = tl.constexpr(-2.0 * math.sqrt(2.0 / math.pi) * math.log2(math.e))
_TANH_B = tl.constexpr(0.044715)

_CONFIGS = [
    triton.Config({"BLOCK": 2048}, num_warps=4),
    triton.Config({"BLOCK": 4096}, num_warps=8),
    triton.Config({"BLOCK": 8192}, num_warps=8),
]
_DROPOUT_CONFIGS = [
    triton.Config({"Q": 512}, num_warps=4),
    triton.Config({"Q": 1024}, num_warps=4),
    triton.Config({"Q": 1024}, num_warps=8),
    triton.Config({"Q": 2048}, num_warps=8),
]


@triton.jit
def _gelu(x, TANH: tl.constexpr):
    if TANH:
        return x / (1.0 + tl.exp2((x + x * x * x * _TANH_B) * _TANH_A))
    return 0.5 * x * (1.0 + tl.math.erf(x * _SQRT_HALF))


@triton.jit
def _address(offs, n_cols, stride_r, stride_c, CONTIG: tl.constexpr):
    """Element offset of flat (row-major) index `offs` in a tensor of rows of n_cols."""
    if CONTIG:
        return offs
    row = offs // n_cols
    return row * stride_r + (offs - row * n_cols) * stride_c


@triton.autotune(
    configs=autotune_configs(_CONFIGS, triton.Config({"BLOCK": 1024}, num_warps=4)),
    key=["n", "CONTIG"],
)
@triton.jit
def _gelu_kernel(
    x_ptr,
    y_ptr,
    n,
    n_cols,
    stride_r,
    stride_c,
    TANH: tl.constexpr,
    CONTIG: tl.constexpr,
    BLOCK: tl.constexpr,
):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    src = _address(offs, n_cols, stride_r, stride_c, CONTIG)
    x = tl.load(x_ptr + src, mask=mask).to(tl.float32)
    tl.store(y_ptr + offs, _gelu(x, TANH).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _gelu_dropout_quarter(
    x_ptr,
    y_ptr,
    i,
    j: tl.constexpr,
    quarter,
    n,
    n_cols,
    stride_r,
    stride_c,
    keep,
    scale,
    TANH: tl.constexpr,
    CONTIG: tl.constexpr,
):
    offs = j * quarter + i
    mask = (i < quarter) & (offs < n)
    x = tl.load(x_ptr + _address(offs, n_cols, stride_r, stride_c, CONTIG), mask=mask)
    y = tl.where(keep, _gelu(x.to(tl.float32), TANH) * scale, 0.0)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.autotune(
    configs=autotune_configs(_DROPOUT_CONFIGS, triton.Config({"Q": 256}, num_warps=4)),
    key=["n", "CONTIG"],
)
@triton.jit(do_not_specialize=["threshold"])
def _gelu_dropout_kernel(
    x_ptr,
    y_ptr,
    seed_ptr,
    n,
    quarter,
    n_cols,
    stride_r,
    stride_c,
    threshold,
    scale,
    TANH: tl.constexpr,
    CONTIG: tl.constexpr,
    Q: tl.constexpr,
):
    i = tl.program_id(0).to(tl.int64) * Q + tl.arange(0, Q)
    k0, k1, k2, k3 = _dropout.keep4(tl.load(seed_ptr), i, threshold)
    _gelu_dropout_quarter(
        x_ptr, y_ptr, i, 0, quarter, n, n_cols, stride_r, stride_c, k0, scale, TANH, CONTIG
    )
    _gelu_dropout_quarter(
        x_ptr, y_ptr, i, 1, quarter, n, n_cols, stride_r, stride_c, k1, scale, TANH, CONTIG
    )
    _gelu_dropout_quarter(
        x_ptr, y_ptr, i, 2, quarter, n, n_cols, stride_r, stride_c, k2, scale, TANH, CONTIG
    )
    _gelu_dropout_quarter(
        x_ptr, y_ptr, i, 3, quarter, n, n_cols, stride_r, stride_c, k3, scale, TANH, CONTIG
    )


def _as_rows(x: torch.Tensor) -> tuple[torch.Tensor, int, int, int, bool]:
    """x as rows of its last dimension (a view when strides allow), with its strides."""
    rows = x.reshape(-1, x.shape[-1]) if x.ndim else x.reshape(1, 1)
    return rows, rows.shape[1], rows.stride(0), rows.stride(1), rows.is_contiguous()


def _tanh(approximate: str) -> bool:
    if approximate not in ("none", "tanh"):
        raise fail(
            "bad-argument",
            f"approximate={approximate!r} is not a GELU form",
            "pass approximate='none' (erf) or 'tanh', as torch.nn.functional.gelu takes",
        )
    return approximate == "tanh"


def gelu(x: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    """GELU of x (any shape and strides); approximate is "none" (erf) or "tanh", as in torch."""
    tanh = _tanh(approximate)
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    if n:
        rows, n_cols, s_r, s_c, contig = _as_rows(x)

        def grid(meta: dict) -> tuple[int]:
            return (triton.cdiv(n, meta["BLOCK"]),)

        _gelu_kernel[grid](rows, y, n, n_cols, s_r, s_c, TANH=tanh, CONTIG=contig)
    return y


def gelu_dropout(
    x: torch.Tensor,
    p: float = 0.1,
    seed: torch.Tensor | None = None,
    approximate: str = "none",
) -> torch.Tensor:
    """dropout(gelu(x), p) in one pass; `seed` is a one-element int64 device tensor
    (default: a fresh one from torch's generator, drawn on the device)."""
    tanh = _tanh(approximate)
    threshold = _dropout.threshold(p)
    seed = _dropout.new_seed(x.device) if seed is None else seed
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    if n:
        rows, n_cols, s_r, s_c, contig = _as_rows(x)
        quarter = _dropout.quarter(n)

        def grid(meta: dict) -> tuple[int]:
            return (triton.cdiv(quarter, meta["Q"]),)

        _gelu_dropout_kernel[grid](
            rows, y, seed, n, quarter, n_cols, s_r, s_c, threshold, 1.0 / (1.0 - p),
            TANH=tanh, CONTIG=contig,
        )  # fmt: skip
    return y


def gelu_dropout_reference(
    x: torch.Tensor, p: float, seed: torch.Tensor, approximate: str = "none"
) -> torch.Tensor:
    """torch's GELU in fp32, times the stream's keep-mask, scaled; one rounding at the end."""
    keep = _dropout.keep_mask(seed, 1, x.numel(), p).view(x.shape)
    y = F.gelu(x.float(), approximate=approximate) * keep * (1.0 / (1.0 - p))
    return y.to(x.dtype)


def _x(shape, dtype, device):
    return (torch.randn(shape, dtype=dtype, device=device),)


def _x_p_seed(shape, dtype, device):
    return (torch.randn(shape, dtype=dtype, device=device), 0.1, _dropout.new_seed(device))


def _elements(shape) -> float:
    return float(math.prod(shape))


GELU_ERF = KernelSpec(
    name="gelu",
    kernel_fn=gelu,
    reference_fn=F.gelu,
    make_inputs=_x,
    shapes={
        "regular": [(4096,), (64, 1024)],
        "irregular": [(1,), (1000,), (3, 5, 7), (4099,)],
        "bench": [(1 << 28,), (8192, 8192)],
    },
    dtypes=("float32", "float16", "bfloat16"),
    flops=lambda s: 20.0 * _elements(s),
    bytes_moved=lambda s, esize: 2.0 * _elements(s) * esize,
    jit=(_gelu_kernel,),
    description="GELU, erf form: 0.5 x (1 + erf(x / sqrt 2)), one pass",
)

GELU_TANH = KernelSpec(
    name="gelu_tanh",
    kernel_fn=lambda x: gelu(x, "tanh"),
    reference_fn=lambda x: F.gelu(x, approximate="tanh"),
    make_inputs=_x,
    shapes={
        "regular": [(4096,), (64, 1024)],
        "irregular": [(1,), (1000,), (3, 5, 7), (4099,)],
        "bench": [(1 << 28,), (8192, 8192)],
    },
    dtypes=("float32", "float16", "bfloat16"),
    flops=lambda s: 10.0 * _elements(s),
    bytes_moved=lambda s, esize: 2.0 * _elements(s) * esize,
    jit=(_gelu_kernel,),
    description="GELU, tanh form: x sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3)), one pass",
)

GELU_DROPOUT = KernelSpec(
    name="gelu_dropout",
    kernel_fn=gelu_dropout,
    reference_fn=gelu_dropout_reference,
    make_inputs=_x_p_seed,
    shapes={
        "regular": [(4096,), (64, 1024)],
        "irregular": [(1,), (1000,), (3, 5, 7), (4099,)],
        "bench": [(1 << 28,), (8192, 8192)],
    },
    dtypes=("float32", "float16", "bfloat16"),
    flops=lambda s: 30.0 * _elements(s),
    bytes_moved=lambda s, esize: 2.0 * _elements(s) * esize,
    jit=(_gelu_dropout_kernel,),
    description="dropout(GELU(x)) with in-kernel Philox (device seed, no host sync), one pass",
)
