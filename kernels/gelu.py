"""GELU, in its erf and tanh forms, and GELU fused with dropout: one kernel, one pass each.

The math runs in fp32 whatever the storage dtype; one rounding on the way out. The tanh form is
written as x * sigmoid(2z), the same function as 0.5 * x * (1 + tanh(z)) with one exp and one
division and no cancellation near zero.

The erf form is x * Phi(x), Phi the normal CDF, computed from one polynomial instead of
libdevice's erf (two polynomials with per-coefficient selects, about 30 instructions per
element: enough to make the 16-bit dropout kernel instruction-bound on an H100). With a = |x|,
e = Phi(-a) = 2^q(a), q a degree-9 Chebyshev interpolant of log2 Phi(-a) on [0, 4 sqrt 2],
evaluated by Horner in fp32; e = 0 beyond (Phi(-4 sqrt 2) = 7.7e-9), and
Phi(x) = 1 - e for x >= 0, e otherwise. Against float64, in fp32 emulation (the interpreter):
relative error <= 1.6e-6 where |GELU(x)| > 1e-3, <= 3e-6 for all |x| < 4 sqrt 2 (the floor is
exp2 of a large |q|), absolute error < 5e-8 from there on; the GPU's ex2.approx adds about
2 ulp. NaN and +-inf give what torch gives in float64 (nan, inf, and nan at -inf).

Strided inputs are read in place: a tensor is seen as rows of its last dimension, with a row
stride and an element stride, and the kernel takes the contiguous fast path (a constexpr)
when the tensor is dense. Outputs are always dense.

GELU + dropout keeps element e iff the stream of `kernels._dropout` says so (the tensor is one
row of numel elements there); kept elements are scaled by 1 / keep rate. A program's block starts
at a multiple of 8 elements, so in 16-bit dtypes (8 elements per 16-byte load) each thread's
Philox calls decide exactly the elements it loads. Its reference rebuilds that keep-mask with
the same generator (`_dropout.keep_mask`) and applies it to torch's GELU, so a check compares
the fused kernel with an independent composition, element for element.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from kernels import _dropout
from workbench.catalog.spec import KernelSpec
from workbench.runtime.compat import autotune_configs
from workbench.runtime.errors import fail

# x * sigmoid(2z) = x / (1 + 2^(-2z log2 e)), z = sqrt(2/pi) (x + 0.044715 x^3)
_TANH_A = tl.constexpr(-2.0 * math.sqrt(2.0 / math.pi) * math.log2(math.e))
_TANH_B = tl.constexpr(0.044715)
# log2 Phi(-a) ~ sum Q_k a^k on [0, _PHI_CUT] (fp32 coefficients, lowest order first)
_PHI_CUT = tl.constexpr(4.0 * math.sqrt(2.0))
_Q0 = tl.constexpr(-0.9999987483024597)
_Q1 = tl.constexpr(-1.151150107383728)
_Q2 = tl.constexpr(-0.45894020795822144)
_Q3 = tl.constexpr(-0.05310732126235962)
_Q4 = tl.constexpr(0.007749205455183983)
_Q5 = tl.constexpr(-0.0005538052646443248)
_Q6 = tl.constexpr(-4.777571666636504e-05)
_Q7 = tl.constexpr(1.661240094108507e-05)
_Q8 = tl.constexpr(-1.674126906436868e-06)
_Q9 = tl.constexpr(6.3215296108865e-08)

# BLOCK: a power of two >= 8, so that a block starts at a multiple of 8 (one Philox counter).
_CONFIGS = [
    triton.Config({"BLOCK": 2048}, num_warps=4),
    triton.Config({"BLOCK": 4096}, num_warps=8),
    triton.Config({"BLOCK": 8192}, num_warps=8),
]


@triton.jit
def _gelu(x, TANH: tl.constexpr):
    if TANH:
        return x / (1.0 + tl.exp2((x + x * x * x * _TANH_B) * _TANH_A))
    a = tl.abs(x)
    q = _Q8 + a * _Q9
    q = _Q7 + a * q
    q = _Q6 + a * q
    q = _Q5 + a * q
    q = _Q4 + a * q
    q = _Q3 + a * q
    q = _Q2 + a * q
    q = _Q1 + a * q
    q = _Q0 + a * q
    # a is not clamped: the polynomial at the cut would give x * 7.6e-9 for any x < -cut,
    # far from 0 when |x| is huge. NaN fails both comparisons: e = 0, then nan * 0.
    e = tl.where(a < _PHI_CUT, tl.exp2(q), 0.0)
    return x * tl.where(x >= 0, 1.0 - e, e)


@triton.jit
def _address(offs, n_cols, stride_r, stride_c, CONTIG: tl.constexpr):
    """Element offset of flat (row-major) index `offs` in a tensor of rows of n_cols."""
    if CONTIG:
        return offs
    row = offs // n_cols
    return row * stride_r + (offs - row * n_cols) * stride_c


@triton.autotune(
    configs=autotune_configs(_CONFIGS, triton.Config({"BLOCK": 1024}, num_warps=4)),
    key=["n", "CONTIG", "DROPOUT"],
)
@triton.jit(do_not_specialize=["threshold"])
def _gelu_kernel(
    x_ptr,
    y_ptr,
    seed_ptr,
    n,
    n_cols,
    stride_r,
    stride_c,
    threshold,
    scale,
    TANH: tl.constexpr,
    DROPOUT: tl.constexpr,
    CONTIG: tl.constexpr,
    BLOCK: tl.constexpr,
):
    """y = GELU(x), or dropout(GELU(x)) when DROPOUT (else seed_ptr is never read)."""
    start = tl.program_id(0).to(tl.int64) * BLOCK
    offs = start + tl.arange(0, BLOCK)
    mask = offs < n
    src = _address(offs, n_cols, stride_r, stride_c, CONTIG)
    y = _gelu(tl.load(x_ptr + src, mask=mask).to(tl.float32), TANH)
    if DROPOUT:
        keep = _dropout.keep8(tl.load(seed_ptr), start // 8, threshold, BLOCK)
        y = tl.where(keep, y * scale, 0.0)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


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


def _launch(
    x: torch.Tensor, tanh: bool, seed: torch.Tensor | None, threshold: int, scale: float
) -> torch.Tensor:
    """GELU of x, then dropout on the stream of `seed` when one is given."""
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    if n:
        rows, n_cols, s_r, s_c, contig = _as_rows(x)

        def grid(meta: dict) -> tuple[int]:
            return (triton.cdiv(n, meta["BLOCK"]),)

        _gelu_kernel[grid](
            rows, y, y if seed is None else seed, n, n_cols, s_r, s_c, threshold, scale,
            TANH=tanh, DROPOUT=seed is not None, CONTIG=contig,
        )  # fmt: skip
    return y


def gelu(x: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    """GELU of x (any shape and strides); approximate is "none" (erf) or "tanh", as in torch."""
    return _launch(x, _tanh(approximate), None, 0, 1.0)


def gelu_dropout(
    x: torch.Tensor,
    p: float = 0.1,
    seed: torch.Tensor | None = None,
    approximate: str = "none",
) -> torch.Tensor:
    """dropout(GELU(x)) with in-kernel Philox (device seed, no host sync), one pass.

    `seed` is a one-element int64 device tensor (default: a fresh one from torch's generator,
    drawn on the device).
    """
    tanh = _tanh(approximate)
    threshold = _dropout.threshold(p)
    seed = _dropout.new_seed(x.device) if seed is None else seed
    return _launch(x, tanh, seed, threshold, _dropout.scale(threshold))


def gelu_dropout_reference(
    x: torch.Tensor, p: float, seed: torch.Tensor, approximate: str = "none"
) -> torch.Tensor:
    """torch's GELU in fp32, times the stream's keep-mask, scaled; one rounding at the end."""
    keep = _dropout.keep_mask(seed, 1, x.numel(), p).view(x.shape)
    y = F.gelu(x.float(), approximate=approximate) * keep * _dropout.scale(_dropout.threshold(p))
    return y.to(x.dtype)


def _x(shape, dtype, device):
    return (torch.randn(shape, dtype=dtype, device=device),)


def _x_p_seed(shape, dtype, device):
    return (torch.randn(shape, dtype=dtype, device=device), 0.1, _dropout.new_seed(device))


def _elements(shape) -> float:
    return float(math.prod(shape))


SHAPES = {
    "regular": [(4096,), (64, 1024)],
    "irregular": [(1,), (1000,), (3, 5, 7), (4099,)],
    "bench": [(1 << 28,), (8192, 8192)],
}
_SAME = {
    "shapes": SHAPES,
    "bytes_moved": lambda s, esize: 2.0 * _elements(s) * esize,
    "jit": (_gelu_kernel,),
}

GELU_ERF = KernelSpec(
    name="gelu",
    kernel_fn=gelu,
    reference_fn=F.gelu,
    make_inputs=_x,
    flops=lambda s: 20.0 * _elements(s),
    description="GELU, erf form: 0.5 x (1 + erf(x / sqrt 2)), one pass",
    **_SAME,
)

GELU_TANH = KernelSpec(
    name="gelu_tanh",
    kernel_fn=lambda x: gelu(x, "tanh"),
    reference_fn=lambda x: F.gelu(x, approximate="tanh"),
    make_inputs=_x,
    flops=lambda s: 10.0 * _elements(s),
    description="GELU, tanh form: x sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3)), one pass",
    **_SAME,
)

GELU_DROPOUT = KernelSpec(
    name="gelu_dropout",
    kernel_fn=gelu_dropout,
    reference_fn=gelu_dropout_reference,
    make_inputs=_x_p_seed,
    flops=lambda s: 30.0 * _elements(s),
    **_SAME,
)
