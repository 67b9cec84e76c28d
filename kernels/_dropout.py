"""Dropout's random stream, shared by the kernels that drop and by their references.

The keep-mask is a function of (seed, p, shape) alone, never of block sizes, autotune configs
or the grid. A tensor is seen as R rows of C elements (R = 1 for a flat element-wise op). With
q = ceil(C / 4), element (r, c) is kept iff 32-bit word c // q of Philox4x32-10 at counter
r * q + c % q, keyed by the 64-bit seed, is >= round(p * 2**32). One Philox call thus decides
four elements, one in each quarter of the row, which a program reads as four contiguous
(coalesced) streams. One call per element would cost four times the integer work, enough to make
the fused kernels compute-bound in 16-bit dtypes.

The seed is a one-element int64 tensor on the device, read inside the kernel: no host sync, and
a new seed per step is drawn from torch's generator (`new_seed`) without leaving the device.

References cannot reproduce Triton's Philox stream with torch ops, so they call `keep_mask`, a
small Triton kernel built on the same `keep4`. A check of a fused kernel therefore verifies the
part that can go wrong there (indexing, masking, strides, scaling) against the documented
stream; the generator itself is Triton's, and tests check its keep rate.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from workbench.errors import fail

PHILOX_ROUNDS = tl.constexpr(10)


@triton.jit
def keep4(seed, counter, threshold):
    """The keep decisions of the four elements that Philox counter `counter` decides."""
    r0, r1, r2, r3 = tl.randint4x(seed, counter, PHILOX_ROUNDS)
    t = threshold.to(tl.uint32)
    return (
        r0.to(tl.uint32, bitcast=True) >= t,
        r1.to(tl.uint32, bitcast=True) >= t,
        r2.to(tl.uint32, bitcast=True) >= t,
        r3.to(tl.uint32, bitcast=True) >= t,
    )


@triton.jit
def _store_quarter(mask_ptr, row_ptr, i, quarter, n_cols, j: tl.constexpr, keep):
    cols = j * quarter + i
    tl.store(mask_ptr + row_ptr + cols, keep, mask=(i < quarter) & (cols < n_cols))


@triton.jit(do_not_specialize=["threshold"])
def _keep_mask_kernel(mask_ptr, seed_ptr, n_cols, quarter, threshold, BLOCK: tl.constexpr):
    # One flat grid axis (axis 1 and 2 stop at 65535 programs): row-major over row x block.
    pid = tl.program_id(0).to(tl.int64)
    blocks = tl.cdiv(quarter, BLOCK)
    row = pid // blocks
    i = (pid - row * blocks) * BLOCK + tl.arange(0, BLOCK)
    k0, k1, k2, k3 = keep4(tl.load(seed_ptr), row * quarter + i, threshold)
    base = row * n_cols
    _store_quarter(mask_ptr, base, i, quarter, n_cols, 0, k0)
    _store_quarter(mask_ptr, base, i, quarter, n_cols, 1, k1)
    _store_quarter(mask_ptr, base, i, quarter, n_cols, 2, k2)
    _store_quarter(mask_ptr, base, i, quarter, n_cols, 3, k3)


def threshold(p: float) -> int:
    """The keep threshold on a uniform 32-bit word; checks that p is a probability below 1."""
    if not 0.0 <= p < 1.0:
        raise fail(
            "bad-argument",
            f"dropout probability p={p} is outside [0, 1)",
            "pass 0 <= p < 1 (p = 1 drops everything: use torch.zeros_like instead)",
        )
    return min(round(p * 2**32), 2**32 - 1)


def quarter(n_cols: int) -> int:
    return max(1, -(-n_cols // 4))


def new_seed(device: torch.device | str) -> torch.Tensor:
    """A fresh seed drawn on the device from torch's generator (follows torch.manual_seed)."""
    return torch.randint(0, 2**62, (1,), dtype=torch.int64, device=device)


def keep_mask(seed: torch.Tensor, rows: int, cols: int, p: float) -> torch.Tensor:
    """The (rows, cols) boolean keep-mask of the stream described above."""
    mask = torch.empty((rows, cols), dtype=torch.bool, device=seed.device)
    if mask.numel():
        q, block = quarter(cols), 1024
        grid = (rows * triton.cdiv(q, block),)
        _keep_mask_kernel[grid](mask, seed, cols, q, threshold(p), BLOCK=block)
    return mask
