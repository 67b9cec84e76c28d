"""Dropout's random stream, shared by the kernels that drop and by their references.

The keep-mask is a function of (seed, p, shape) alone, never of block sizes, autotune configs
or the grid. A tensor is seen as R rows of C elements (R = 1 for a flat element-wise op). One
Philox4x32-10 call, keyed by the 64-bit seed, decides 8 consecutive elements of a row through
the 16-bit halves of its four 32-bit words: element (r, c) uses counter r * ceil(C / 8) + c // 8,
and its random value is half (c % 8) % 2 (0 = the low half) of word (c % 8) // 2. The element
is kept iff that value is >= threshold = min(round(p * 65536), 65535).

Why this shape: a thread that loads 8 consecutive 16-bit elements (one 16-byte access) makes
exactly the one Philox call that decides them, in the layout of the load, so no data moves
between threads; and one call per 8 elements rather than per element or per 4 keeps the
generator's integer work small enough for the 16-bit fused kernels to stay memory-bound. The
price is a keep probability quantized to 1/65536: the rate is 1 - threshold / 65536, and kept
values are scaled by its inverse (`scale`), so the expectation is exactly preserved.

The seed is a one-element int64 tensor on the device, read inside the kernel: no host sync, and
a new seed per step is drawn from torch's generator (`new_seed`) without leaving the device.

References cannot reproduce Triton's Philox stream with torch ops, so they call `keep_mask`, a
small Triton kernel built on the same `keep8`. A check of a fused kernel therefore verifies the
part that can go wrong there (indexing, masking, strides, scaling) against the documented
stream; the generator itself is Triton's, and tests check its keep rate and element order.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from workbench.runtime.errors import fail

PHILOX_ROUNDS = tl.constexpr(10)


@triton.jit
def keep8(seed, counter0, threshold, BLOCK: tl.constexpr):
    """Keep decisions of BLOCK (a multiple of 8) consecutive elements of one row, the first
    being element 0 of counter `counter0`."""
    r0, r1, r2, r3 = tl.randint4x(seed, counter0 + tl.arange(0, BLOCK // 8), PHILOX_ROUNDS)
    # join puts its operands side by side on a new minor axis: [i, j, k] = word 2j + k, so the
    # flat order within a counter is words 0, 1, 2, 3, and then low half before high half.
    words = tl.join(tl.join(r0, r2), tl.join(r1, r3))
    w = tl.reshape(words, (BLOCK // 2,)).to(tl.uint32, bitcast=True)
    t = threshold.to(tl.uint32)
    return tl.reshape(tl.join((w & 0xFFFF) >= t, (w >> 16) >= t), (BLOCK,))


@triton.jit(do_not_specialize=["threshold"])
def _keep_mask_kernel(mask_ptr, seed_ptr, n_cols, threshold, BLOCK: tl.constexpr):
    # One flat grid axis (axis 1 and 2 stop at 65535 programs): row-major over row x block.
    pid = tl.program_id(0).to(tl.int64)
    blocks = tl.cdiv(n_cols, BLOCK)
    row = pid // blocks
    start = (pid - row * blocks) * BLOCK
    counter0 = row * tl.cdiv(n_cols, 8) + start // 8
    keep = keep8(tl.load(seed_ptr), counter0, threshold, BLOCK)
    cols = start + tl.arange(0, BLOCK)
    tl.store(mask_ptr + row * n_cols + cols, keep, mask=cols < n_cols)


def threshold(p: float) -> int:
    """The keep threshold on a uniform 16-bit value; checks that p is a probability below 1."""
    if not 0.0 <= p < 1.0:
        raise fail(
            "bad-argument",
            f"dropout probability p={p} is outside [0, 1)",
            "pass 0 <= p < 1 (p = 1 drops everything: use torch.zeros_like instead)",
        )
    return min(round(p * 65536), 65535)


def scale(threshold: int) -> float:
    """The factor on kept values: 1 / keep rate, the rate the 16-bit threshold really gives."""
    return 65536 / (65536 - threshold)


def new_seed(device: torch.device | str) -> torch.Tensor:
    """A fresh seed drawn on the device from torch's generator (follows torch.manual_seed)."""
    return torch.randint(0, 2**62, (1,), dtype=torch.int64, device=device)


def keep_mask(seed: torch.Tensor, rows: int, cols: int, p: float) -> torch.Tensor:
    """The (rows, cols) boolean keep-mask of the stream described above."""
    mask = torch.empty((rows, cols), dtype=torch.bool, device=seed.device)
    if mask.numel():
        block = min(1024, max(8, triton.next_power_of_2(cols)))
        grid = (rows * triton.cdiv(cols, block),)
        _keep_mask_kernel[grid](mask, seed, cols, threshold(p), BLOCK=block)
    return mask
