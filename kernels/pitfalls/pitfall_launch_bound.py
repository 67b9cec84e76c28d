"""Launch-bound: a small residual MLP written op by op, 36 Triton launches per call, beside its
fused twin.

The workload is LAYERS residual blocks x = x + gelu_tanh(x * w_l + b_l) on a small (batch,
features) activation, w_l and b_l per-feature vectors. The flawed version mirrors eager PyTorch:
one element-wise kernel per torch op (multiply, add, cube, tanh, ...), 12 per block. Each kernel
moves tens of KB and runs for about as long as the GPU takes to start it, so the call is launch
overhead with short bursts of work in between: the GPU idles most of the wall time, and one
CUDA graph of the same launches, or fusing them, removes the gaps. The twin is the fusion:
one kernel per call loads a tile of x once, runs the LAYERS blocks in registers and stores the
result.

The shapes are small on purpose; that is where the launches dominate.
"""

import math

import torch
import triton
import triton.language as tl

from workbench.catalog.spec import KernelSpec

LAYERS = 3
BLOCK = 1024
_GELU_C = tl.constexpr(math.sqrt(2.0 / math.pi))


@triton.jit
def _apply(a, b, OP: tl.constexpr):
    if OP == "add":
        return a + b
    return a * b


@triton.jit
def _binary_kernel(a_ptr, b_ptr, out_ptr, n, b_n, OP: tl.constexpr, BLOCK: tl.constexpr):
    """out = a OP b, b repeated every b_n elements (b_n = n, or one row broadcast down a)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs % b_n, mask=mask)
    tl.store(out_ptr + offs, _apply(a, b, OP), mask=mask)


@triton.jit
def _scalar_kernel(a_ptr, out_ptr, n, s, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, _apply(a, s, OP), mask=mask)


@triton.jit
def _tanh_kernel(a_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, 1.0 - 2.0 / (tl.exp(2.0 * a) + 1.0), mask=mask)


def _grid(t: torch.Tensor) -> tuple[int]:
    return (triton.cdiv(t.numel(), BLOCK),)


def _binary(a: torch.Tensor, b: torch.Tensor, op: str) -> torch.Tensor:
    out = torch.empty_like(a)
    _binary_kernel[_grid(a)](a, b, out, a.numel(), b.numel(), OP=op, BLOCK=BLOCK)
    return out


def _scalar(a: torch.Tensor, s: float, op: str) -> torch.Tensor:
    out = torch.empty_like(a)
    _scalar_kernel[_grid(a)](a, out, a.numel(), s, OP=op, BLOCK=BLOCK)
    return out


def _tanh(a: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(a)
    _tanh_kernel[_grid(a)](a, out, a.numel(), BLOCK=BLOCK)
    return out


def mlp_op_by_op(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """3 residual GELU blocks on a small tensor, one launch per op (36).

    12 launches a block; x is (batch, features), w and b are (LAYERS, features).
    """
    x = x.contiguous()
    for layer in range(LAYERS):
        h = _binary(_binary(x, w[layer].contiguous(), "mul"), b[layer].contiguous(), "add")
        cube = _binary(_binary(h, h, "mul"), h, "mul")
        inner = _scalar(_binary(_scalar(cube, 0.044715, "mul"), h, "add"), _GELU_C.value, "mul")
        gate = _scalar(_scalar(_tanh(inner), 1.0, "add"), 0.5, "mul")
        x = _binary(x, _binary(gate, h, "mul"), "add")
    return x


@triton.jit
def _mlp_fused_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    y_ptr,
    n,
    n_cols,
    stride_xm,
    stride_xn,
    stride_wl,
    stride_wn,
    stride_bl,
    stride_bn,
    LAYERS: tl.constexpr,
    BLOCK: tl.constexpr,
):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    row = offs // n_cols
    col = offs % n_cols
    x = tl.load(x_ptr + row * stride_xm + col * stride_xn, mask=mask).to(tl.float32)
    for layer in tl.static_range(LAYERS):
        w = tl.load(w_ptr + layer * stride_wl + col * stride_wn, mask=mask).to(tl.float32)
        b = tl.load(b_ptr + layer * stride_bl + col * stride_bn, mask=mask).to(tl.float32)
        h = x * w + b
        inner = _GELU_C * (h + 0.044715 * h * h * h)
        x += 0.5 * h * (2.0 - 2.0 / (tl.exp(2.0 * inner) + 1.0))
    tl.store(y_ptr + offs, x.to(y_ptr.dtype.element_ty), mask=mask)


def mlp_fused(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """the same 3 blocks fused into one kernel."""
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    _mlp_fused_kernel[_grid(x)](
        x, w, b, y, x.numel(), x.shape[1], x.stride(0), x.stride(1),
        w.stride(0), w.stride(1), b.stride(0), b.stride(1), LAYERS=LAYERS, BLOCK=BLOCK,
    )  # fmt: skip
    return y


def _reference(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    for layer in range(LAYERS):
        x = x + torch.nn.functional.gelu(x * w[layer] + b[layer], approximate="tanh")
    return x


def _inputs(shape, dtype, device):
    batch, features = shape
    x = torch.randn((batch, features), dtype=dtype, device=device)
    w = torch.randn((LAYERS, features), dtype=dtype, device=device)
    b = torch.randn((LAYERS, features), dtype=dtype, device=device)
    return x, w, b


def _bytes(shape, esize: int) -> float:
    batch, features = shape
    return float(2 * batch * features + 2 * LAYERS * features) * esize


SHAPES = {
    "regular": [(4, 256)],
    "irregular": [(3, 100), (1, 1)],
    "bench": [(8, 512), (64, 1024)],
}
DTYPES = ("float32",)
_SAME = {
    "shapes": SHAPES,
    "dtypes": DTYPES,
    "reference_fn": _reference,
    "make_inputs": _inputs,
    "flops": lambda s: 12.0 * LAYERS * s[0] * s[1],
    "bytes_moved": _bytes,
}

LAUNCH_BOUND = KernelSpec(
    name="pitfall_launch_bound",
    kernel_fn=mlp_op_by_op,
    jit=(_binary_kernel, _scalar_kernel, _tanh_kernel),
    **_SAME,
)

LAUNCH_BOUND_FIXED = KernelSpec(
    name="pitfall_launch_bound_fixed", kernel_fn=mlp_fused, jit=(_mlp_fused_kernel,), **_SAME
)
