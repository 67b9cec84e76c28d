"""A shared-memory race: blocks reversed through shared memory in hand-written PTX with no
barrier between the writes and the reads, beside its fixed twin (GPU only).

Triton orders the shared memory it manages itself (layout conversions, reductions, the
operands of tl.dot) with the barriers it needs; a Triton kernel reaches shared memory
unsynchronised only through inline PTX, where the habits of CUDA come in. Each thread of the
block (one element each: BLOCK = 32 x num_warps) stores its element at its own slot of a
shared array and loads the element of the mirrored thread, which runs in another warp: without
`bar.sync` between the store and the load it may read the slot before that warp wrote it.
Whether the output shows it depends on warp scheduling; compute-sanitizer's racecheck sees the
read-after-write hazard every time, at the line of the asm. The twin has the barrier. The
interpreter cannot run inline PTX, so both are checked on a GPU only.
"""

import math

import torch
import triton
import triton.language as tl

from workbench.catalog.spec import KernelSpec

WARPS = 4
BLOCK = 32 * WARPS
_STAGE = (
    "{ .shared .align 4 .b8 stage[512]; .reg .u32 a, b; mov.u32 a, stage; "
    "mad.lo.u32 b, $1, 4, a; st.shared.f32 [b], $2; "
)
_MIRROR = "sub.u32 b, 127, $1; mad.lo.u32 b, b, 4, a; ld.shared.f32 $0, [b]; }"
RACY = tl.constexpr(_STAGE + _MIRROR)
SYNCED = tl.constexpr(_STAGE + "bar.sync 0; " + _MIRROR)


@triton.jit
def _reverse_racy_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    lane = tl.arange(0, BLOCK)
    y = tl.inline_asm_elementwise(RACY, "=f,r,f", [lane, x], tl.float32, is_pure=False, pack=1)
    tl.store(y_ptr + offs, y)


@triton.jit
def _reverse_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    lane = tl.arange(0, BLOCK)
    y = tl.inline_asm_elementwise(SYNCED, "=f,r,f", [lane, x], tl.float32, is_pure=False, pack=1)
    tl.store(y_ptr + offs, y)


def _launch(kernel, x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    y = torch.empty_like(x)
    kernel[(x.numel() // BLOCK,)](x, y, BLOCK=BLOCK, num_warps=WARPS)
    return y


def reverse_racy(x: torch.Tensor) -> torch.Tensor:
    """Each 128-element block reversed through shared memory, no barrier: a race."""
    return _launch(_reverse_racy_kernel, x)


def reverse(x: torch.Tensor) -> torch.Tensor:
    """Each 128-element block reversed through shared memory, bar.sync between."""
    return _launch(_reverse_kernel, x)


def _reference(x: torch.Tensor) -> torch.Tensor:
    return x.reshape(-1, BLOCK).flip(-1).reshape(x.shape)


def _x(shape, dtype, device):
    return (torch.randn(shape, dtype=dtype, device=device),)


SHAPES = {"regular": [(4096,), (64, 128)], "bench": [(1 << 26,)]}  # multiples of BLOCK
_SAME = {
    "shapes": SHAPES,
    "dtypes": ("float32",),
    "reference_fn": _reference,
    "make_inputs": _x,
    "bytes_moved": lambda s, esize: 2.0 * math.prod(s) * esize,
}

RACE = KernelSpec(name="pitfall_race", kernel_fn=reverse_racy, jit=(_reverse_racy_kernel,), **_SAME)

RACE_FIXED = KernelSpec(
    name="pitfall_race_fixed", kernel_fn=reverse, jit=(_reverse_kernel,), **_SAME
)
