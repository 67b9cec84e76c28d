"""Attention forward on Hopper with warps specialized by hand, in Gluon (Triton's lower-level
language; its Hopper warp specialization in this form from Triton 3.6): what `tl` cannot say on
sm_90, where `tl.range(..., warp_specialize=True)` compiles to the same code as without it.

One program takes 64 query rows per consumer warpgroup, two of them at head_dim 128 and three
at 64 (FlashAttention-3's layout: the warp scheduler runs one's softmax beside the others'
`wgmma`), and one producer warp streams K and V through a ring of shared-memory slots by TMA.
Within a consumer, block j-1's p v runs on the tensor cores while block j's softmax does (FA3's
intra-warpgroup overlap). `setmaxnreg` moves registers from the producer to the consumers.
benchmarks/attention_gluon.py measured the choices on an H100: the overlap within a warpgroup
took d=128 from 0.90-0.94x SDPA to 1.02-1.10x; a third consumer took d=64 from 0.92-1.01x to
1.02-1.07x (three runs); ping-ponging the consumers' issue (an mbarrier turn) gained nothing
beyond the run-to-run spread; a third slot ranged wider than two (two are steady); 128 rows a
consumer with 64-key blocks, or 256-key blocks, lost at d=64.
"""

from __future__ import annotations

import math

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

from workbench.runtime import compat

_tma_load, _tma_store = compat.gluon_tma_copies()
ROWS = 64  # query rows a consumer warpgroup takes: one m64 wgmma
BLOCK_N = 128
STAGES = 2
CONSUMERS = {64: 3, 128: 2}
"""Consumer warpgroups a program runs at each head size: at d=64, where the matrix work per
score halves, a third softmax beside the other two's matrix work (FA3's choice there too)."""
REGISTERS = {2: (240, 168), 3: (160, 128)}
"""Consumers' registers a thread after `setmaxnreg`, and the launch's `maxnreg`. The warps round
up to whole warpgroups (4 + 4 + 1: three; 4 + 4 + 4 + 1: four) and launch at `maxnreg` each
(168 x 384 or 128 x 512 threads fit the 64K registers); `setmaxnreg` then moves registers to
the consumers from the producer (24): 2 x 128 x 240 + 128 x 24 and 3 x 128 x 160 + 128 x 24
fit too."""
LOG2E = 1.4426950408889634


@gluon.jit
def _load_q(q_desc, q_smem, q_ready, row_q, c: gl.constexpr):
    QROWS: gl.constexpr = q_smem.type.shape[1]
    mbarrier.expect(q_ready.index(c), q_desc.block_type.nbytes)
    _tma_load(q_desc, [row_q + c * QROWS, 0], q_ready.index(c), q_smem.index(c))


@gluon.jit
def _produce(q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, bars, row_q, q0, S, row_kv, n_blocks,
             RAGGED: gl.constexpr):  # fmt: skip
    """The producer warp: each consumer's Q rows that lie in the sequence once, then K and V
    block by block into the ring."""
    q_ready, k_ready, v_ready, k_empty, v_empty = bars
    NUM_STAGES: gl.constexpr = k_smem.type.shape[0]
    KEYS: gl.constexpr = k_smem.type.shape[1]
    CONSUMERS: gl.constexpr = q_smem.type.shape[0]
    QROWS: gl.constexpr = q_smem.type.shape[1]
    for c in gl.static_range(CONSUMERS):
        if RAGGED:
            if q0 + c * QROWS < S:  # past S would be the next head's rows
                _load_q(q_desc, q_smem, q_ready, row_q, c)
        else:
            _load_q(q_desc, q_smem, q_ready, row_q, c)
    for j in range(n_blocks):
        s = j % NUM_STAGES
        phase = (j // NUM_STAGES) & 1
        # a slot starts free: an mbarrier begins with the phase before its first complete
        mbarrier.wait(k_empty.index(s), phase ^ 1)
        mbarrier.expect(k_ready.index(s), k_desc.block_type.nbytes)
        _tma_load(k_desc, [row_kv + j * KEYS, 0], k_ready.index(s), k_smem.index(s))
        mbarrier.wait(v_empty.index(s), phase ^ 1)
        mbarrier.expect(v_ready.index(s), v_desc.block_type.nbytes)
        _tma_load(v_desc, [row_kv + j * KEYS, 0], v_ready.index(s), v_smem.index(s))


@gluon.jit
def _scores(q, k_smem, k_ready, j, zero):
    """Issue q k_j^T on the tensor cores (async) once block j's K has landed."""
    NUM_STAGES: gl.constexpr = k_smem.type.shape[0]
    s = j % NUM_STAGES
    mbarrier.wait(k_ready.index(s), (j // NUM_STAGES) & 1)
    return warpgroup_mma(q, k_smem.index(s).permute((1, 0)), zero, use_acc=False, is_async=True)


@gluon.jit
def _softmax(qk, m_i, l_i, qk_scale, q0, k0, CAUSAL: gl.constexpr):
    """One block of the online softmax: its probabilities and the rescale of what came before.
    q0 and k0 are the block's first query and key; causal, a block reaching past q0 masks the
    keys past each query."""
    if CAUSAL:
        QROWS: gl.constexpr = qk.type.shape[0]
        KEYS: gl.constexpr = qk.type.shape[1]
        if k0 + KEYS > q0:
            offs_m = q0 + gl.arange(0, QROWS, gl.SliceLayout(1, qk.type.layout))
            offs_n = k0 + gl.arange(0, KEYS, gl.SliceLayout(0, qk.type.layout))
            qk = gl.where(offs_m[:, None] >= offs_n[None, :], qk, float("-inf"))
    m_ij = gl.maximum(m_i, gl.max(qk, 1) * qk_scale)
    p = gl.exp2(qk * qk_scale - m_ij[:, None])
    alpha = gl.exp2(m_i - m_ij)
    l_i = l_i * alpha + gl.sum(p, 1)
    return p, alpha, m_ij, l_i


@gluon.jit
def _attend(half: gl.constexpr, o_desc, q_smem, k_smem, v_smem, bars, row_q, n, q0, qk_scale,
            CAUSAL: gl.constexpr):  # fmt: skip
    """One consumer warpgroup's rows (q0 on) over the first n K/V blocks: the online softmax, the
    output through its Q slot (Q is no longer read by then) and a TMA store."""
    q_ready, k_ready, v_ready, k_empty, v_empty = bars
    NUM_STAGES: gl.constexpr = k_smem.type.shape[0]
    KEYS: gl.constexpr = k_smem.type.shape[1]
    HEAD_DIM: gl.constexpr = k_smem.type.shape[2]
    QROWS: gl.constexpr = q_smem.type.shape[1]
    dtype: gl.constexpr = k_smem.dtype
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, KEYS, 16]
    )
    o_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, HEAD_DIM, 16]
    )
    p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=2)
    o_rows: gl.constexpr = gl.SliceLayout(1, o_layout)
    m_i = gl.full([QROWS], float("-inf"), gl.float32, gl.SliceLayout(1, s_layout))
    l_i = gl.zeros([QROWS], gl.float32, gl.SliceLayout(1, s_layout))
    acc = gl.zeros([QROWS, HEAD_DIM], gl.float32, o_layout)
    zero = gl.zeros([QROWS, KEYS], gl.float32, s_layout)
    q = q_smem.index(half)
    mbarrier.wait(q_ready.index(half), 0)
    qk = warpgroup_mma_wait(0, deps=(_scores(q, k_smem, k_ready, 0, zero),))
    mbarrier.arrive(k_empty.index(0), count=1)
    p, alpha, m_i, l_i = _softmax(qk, m_i, l_i, qk_scale, q0, 0, CAUSAL)
    p16 = gl.convert_layout(p.to(dtype), p_layout)
    for j in range(1, n):
        qk = _scores(q, k_smem, k_ready, j, zero)
        s = (j - 1) % NUM_STAGES
        mbarrier.wait(v_ready.index(s), ((j - 1) // NUM_STAGES) & 1)
        acc = warpgroup_mma(p16, v_smem.index(s), acc, is_async=True)
        qk = warpgroup_mma_wait(1, deps=(qk,))  # the scores, issued first, are done
        mbarrier.arrive(k_empty.index(j % NUM_STAGES), count=1)
        p, alpha, m_i, l_i = _softmax(qk, m_i, l_i, qk_scale, q0, j * KEYS, CAUSAL)
        acc, p16 = warpgroup_mma_wait(0, deps=(acc, p16))
        mbarrier.arrive(v_empty.index(s), count=1)
        acc = acc * gl.convert_layout(alpha, o_rows)[:, None]
        p16 = gl.convert_layout(p.to(dtype), p_layout)
    s = (n - 1) % NUM_STAGES
    mbarrier.wait(v_ready.index(s), ((n - 1) // NUM_STAGES) & 1)
    acc = warpgroup_mma(p16, v_smem.index(s), acc, is_async=True)
    acc, p16 = warpgroup_mma_wait(0, deps=(acc, p16))
    mbarrier.arrive(v_empty.index(s), count=1)
    acc = acc / gl.convert_layout(l_i, o_rows)[:, None]
    q.store(acc.to(dtype))
    fence_async_shared()
    _tma_store(o_desc, [row_q + half * QROWS, 0], q)
    tma.store_wait(0)


@gluon.jit
def _consume(half: gl.constexpr, o_desc, q_smem, k_smem, v_smem, bars, row_q, n_blocks, q0, S,
             qk_scale, CAUSAL: gl.constexpr, RAGGED: gl.constexpr):  # fmt: skip
    """One consumer warpgroup. Where some consumers sit blocks out (RAGGED: a program's tile
    overhangs the sequence; causal programs of more rows than a key block), rows past S and
    causal rows that end before the program's last block release the blocks they do not use, so
    that the ring moves on; elsewhere the code is the plain loop."""
    q_ready, k_ready, v_ready, k_empty, v_empty = bars
    NUM_STAGES: gl.constexpr = k_smem.type.shape[0]
    KEYS: gl.constexpr = k_smem.type.shape[1]
    CONSUMERS: gl.constexpr = q_smem.type.shape[0]
    QROWS: gl.constexpr = q_smem.type.shape[1]
    q0 = q0 + half * QROWS  # this consumer's first query in the sequence
    if RAGGED or (CAUSAL and CONSUMERS * QROWS > KEYS):
        n_mine = n_blocks
        if CAUSAL:
            n_mine = gl.cdiv(q0 + QROWS, KEYS)  # its last key block holds its last query
            if n_mine > n_blocks:
                n_mine = n_blocks
        if q0 >= S:
            n_mine = 0
        if n_mine > 0:
            _attend(half, o_desc, q_smem, k_smem, v_smem, bars, row_q, n_mine, q0, qk_scale, CAUSAL)
        for j in range(n_mine, n_blocks):
            # waiting for the block before releasing it keeps this release in the block's phase
            s = j % NUM_STAGES
            mbarrier.wait(k_ready.index(s), (j // NUM_STAGES) & 1)
            mbarrier.arrive(k_empty.index(s), count=1)
            mbarrier.wait(v_ready.index(s), (j // NUM_STAGES) & 1)
            mbarrier.arrive(v_empty.index(s), count=1)
    else:
        _attend(half, o_desc, q_smem, k_smem, v_smem, bars, row_q, n_blocks, q0, qk_scale, CAUSAL)


@gluon.jit
def _consume_0(o_desc, q_smem, k_smem, v_smem, bars, row_q, n_blocks, q0, S, qk_scale, CAUSAL,
               RAGGED):  # fmt: skip
    _consume(0, o_desc, q_smem, k_smem, v_smem, bars, row_q, n_blocks, q0, S, qk_scale, CAUSAL,
             RAGGED)  # fmt: skip


@gluon.jit
def _consume_1(o_desc, q_smem, k_smem, v_smem, bars, row_q, n_blocks, q0, S, qk_scale, CAUSAL,
               RAGGED):  # fmt: skip
    _consume(1, o_desc, q_smem, k_smem, v_smem, bars, row_q, n_blocks, q0, S, qk_scale, CAUSAL,
             RAGGED)  # fmt: skip


@gluon.jit
def _consume_2(o_desc, q_smem, k_smem, v_smem, bars, row_q, n_blocks, q0, S, qk_scale, CAUSAL,
               RAGGED):  # fmt: skip
    _consume(2, o_desc, q_smem, k_smem, v_smem, bars, row_q, n_blocks, q0, S, qk_scale, CAUSAL,
             RAGGED)  # fmt: skip


@gluon.jit
def attn_fwd_ws(q_desc, k_desc, v_desc, o_desc, qk_scale, S, CAUSAL: gl.constexpr,
                NUM_STAGES: gl.constexpr, CONSUMERS: gl.constexpr, REGS: gl.constexpr,
                RAGGED: gl.constexpr):  # fmt: skip
    KEYS: gl.constexpr = k_desc.block_type.shape[0]
    HEAD_DIM: gl.constexpr = k_desc.block_type.shape[1]
    QROWS: gl.constexpr = q_desc.block_type.shape[0]
    dtype: gl.constexpr = q_desc.dtype
    if CAUSAL:  # the longest rows first: the last wave is short programs
        pid_m = gl.num_programs(0) - 1 - gl.program_id(0)
    else:
        pid_m = gl.program_id(0)
    bh = gl.program_id(1)
    q0 = pid_m * (CONSUMERS * QROWS)
    row_q = bh * S + q0
    n_blocks = S // KEYS
    if CAUSAL:
        n_blocks = gl.cdiv(q0 + CONSUMERS * QROWS, KEYS)
        if RAGGED:  # the last tile overhangs the sequence
            if n_blocks > S // KEYS:
                n_blocks = S // KEYS
    q_smem = gl.allocate_shared_memory(dtype, [CONSUMERS, QROWS, HEAD_DIM], q_desc.layout)
    k_smem = gl.allocate_shared_memory(dtype, [NUM_STAGES, KEYS, HEAD_DIM], k_desc.layout)
    v_smem = gl.allocate_shared_memory(dtype, [NUM_STAGES, KEYS, HEAD_DIM], v_desc.layout)
    q_ready = gl.allocate_shared_memory(gl.int64, [CONSUMERS, 1], mbarrier.MBarrierLayout())
    k_ready = gl.allocate_shared_memory(gl.int64, [NUM_STAGES, 1], mbarrier.MBarrierLayout())
    v_ready = gl.allocate_shared_memory(gl.int64, [NUM_STAGES, 1], mbarrier.MBarrierLayout())
    k_empty = gl.allocate_shared_memory(gl.int64, [NUM_STAGES, 1], mbarrier.MBarrierLayout())
    v_empty = gl.allocate_shared_memory(gl.int64, [NUM_STAGES, 1], mbarrier.MBarrierLayout())
    for c in gl.static_range(CONSUMERS):
        mbarrier.init(q_ready.index(c), count=1)
    for s in gl.static_range(NUM_STAGES):
        mbarrier.init(k_ready.index(s), count=1)
        mbarrier.init(v_ready.index(s), count=1)
        mbarrier.init(k_empty.index(s), count=CONSUMERS)  # every consumer releases a slot
        mbarrier.init(v_empty.index(s), count=CONSUMERS)
    bars = (q_ready, k_ready, v_ready, k_empty, v_empty)
    consumer = (
        o_desc,
        q_smem,
        k_smem,
        v_smem,
        bars,
        row_q,
        n_blocks,
        q0,
        S,
        qk_scale,
        CAUSAL,
        RAGGED,
    )
    producer = (
        q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, bars, row_q, q0, S, bh * S, n_blocks, RAGGED
    )  # fmt: skip
    if CONSUMERS == 3:
        gl.warp_specialize(
            [(_consume_0, consumer), (_consume_1, consumer), (_consume_2, consumer),
             (_produce, producer)],
            [4, 4, 1],
            [REGS, REGS, 24],
        )  # fmt: skip
    else:
        gl.warp_specialize(
            [(_consume_0, consumer), (_consume_1, consumer), (_produce, producer)],
            [4, 1],
            [REGS, 24],
        )


def fits(q: torch.Tensor) -> bool:
    """The inputs this kernel takes: 16-bit (B, H, S, D) with S a multiple of 128 and D 64 or
    128 (the device and layout are the caller's to check)."""
    sixteen = q.dtype in (torch.float16, torch.bfloat16)
    return sixteen and q.shape[2] % BLOCK_N == 0 and q.shape[3] in (64, 128)


def launch_args(
    q, k, v, o, causal: bool, rows: int = ROWS, block_n: int = BLOCK_N, stages: int = STAGES,
    consumers: int | None = None,
) -> tuple[tuple, dict, tuple[int, int]]:  # fmt: skip
    """(args, kwargs, grid) of `attn_fwd_ws` for contiguous (B, H, S, D) tensors seen as
    (B * H * S, D): Q and O in tiles of `rows` (a consumer's), K and V in blocks of `block_n`
    keys, `stages` slots of each in the ring, `consumers` warpgroups (2 or 3) a program. S
    must be a multiple of rows and block_n."""
    B, H, S, D = q.shape
    consumers = consumers or CONSUMERS[D]
    kind = gl.float16 if q.dtype == torch.float16 else gl.bfloat16
    descs = []
    for i, t in enumerate((q, k, v, o)):
        tile = [rows if i in (0, 3) else block_n, D]
        layout = gl.NVMMASharedLayout.get_default_for(tile, kind)
        descs.append(TensorDescriptor.from_tensor(t.view(B * H * S, D), tile, layout))
    regs, maxnreg = REGISTERS[consumers]
    ragged = S % (consumers * rows) != 0  # the last program of a head overhangs it
    args = (*descs, LOG2E / math.sqrt(D), S, causal, stages, consumers, regs, ragged)
    grid = (triton.cdiv(S, consumers * rows), B * H)
    return args, {"num_warps": 4, "maxnreg": maxnreg}, grid


def attention(q, k, v, o, causal: bool, **tiles: int) -> None:
    """o = softmax(q k^T / sqrt(D)) v, causal or not, for tensors `fits` takes (`tiles`: those
    of `launch_args`)."""
    args, options, grid = launch_args(q, k, v, o, causal, **tiles)
    attn_fwd_ws[grid](*args, **options)
