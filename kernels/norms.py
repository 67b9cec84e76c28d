"""LayerNorm and RMSNorm forward, and residual + dropout + LayerNorm fused, over the last dim.

One program per row. A row of up to `MAX_FUSED_COLS` stays in registers: one read, one write,
and statistics from the row itself (mean, then the variance of x - mean: no cancellation).
Wider rows are walked in chunks: a first pass keeps per-lane Welford statistics (robust when
|mean| >> std), a second pass normalizes.

The fused kernel computes h = residual + dropout(x, p) and y = LayerNorm(h) and returns both (h
is the next block's residual), moving x and residual in, y and h out: 4 x M x N elements. Its
keep-mask is the stream of `kernels._dropout` with the rows of the input as rows: a block of
columns starting at a multiple of 8 takes its keep decisions from `keep8` in the layout of its
loads (in 16-bit dtypes no data moves between threads). The reference rebuilds the mask with the
same generator and composes torch ops in fp32. At p = 0 the generator is compiled out: the
kernel is then the residual add + LayerNorm of a forward pass.

Rows and columns of x (and residual) are read through their strides, weight and bias through
theirs; outputs are dense. Statistics and the affine in fp32; one rounding on the way out.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from kernels import _dropout
from workbench.catalog.spec import KernelSpec, Tolerance
from workbench.runtime.compat import autotune_configs
from workbench.runtime.errors import fail

MAX_FUSED_COLS = 16384
_CHUNK = 4096
"""Columns per step when a row is walked in chunks."""

_WARPS = autotune_configs(
    [triton.Config({}, num_warps=w) for w in (4, 8, 16)], triton.Config({}, num_warps=4)
)


@triton.jit
def _welford(mean, m2, count, x, valid):
    """One step of per-lane Welford statistics; lanes where `valid` is false are unchanged."""
    count = count + valid.to(tl.float32)
    delta = tl.where(valid, x - mean, 0.0)
    mean = mean + delta / tl.maximum(count, 1.0)
    m2 = m2 + delta * tl.where(valid, x - mean, 0.0)
    return mean, m2, count


@triton.jit
def _welford_total(mean, m2, count):
    """(mean, population variance) of the row from its lanes' Welford statistics."""
    n = tl.sum(count, axis=0)
    row_mean = tl.sum(mean * count, axis=0) / n
    d = mean - row_mean
    return row_mean, (tl.sum(m2, axis=0) + tl.sum(count * d * d, axis=0)) / n


@triton.jit
def _affine(xhat, w_ptr, b_ptr, y_ptr, cols, mask, stride_w, stride_b, HAS_BIAS: tl.constexpr):
    y = xhat * tl.load(w_ptr + cols * stride_w, mask=mask).to(tl.float32)
    if HAS_BIAS:
        y += tl.load(b_ptr + cols * stride_b, mask=mask).to(tl.float32)
    tl.store(y_ptr + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.autotune(configs=_WARPS, key=["BLOCK_N", "SINGLE", "RMS"])
@triton.jit
def _norm_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    y_ptr,
    n_cols,
    stride_xm,
    stride_xn,
    stride_w,
    stride_b,
    eps,
    RMS: tl.constexpr,
    HAS_BIAS: tl.constexpr,
    SINGLE: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_xm
    y_row = y_ptr + row * n_cols
    if SINGLE:
        cols = tl.arange(0, BLOCK_N)
        mask = cols < n_cols
        x = tl.load(x_row + cols * stride_xn, mask=mask, other=0.0).to(tl.float32)
        if not RMS:
            x = tl.where(mask, x - tl.sum(x, axis=0) / n_cols, 0.0)
        rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
        _affine(x * rstd, w_ptr, b_ptr, y_row, cols, mask, stride_w, stride_b, HAS_BIAS)
    else:
        mean = tl.zeros([BLOCK_N], tl.float32)
        m2 = tl.zeros([BLOCK_N], tl.float32)
        count = tl.zeros([BLOCK_N], tl.float32)
        for start in range(0, n_cols, BLOCK_N):
            cols = start + tl.arange(0, BLOCK_N)
            mask = cols < n_cols
            x = tl.load(x_row + cols * stride_xn, mask=mask, other=0.0).to(tl.float32)
            mean, m2, count = _welford(mean, m2, count, x, mask)
        row_mean, var = _welford_total(mean, m2, count)
        if RMS:  # the mean square, and no centring
            var += row_mean * row_mean
            row_mean = 0.0
        rstd = tl.rsqrt(var + eps)
        for start in range(0, n_cols, BLOCK_N):
            cols = start + tl.arange(0, BLOCK_N)
            mask = cols < n_cols
            x = tl.load(x_row + cols * stride_xn, mask=mask, other=0.0).to(tl.float32)
            xhat = (x - row_mean) * rstd
            _affine(xhat, w_ptr, b_ptr, y_row, cols, mask, stride_w, stride_b, HAS_BIAS)


@triton.jit
def _dropout_add(
    x_row,
    r_row,
    seed,
    counter0,
    cols,
    mask,
    sxn,
    srn,
    threshold,
    scale,
    DROPOUT: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    """residual + dropout(x) in fp32 on the BLOCK_N columns `cols` of a row, the first of them
    element 0 of Philox counter `counter0`; no generator without DROPOUT (p = 0)."""
    x = tl.load(x_row + cols * sxn, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(r_row + cols * srn, mask=mask, other=0.0).to(tl.float32)
    if DROPOUT:
        x = tl.where(_dropout.keep8(seed, counter0, threshold, BLOCK_N), x, 0.0)
    return r + x * scale


@triton.autotune(configs=_WARPS, key=["BLOCK_N", "SINGLE", "DROPOUT"])
@triton.jit(do_not_specialize=["threshold"])
def _add_dropout_layer_norm_kernel(
    x_ptr,
    r_ptr,
    w_ptr,
    b_ptr,
    y_ptr,
    h_ptr,
    seed_ptr,
    n_cols,
    stride_xm,
    stride_xn,
    stride_rm,
    stride_rn,
    stride_w,
    stride_b,
    threshold,
    scale,
    eps,
    DROPOUT: tl.constexpr,
    SINGLE: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_xm
    r_row = r_ptr + row * stride_rm
    h_row = h_ptr + row * n_cols
    y_row = y_ptr + row * n_cols
    seed = tl.load(seed_ptr) if DROPOUT else 0
    counter0 = row * tl.cdiv(n_cols, 8)  # the row's first Philox counter
    if SINGLE:
        cols = tl.arange(0, BLOCK_N)
        mask = cols < n_cols
        h = _dropout_add(
            x_row, r_row, seed, counter0, cols, mask, stride_xn, stride_rn, threshold, scale,
            DROPOUT, BLOCK_N,
        )  # fmt: skip
        tl.store(h_row + cols, h.to(h_ptr.dtype.element_ty), mask=mask)
        h = tl.where(mask, h - tl.sum(h, axis=0) / n_cols, 0.0)
        rstd = tl.rsqrt(tl.sum(h * h, axis=0) / n_cols + eps)
        _affine(h * rstd, w_ptr, b_ptr, y_row, cols, mask, stride_w, stride_b, True)
    else:  # pass 1: h and its statistics; pass 2: h again from x and residual, then y
        mean = tl.zeros([BLOCK_N], tl.float32)
        m2 = tl.zeros([BLOCK_N], tl.float32)
        count = tl.zeros([BLOCK_N], tl.float32)
        for start in range(0, n_cols, BLOCK_N):
            cols = start + tl.arange(0, BLOCK_N)
            mask = cols < n_cols
            h = _dropout_add(
                x_row, r_row, seed, counter0 + start // 8, cols, mask, stride_xn, stride_rn,
                threshold, scale, DROPOUT, BLOCK_N,
            )  # fmt: skip
            tl.store(h_row + cols, h.to(h_ptr.dtype.element_ty), mask=mask)
            mean, m2, count = _welford(mean, m2, count, h, mask)
        row_mean, var = _welford_total(mean, m2, count)
        rstd = tl.rsqrt(var + eps)
        for start in range(0, n_cols, BLOCK_N):
            cols = start + tl.arange(0, BLOCK_N)
            mask = cols < n_cols
            h = _dropout_add(
                x_row, r_row, seed, counter0 + start // 8, cols, mask, stride_xn, stride_rn,
                threshold, scale, DROPOUT, BLOCK_N,
            )  # fmt: skip
            xhat = (h - row_mean) * rstd
            _affine(xhat, w_ptr, b_ptr, y_row, cols, mask, stride_w, stride_b, True)


def _rows(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """x as rows of its last dimension, once weight (and bias) are known to match it."""
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (x.ndim == 0 or t.shape != x.shape[-1:]):
            raise fail(
                "bad-argument",
                f"{name} of shape {tuple(t.shape)} does not match x of shape {tuple(x.shape)}",
                "pass a weight and bias of shape x.shape[-1:]",
            )
    return x.reshape(-1, x.shape[-1])


def _norm(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, eps: float, rms: bool
) -> torch.Tensor:
    rows = _rows(x, weight, bias)
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n_rows, n_cols = rows.shape
    if y.numel():
        single = n_cols <= MAX_FUSED_COLS
        block = triton.next_power_of_2(n_cols) if single else _CHUNK
        _norm_kernel[(n_rows,)](
            rows, weight, bias, y, n_cols, rows.stride(0), rows.stride(1), weight.stride(0),
            bias.stride(0) if bias is not None else 0, eps,
            RMS=rms, HAS_BIAS=bias is not None, SINGLE=single, BLOCK_N=block,
        )  # fmt: skip
    return y


def layer_norm(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, eps: float = 1e-5
) -> torch.Tensor:
    """LayerNorm forward over the last dim, one program per row.

    As F.layer_norm(x, x.shape[-1:], weight, bias, eps).
    """
    return _norm(x, weight, bias, eps, rms=False)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """RMSNorm forward over the last dim, one program per row.

    As F.rms_norm(x, x.shape[-1:], weight, eps): x / sqrt(mean(x^2) + eps) * weight.
    """
    return _norm(x, weight, None, eps, rms=True)


def add_dropout_layer_norm(
    x: torch.Tensor,
    residual: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor,
    p: float = 0.1,
    seed: torch.Tensor | None = None,
    eps: float = 1e-5,
) -> tuple[torch.Tensor, torch.Tensor]:
    """h = residual + dropout(x); y = LayerNorm(h); returns (y, h), one pass.

    As (F.layer_norm(h, ...), h) with h = residual + F.dropout(x, p).
    """
    rows, res = _rows(x, weight, bias), _rows(residual, weight, None)
    if residual.shape != x.shape:
        raise fail(
            "bad-argument",
            f"residual of shape {tuple(residual.shape)} differs from x {tuple(x.shape)}",
            "pass a residual of the same shape as x",
        )
    threshold = _dropout.threshold(p)
    seed = _dropout.new_seed(x.device) if seed is None else seed
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    h = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n_rows, n_cols = rows.shape
    if y.numel():
        single = n_cols <= MAX_FUSED_COLS
        block = max(8, triton.next_power_of_2(n_cols)) if single else _CHUNK
        _add_dropout_layer_norm_kernel[(n_rows,)](
            rows, res, weight, bias, y, h, seed, n_cols,
            rows.stride(0), rows.stride(1), res.stride(0), res.stride(1),
            weight.stride(0), bias.stride(0), threshold, _dropout.scale(threshold), eps,
            DROPOUT=threshold > 0, SINGLE=single, BLOCK_N=block,
        )  # fmt: skip
    return y, h


def add_dropout_layer_norm_reference(
    x: torch.Tensor,
    residual: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor,
    p: float,
    seed: torch.Tensor,
    eps: float = 1e-5,
) -> tuple[torch.Tensor, torch.Tensor]:
    """torch ops in fp32 with the stream's keep-mask; one rounding at the end."""
    n_cols = x.shape[-1]
    keep = _dropout.keep_mask(seed, x.numel() // max(n_cols, 1), n_cols, p).view(x.shape)
    h = residual.float() + x.float() * keep * _dropout.scale(_dropout.threshold(p))
    y = F.layer_norm(h, (n_cols,), weight.float(), bias.float(), eps)
    return y.to(x.dtype), h.to(x.dtype)


def _affine_params(n: int, dtype, device) -> tuple[torch.Tensor, torch.Tensor]:
    w = 1.0 + 0.1 * torch.randn(n, device=device)
    return w.to(dtype), (0.1 * torch.randn(n, device=device)).to(dtype)


def _ln_inputs(shape, dtype, device):
    return (
        torch.randn(shape, dtype=dtype, device=device),
        *_affine_params(shape[-1], dtype, device),
    )


def _rms_inputs(shape, dtype, device):
    return (
        torch.randn(shape, dtype=dtype, device=device),
        _affine_params(shape[-1], dtype, device)[0],
    )


def _fused_inputs(shape, dtype, device):
    x, res = (torch.randn(shape, dtype=dtype, device=device) for _ in range(2))
    return (x, res, *_affine_params(shape[-1], dtype, device), 0.1, _dropout.new_seed(device))


def _rows_bytes(passes: int, params: int):
    def bytes_moved(shape, esize) -> float:
        return (passes * math.prod(shape) + params * shape[-1]) * esize

    return bytes_moved


# fp32 statistics of the same row, reduced in another order than torch's: a few ulps apart.
_TOLERANCES = {"float32": Tolerance(atol=1e-4, rtol=1e-5, rel_l2=1e-5)}
SHAPES = {
    "regular": [(8, 256), (4, 4096)],
    "irregular": [(1, 1), (7, 1000), (3, 5, 33), (2, 20000)],
    "bench": [(32768, 4096), (8192, 8192)],
}
_SAME = {"shapes": SHAPES, "tolerances": _TOLERANCES}

LAYER_NORM = KernelSpec(
    name="layer_norm",
    kernel_fn=layer_norm,
    reference_fn=lambda x, w, b: F.layer_norm(x, x.shape[-1:], w, b),
    make_inputs=_ln_inputs,
    flops=lambda s: 8.0 * math.prod(s),
    bytes_moved=_rows_bytes(2, 2),
    jit=(_norm_kernel,),
    **_SAME,
)

RMS_NORM = KernelSpec(
    name="rms_norm",
    kernel_fn=rms_norm,
    reference_fn=lambda x, w: F.rms_norm(x, x.shape[-1:], w, eps=1e-6),
    make_inputs=_rms_inputs,
    flops=lambda s: 4.0 * math.prod(s),
    bytes_moved=_rows_bytes(2, 1),
    jit=(_norm_kernel,),
    **_SAME,
)

ADD_DROPOUT_LAYER_NORM = KernelSpec(
    name="add_dropout_layer_norm",
    kernel_fn=add_dropout_layer_norm,
    reference_fn=add_dropout_layer_norm_reference,
    make_inputs=_fused_inputs,
    flops=lambda s: 40.0 * math.prod(s),
    bytes_moved=_rows_bytes(4, 2),
    jit=(_add_dropout_layer_norm_kernel,),
    **_SAME,
)
