"""Dropout checked against the wrong random stream, and dropout scaled wrongly, beside the fixed
twin.

`pitfall_dropout_rng` draws its keep-mask with `tl.rand(seed, offsets)` (Triton's Philox) and is
checked against `torch.nn.functional.dropout`, which draws from torch's generator: a different
stream. Both drop a fraction p and scale the kept values by 1 / (1 - p), so the outputs agree in
distribution, but not element by element: compared element by element, a right kernel looks
wrong. Nothing in the kernel is wrong; the reference is.

`pitfall_dropout_scale` is the same kernel with the common slip of scaling kept values by 1 / p
instead of 1 / (1 - p): the zeros still fall at rate p, but the kept values are 9 times too
large at p = 0.1. Its outputs differ from torch's in distribution too: truly wrong, and a
verdict of "same distribution, other stream" must not cover it.

The twin `pitfall_dropout_rng_fixed` makes the reference draw the kernel's own stream: the
library's dropout stream (kernels/_dropout.py), whose `keep_mask` rebuilds the keep decisions
of `keep8` exactly, so the check compares element by element and passes.
"""

import math

import torch
import triton
import triton.language as tl

from kernels import _dropout
from workbench.catalog.spec import KernelSpec

BLOCK = 1024
P = 0.1


@triton.jit
def _dropout_rand_kernel(x_ptr, y_ptr, n, p, seed, SCALE_BY_P: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    keep = tl.rand(seed, offs) > p
    if SCALE_BY_P:
        y = tl.where(keep, x / p, 0.0)
    else:
        y = tl.where(keep, x / (1.0 - p), 0.0)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def _dropout_rand(x: torch.Tensor, p: float, seed: int, scale_by_p: bool) -> torch.Tensor:
    x = x.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    _dropout_rand_kernel[(triton.cdiv(n, BLOCK),)](
        x, y, n, p, seed, SCALE_BY_P=scale_by_p, BLOCK=BLOCK
    )
    return y


def dropout_rand(x: torch.Tensor, p: float, seed: int) -> torch.Tensor:
    """dropout with tl.rand checked against F.dropout: same distribution, other stream."""
    return _dropout_rand(x, p, seed, scale_by_p=False)


def dropout_rand_scaled_by_p(x: torch.Tensor, p: float, seed: int) -> torch.Tensor:
    """dropout scaling kept values by 1/p instead of 1/(1-p): wrong in distribution."""
    return _dropout_rand(x, p, seed, scale_by_p=True)


def _torch_dropout(x: torch.Tensor, p: float, seed: int) -> torch.Tensor:
    """torch's dropout: its own generator, so `seed` does not reach it."""
    return torch.nn.functional.dropout(x, p, training=True)


@triton.jit(do_not_specialize=["threshold"])
def _dropout_kernel(x_ptr, y_ptr, seed_ptr, n, threshold, scale, BLOCK: tl.constexpr):
    # BLOCK is a multiple of 8: each block starts on a counter of the stream.
    start = tl.program_id(0).to(tl.int64) * BLOCK
    offs = start + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    keep = _dropout.keep8(tl.load(seed_ptr), start // 8, threshold, BLOCK)
    tl.store(y_ptr + offs, tl.where(keep, x * scale, 0.0).to(y_ptr.dtype.element_ty), mask=mask)


def dropout(x: torch.Tensor, p: float, seed: torch.Tensor) -> torch.Tensor:
    """dropout on the library's stream; the reference rebuilds its keep-mask.

    x is seen as one row of numel elements.
    """
    x = x.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    threshold = _dropout.threshold(p)
    _dropout_kernel[(triton.cdiv(n, BLOCK),)](
        x, y, seed, n, threshold, _dropout.scale(threshold), BLOCK=BLOCK
    )
    return y


def dropout_reference(x: torch.Tensor, p: float, seed: torch.Tensor) -> torch.Tensor:
    """The stream's keep-mask, rebuilt by the library, applied with torch ops in fp32."""
    keep = _dropout.keep_mask(seed, 1, x.numel(), p).view(x.shape)
    return (x.float() * keep * _dropout.scale(_dropout.threshold(p))).to(x.dtype)


def _x_p_int_seed(shape, dtype, device):
    seed = int(torch.randint(0, 2**31 - 1, (1,)))
    return torch.randn(shape, dtype=dtype, device=device), P, seed


def _x_p_seed(shape, dtype, device):
    return torch.randn(shape, dtype=dtype, device=device), P, _dropout.new_seed(device)


SHAPES = {
    "regular": [(4096,), (16, 256)],
    "irregular": [(1,), (1000,), (3, 5, 7), (4099,)],
    "bench": [(1 << 28,)],
}
_SAME = {
    "shapes": SHAPES,
    "flops": lambda s: 2.0 * math.prod(s),
    "bytes_moved": lambda s, esize: 2.0 * math.prod(s) * esize,
}
# The two flawed kernels: tl.rand's stream, checked against torch's dropout.
_RAND = {
    **_SAME,
    "reference_fn": _torch_dropout,
    "make_inputs": _x_p_int_seed,
    "jit": (_dropout_rand_kernel,),
}

DROPOUT_RNG = KernelSpec(name="pitfall_dropout_rng", kernel_fn=dropout_rand, **_RAND)

DROPOUT_SCALE = KernelSpec(
    name="pitfall_dropout_scale", kernel_fn=dropout_rand_scaled_by_p, **_RAND
)

DROPOUT_RNG_FIXED = KernelSpec(
    name="pitfall_dropout_rng_fixed",
    kernel_fn=dropout,
    reference_fn=dropout_reference,
    make_inputs=_x_p_seed,
    jit=(_dropout_kernel,),
    **_SAME,
)
