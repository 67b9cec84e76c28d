"""Liger-Kernel's MoE down projection with one planted bug: a config that spills.

A copy of liger_moe_down_proj.py's kernel that differs from Liger's in the one line marked
PLANTED: its one config is a 64 x 256 fp32 tile over 2 warps (BLOCK_N=256, BLOCK_K=128, num_warps=2):
256 accumulator registers per thread alone, past the 255 a thread can have, so registers spill
to local memory. Results stay right; the time goes to local-memory traffic.
"""

# _fused_down_proj_kernel below is copied verbatim from liger-kernel 0.8.5,
# liger_kernel/ops/fused_moe_kernels.py, but for the line marked PLANTED.
# Copyright 2024 LinkedIn Corporation. BSD 2-Clause License: see zoo/LICENSE-liger-kernel.

import torch
import triton
import triton.language as tl
from liger_moe_down_proj import down_proj, get_inputs, reference_fn

__all__ = ["get_inputs", "reference_fn"]


# fmt: off
@triton.autotune(
    configs=[triton.Config({"BLOCK_N": 256, "BLOCK_K": 128}, num_warps=2, num_stages=2)],  # PLANTED: a spilling config
    key=["H_dim", "I_dim"],
)
@triton.jit
def _fused_down_proj_kernel(
    post_act_ptr,  # (TK, I)
    down_proj_ptr,  # (E, H, I)
    expert_start_ptr,  # (E+1,) int32
    tile_row_start_ptr,  # (num_m_tiles,) int32
    tile_expert_ptr,  # (num_m_tiles,) int32
    Y_ptr,  # (TK, H)
    H_dim: tl.constexpr,
    I_dim: tl.constexpr,
    stride_post_TK,
    stride_post_I: tl.constexpr,
    stride_w_E,
    stride_w_H,
    stride_w_I: tl.constexpr,
    stride_Y_TK,
    stride_Y_H: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    """Grid: (num_m_tiles, ceil(H/BLOCK_N)).
    Each CTA: one (BLOCK_M, BLOCK_N) tile of Y = post_act @ down_proj[e]^T."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)

    row_start = tl.load(tile_row_start_ptr + pid_m)
    # int64 prevents expert_idx * stride_w_E overflow at large E*I*H (see #1246).
    expert_idx = tl.load(tile_expert_ptr + pid_m).to(tl.int64)
    n_start = pid_n * BLOCK_N
    expert_end = tl.load(expert_start_ptr + expert_idx + 1)

    m_offs = tl.arange(0, BLOCK_M)
    n_offs = tl.arange(0, BLOCK_N)
    k_offs = tl.arange(0, BLOCK_K)

    # int64 prevents row_offs * stride overflow when TK is large (see #1246).
    row_offs = (row_start + m_offs).to(tl.int64)
    row_mask = row_offs < expert_end
    n_idx = n_start + n_offs
    n_mask = n_idx < H_dim

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)

    for k in tl.range(0, I_dim, BLOCK_K):
        k_idx = k + k_offs
        k_mask = k_idx < I_dim

        a_ptrs = post_act_ptr + row_offs[:, None] * stride_post_TK + k_idx[None, :] * stride_post_I
        # Keep bf16 for dot operands → tensor cores. acc stays fp32.
        a_tile = tl.load(a_ptrs, mask=row_mask[:, None] & k_mask[None, :], other=0.0)

        w_ptrs = down_proj_ptr + expert_idx * stride_w_E + n_idx[:, None] * stride_w_H + k_idx[None, :] * stride_w_I
        w_tile = tl.load(
            w_ptrs,
            mask=n_mask[:, None] & k_mask[None, :],
            other=0.0,
        )

        acc = tl.dot(a_tile, tl.trans(w_tile), acc=acc)

    Y_ptrs = Y_ptr + row_offs[:, None] * stride_Y_TK + n_idx[None, :] * stride_Y_H
    tl.store(Y_ptrs, acc.to(Y_ptr.dtype.element_ty), mask=row_mask[:, None] & n_mask[None, :])
# fmt: on


def kernel_fn(post_act: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return down_proj(_fused_down_proj_kernel, post_act, weight)
