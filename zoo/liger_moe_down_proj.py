"""Liger-Kernel's MoE down projection (liger-kernel 0.8.5): a grouped bf16 GEMM, autotuned.

`_fused_down_proj_kernel` (liger_kernel/ops/fused_moe_kernels.py, 32 configs, key H_dim and
I_dim) computes Y[rows of expert e] = post_act[rows] @ down_proj[e]^T for tokens already sorted
by expert. It is imported unchanged from the installed package; kernel_fn builds the routing
metadata Liger's `compute_routing_metadata` would give for tokens split evenly over the experts
in order (expert start offsets, one 64-row tile list) and launches the kernel as
`LigerFusedMoEFunction.forward` does. In Triton's interpreter Liger's own switch
LIGER_FUSED_MOE_AUTOTUNE=0 keeps its one fallback config: autotuning times configs on a GPU.
The routing metadata is made once per token count and kept, as Liger makes it once per forward
for both projections: built from Python lists on every call, its three host-to-device copies
would be timed as the kernel's and make a 0.1 ms GEMM look launch-bound.
"""

import functools
import os

if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
    os.environ.setdefault("LIGER_FUSED_MOE_AUTOTUNE", "0")

import torch  # noqa: E402
import triton  # noqa: E402
from liger_kernel.ops.fused_moe_kernels import _fused_down_proj_kernel  # noqa: E402

BLOCK_M_TOKEN = 64
"""liger_kernel.ops.fused_moe.BLOCK_M_TOKEN: the token tile the routing metadata is cut into."""


@functools.cache
def routing(tokens: int, experts: int, device: torch.device) -> tuple[torch.Tensor, ...]:
    """Expert start offsets (E + 1), and each 64-row tile's first row and expert, for `tokens`
    rows split evenly over `experts` in order."""
    counts = [tokens // experts + (e < tokens % experts) for e in range(experts)]
    starts = [0]
    for c in counts:
        starts.append(starts[-1] + c)
    rows, owners = [], []
    for e in range(experts):
        for r in range(starts[e], starts[e + 1], BLOCK_M_TOKEN):
            rows.append(r)
            owners.append(e)

    def ints(values: list[int]) -> torch.Tensor:
        return torch.tensor(values, dtype=torch.int32, device=device)

    return ints(starts), ints(rows), ints(owners)


def down_proj(kernel, post_act: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """Y = post_act @ weight[e]^T per expert, launched as LigerFusedMoEFunction launches it."""
    experts, H, intermediate_dim = weight.shape
    TK = post_act.shape[0]
    expert_start_idx, tile_row_start, tile_expert = routing(TK, experts, post_act.device)
    num_m_tiles = tile_row_start.shape[0]
    Y = torch.empty(TK, H, dtype=post_act.dtype, device=post_act.device)
    kernel[lambda meta: (num_m_tiles, triton.cdiv(H, meta["BLOCK_N"]))](
        post_act,
        weight,
        expert_start_idx,
        tile_row_start,
        tile_expert,
        Y,
        H_dim=H,
        I_dim=intermediate_dim,
        stride_post_TK=post_act.stride(0),
        stride_post_I=post_act.stride(1),
        stride_w_E=weight.stride(0),
        stride_w_H=weight.stride(1),
        stride_w_I=weight.stride(2),
        stride_Y_TK=Y.stride(0),
        stride_Y_H=Y.stride(1),
        BLOCK_M=BLOCK_M_TOKEN,
    )
    return Y


def kernel_fn(post_act: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return down_proj(_fused_down_proj_kernel, post_act, weight)


def reference_fn(post_act: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    starts, _, _ = routing(post_act.shape[0], weight.shape[0], torch.device("cpu"))
    bounds = starts.tolist()
    return torch.cat(
        [post_act[s:e] @ weight[i].T for i, (s, e) in enumerate(zip(bounds, bounds[1:]))]
    )


def get_inputs() -> list[torch.Tensor]:
    # 8 experts, 2048 routed tokens each; hidden 2048, expert intermediate 1024
    post_act = torch.randn(16384, 1024, device="cuda", dtype=torch.bfloat16)
    weight = torch.randn(8, 2048, 1024, device="cuda", dtype=torch.bfloat16) / 32
    return [post_act, weight]
