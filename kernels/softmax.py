"""Row softmax over the last dimension: one pass when a row fits one program, online when not.

`softmax` keeps each row in registers (one program per row): one read, one write, the floor.
Above `MAX_FUSED_COLS` a row no longer fits, and `softmax_online` takes over: persistent
programs (a few per SM), each walking its rows in chunks, one chunk loaded ahead. The first
pass keeps a running max and sum per group of a lane's 16-byte vector (the group reduced in the
lane's registers, one exponential per element, no shuffles inside the loop) and loads with
`evict_last`; the second pass walks the chunks backwards, so it starts on the ones read last,
which are the likeliest still in L2, and writes exp2(x - (max + log2(sum))): an FMA and an
exponential an element. At two bytes an element the arithmetic per byte doubles, so 16-bit
inputs need it that lean: on an H100 this pass-1 grouping and the folded divide took fp16 at
N = 64K from 0.74 to 0.91 of the measured copy bandwidth.

The second read is cheap only while the rows in flight fit in L2. Wide rows can therefore be
shared: with SPLIT > 1 (an autotune choice, so the GPU decides) a row goes to SPLIT programs,
each owning a contiguous segment, and the rows in flight shrink by that factor. The programs of
a row exchange their segments' (max, sum) through global memory and an arrival counter between
the two passes; they belong to one persistent grid whose blocks all fit at once (the configs
cap registers so), so none waits on a program that cannot start. The interpreter runs
programs one at a time, so there each row has one program.

Both read any row and column strides in place; the output is dense. Math in fp32 (exp2 of
log2-scaled inputs), one rounding on the way out.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import triton
import triton.language as tl

from workbench.catalog.spec import KernelSpec
from workbench.runtime.compat import autotune_configs
from workbench.runtime.errors import fail

MAX_FUSED_COLS = 16384
_LOG2E = tl.constexpr(math.log2(math.e))


def _whole_vectors(
    configs: list[triton.Config], named_args: dict, **kwargs: Any
) -> list[triton.Config]:
    """The warp counts whose lanes each get at least one 16-byte vector of the row: more warps
    leave lanes idle or split their vectors. On an H100 at 32768 x 1024 in 16 bits, 8 warps took
    59 us and 4 warps 50 us, as long as a copy of the same bytes; the autotuner had picked 8 for
    bfloat16 (0.81 of the copy bandwidth)."""
    row_bytes = int(kwargs["BLOCK_N"]) * named_args["x_ptr"].element_size()
    kept = [c for c in configs if c.num_warps * 32 * 16 <= row_bytes]
    return kept or [min(configs, key=lambda c: c.num_warps)]


@triton.autotune(
    configs=autotune_configs(
        [triton.Config({}, num_warps=w) for w in (4, 8, 16)], triton.Config({}, num_warps=4)
    ),
    key=["BLOCK_N"],  # the dtype joins the key by itself
    prune_configs_by={"early_config_prune": _whole_vectors},
)
@triton.jit
def _softmax_kernel(x_ptr, y_ptr, n_cols, stride_xm, stride_xn, stride_ym, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_xm + cols * stride_xn, mask=mask, other=-float("inf"))
    x = x.to(tl.float32) * _LOG2E
    e = tl.exp2(x - tl.max(x, axis=0))
    y = e / tl.sum(e, axis=0)
    tl.store(y_ptr + row * stride_ym + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


_MAX_SPLIT = tl.constexpr(8)
_REGISTERS = 65536
"""32-bit registers per SM on every NVIDIA GPU from Volta to Blackwell."""


def _config(block: int, warps: int, occ: int, split: int) -> triton.Config:
    """Programs that share a row (SPLIT > 1) spin until all of them arrive, so every program of
    the launch must be resident at once: such configs cap the registers so that OCC blocks fit
    an SM (Triton's maxnreg)."""
    cap = _REGISTERS // (occ * warps * 32) if split > 1 else None
    cfg = {"BLOCK": block, "OCC": occ, "SPLIT": split}
    return triton.Config(cfg, num_warps=warps, maxnreg=min(cap, 255) if cap else None)


def _online_configs() -> list[triton.Config]:
    """(chunk, warps, programs per SM, programs per row): the winners of a sweep of 27 on an
    H100 at N = 64K, 128K and 256K in each dtype, and the runner-up that was close everywhere.
    One program per row while the rows in flight fit in L2; 4-8 per row at 256K."""
    kept = [(16384, 32, 2, 1), (16384, 32, 1, 1), (16384, 16, 1, 1), (16384, 16, 2, 8),
            (16384, 16, 1, 4), (16384, 16, 1, 8), (16384, 32, 1, 4), (8192, 8, 2, 8)]  # fmt: skip
    return [_config(*c) for c in kept]


_ONLINE_CONFIGS = _online_configs()


def _fits(configs: list[triton.Config], named_args: dict, **kwargs: object) -> list[triton.Config]:
    """The capped configs whose chunk fits the cap: a lane holds its elements as fp32 and the
    next chunk as loaded, which must stay within 3/4 of its registers (an fp32 16384-element
    chunk on 16 warps spills under 64 registers: 0.43 of copy bandwidth on an H100)."""
    esize = named_args["x_ptr"].element_size()

    def fits(c: triton.Config) -> bool:
        lane = c.kwargs["BLOCK"] // (c.num_warps * 32)
        return c.maxnreg is None or lane * (4 + esize) <= 3 * c.maxnreg

    return [c for c in configs if fits(c)] or configs


_FLOOR = tl.constexpr(-3.0e38)
"""The running max's start: finite, so -inf inputs need no guard against -inf - (-inf)."""


@triton.jit
def _exchange(part_ptr, count_ptr, row, member, m, s, SPLIT: tl.constexpr):
    """The row's (max, sum of exp2(x - max)) from the SPLIT programs that share it. Each one
    publishes its segment's pair, counts itself in, and waits for the rest of its launch. The
    counters are never reset: every launch adds _MAX_SPLIT to a row's count whatever its SPLIT
    (each program adds _MAX_SPLIT // SPLIT), so a launch waits for the next multiple of
    _MAX_SPLIT, even after launches with another SPLIT on the same counters, as the autotuner
    makes."""
    slot = part_ptr + row * (2 * SPLIT)
    tl.store(slot + member, m)
    tl.store(slot + SPLIT + member, s)
    tl.debug_barrier()  # every thread's stores precede the release
    arrived = tl.atomic_add(count_ptr + row, _MAX_SPLIT // SPLIT, sem="release")
    arrived += _MAX_SPLIT // SPLIT
    everyone = tl.cdiv(arrived, _MAX_SPLIT) * _MAX_SPLIT
    while arrived < everyone:
        arrived = tl.atomic_add(count_ptr + row, 0, sem="acquire")
    ms = tl.load(slot + tl.arange(0, SPLIT), volatile=True)
    ss = tl.load(slot + SPLIT + tl.arange(0, SPLIT), volatile=True)
    row_max = tl.max(ms, axis=0)
    return row_max, tl.sum(ss * tl.exp2(ms - row_max), axis=0)


@triton.autotune(
    configs=autotune_configs(
        _ONLINE_CONFIGS,
        triton.Config({"BLOCK": 512, "OCC": 1, "SPLIT": 1}, num_warps=4),
    ),
    key=["n_cols"],  # the dtype joins the key by itself
    prune_configs_by={"early_config_prune": _fits},
)
@triton.jit
def _softmax_online_kernel(
    x_ptr,
    y_ptr,
    part_ptr,
    count_ptr,
    n_rows,
    n_cols,
    stride_xm,
    stride_xn,
    stride_ym,
    VEC: tl.constexpr,  # elements in 16 bytes: one vector load per lane group
    BLOCK: tl.constexpr,
    OCC: tl.constexpr,  # programs per SM, read by the grid function only
    SPLIT: tl.constexpr,  # programs per row
):
    member = tl.program_id(0) % SPLIT
    seg = tl.cdiv(tl.cdiv(n_cols, SPLIT), BLOCK) * BLOCK
    lo = member * seg
    # Segments are whole chunks, so a chunk never crosses into the next member's; the masks
    # compare with n_cols and segment bounds (multiples of BLOCK), never with min(lo + seg,
    # n_cols), whose unknown alignment would defeat vectorized loads.
    n_chunks = tl.cdiv(tl.minimum(lo + seg, n_cols) - lo, BLOCK)  # <= 0 past a narrow row's end
    # A chunk as BLOCK // VEC groups of VEC neighbours: a group is one lane's vector, so
    # reducing along it stays in that lane's registers.
    lanes = tl.arange(0, BLOCK // VEC)[:, None] * VEC + tl.arange(0, VEC)[None, :]
    for row in tl.range(tl.program_id(0) // SPLIT, n_rows, tl.num_programs(0) // SPLIT):
        x_row = x_ptr + tl.cast(row, tl.int64) * stride_xm
        y_row = y_ptr + tl.cast(row, tl.int64) * stride_ym
        # Pass 1, front to back. Each step loads the next chunk before using this one, so two
        # chunks are in flight per program (Triton pipelines no loads here by itself; its
        # num_stages pipelining through shared memory measured slower on the H100). Per group,
        # a running max m and the sum s of exp2(x - m): one exponential per element, and the
        # max, the rescale and the sum per group rather than per element, which 16-bit inputs
        # need: at two bytes an element, the arithmetic per byte doubles.
        m = tl.full([BLOCK // VEC], _FLOOR, tl.float32)
        s = tl.zeros([BLOCK // VEC], tl.float32)
        cols = lo + lanes
        ahead = tl.load(
            x_row + cols * stride_xn,
            mask=cols < n_cols,
            other=-float("inf"),
            eviction_policy="evict_last",
        )
        for _ in range(n_chunks):
            x = ahead
            cols += BLOCK
            ahead = tl.load(
                x_row + cols * stride_xn,
                mask=(cols < n_cols) & (cols < lo + seg),
                other=-float("inf"),
                eviction_policy="evict_last",
            )
            # The group max in the input's dtype (exact; two 16-bit lanes an instruction), the
            # log2(e) scale folded into the exponent's FMA.
            m_new = tl.maximum(m, tl.max(x, axis=1).to(tl.float32) * _LOG2E)
            e = tl.exp2(x.to(tl.float32) * _LOG2E - m_new[:, None])
            s = s * tl.exp2(m - m_new) + tl.sum(e, axis=1)
            m = m_new
        row_max = tl.max(m, axis=0)
        total = tl.sum(s * tl.exp2(m - row_max), axis=0)
        if SPLIT > 1:
            row_max, total = _exchange(part_ptr, count_ptr, row, member, row_max, total, SPLIT)
        # y = exp2(x - max) / total = exp2(x - (max + log2(total))): one FMA and one exponential.
        shift = row_max + tl.log2(total)
        # Pass 2, back to front: the chunks read last are the likeliest still in L2.
        cols = lo + (n_chunks - 1) * BLOCK + lanes
        ahead = tl.load(
            x_row + cols * stride_xn,
            mask=(cols >= lo) & (cols < n_cols),
            eviction_policy="evict_first",
        )
        for _ in range(n_chunks):
            x = ahead.to(tl.float32)
            out_cols = cols
            cols -= BLOCK
            ahead = tl.load(
                x_row + cols * stride_xn,
                mask=(cols >= lo) & (cols < n_cols),
                eviction_policy="evict_first",
            )
            y = tl.exp2(x * _LOG2E - shift)
            tl.store(y_row + out_cols, y.to(y_ptr.dtype.element_ty), mask=out_cols < n_cols)


def _rows(x: torch.Tensor) -> torch.Tensor:
    if x.ndim == 0:
        raise fail("bad-argument", "x is a 0-d tensor", "pass a tensor with a last dimension")
    return x.reshape(-1, x.shape[-1])


def softmax(x: torch.Tensor) -> torch.Tensor:
    """row softmax, one program per row held in registers: one read, one write.

    softmax(x, dim=-1); rows wider than MAX_FUSED_COLS go to `softmax_online`.
    """
    if x.ndim and x.shape[-1] > MAX_FUSED_COLS:
        return softmax_online(x)
    rows = _rows(x)
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    if y.numel():
        block = triton.next_power_of_2(rows.shape[1])
        _softmax_kernel[(rows.shape[0],)](
            rows, y, rows.shape[1], rows.stride(0), rows.stride(1), rows.shape[1], BLOCK_N=block
        )
    return y


def softmax_online(x: torch.Tensor) -> torch.Tensor:
    """row softmax for wide rows (up to 256K): persistent, two passes, L2-resident.

    softmax(x, dim=-1) for rows of any width.
    """
    rows = _rows(x)
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n_rows, n_cols = rows.shape
    if y.numel():
        # The interpreter gets a few programs, so each walks several rows.
        sms = torch.cuda.get_device_properties(x.device).multi_processor_count if x.is_cuda else 4
        # Where programs share rows (SPLIT > 1): their (max, sum) pairs and arrival counts.
        part = torch.empty(n_rows * 2 * _MAX_SPLIT.value, dtype=torch.float32, device=x.device)
        count = torch.zeros(n_rows, dtype=torch.int32, device=x.device)

        def grid(meta: dict) -> tuple[int]:
            return (min(n_rows, max(1, sms * meta["OCC"] // meta["SPLIT"])) * meta["SPLIT"],)

        _softmax_online_kernel[grid](
            rows, y, part, count, n_rows, n_cols, rows.stride(0), rows.stride(1), n_cols,
            VEC=16 // rows.element_size(),
        )  # fmt: skip
    return y


def _x(shape, dtype, device):
    return (torch.randn(shape, dtype=dtype, device=device),)


def _reference(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)


def _bytes(shape, esize) -> float:
    return 2.0 * math.prod(shape) * esize


SOFTMAX = KernelSpec(
    name="softmax",
    kernel_fn=softmax,
    reference_fn=_reference,
    make_inputs=_x,
    shapes={
        "regular": [(8, 256), (4, 2048)],
        "irregular": [(1, 1), (7, 1000), (3, 5, 33), (2, 16384)],
        "bench": [(32768, 4096), (8192, 8192), (32768, 1024)],
    },
    flops=lambda s: 5.0 * math.prod(s),
    bytes_moved=_bytes,
    jit=(_softmax_kernel,),
)

SOFTMAX_ONLINE = KernelSpec(
    name="softmax_online",
    kernel_fn=softmax_online,
    reference_fn=_reference,
    make_inputs=_x,
    shapes={
        "regular": [(4, 2048)],
        "irregular": [(1, 1), (9, 1000), (3, 2, 1537)],
        "bench": [(4096, 65536), (2048, 131072), (1024, 262144)],
    },
    flops=lambda s: 8.0 * math.prod(s),
    bytes_moved=_bytes,
    jit=(_softmax_online_kernel,),
)
