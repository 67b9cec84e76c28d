"""Liger-Kernel fused neighborhood attention forward (liger-kernel 0.8.5,
liger_kernel/ops/fused_neighborhood_attention.py): each query attends to the 7 keys around it.

kernel_fn is Liger's own autograd function, imported unchanged. It builds the neighborhood mask,
writes the full seq x seq score matrix (Q K^T, masked), softmaxes it in place of a fused online
softmax, and multiplies by V: four kernels, the scores through memory in between.
"""

import torch
from liger_kernel.ops.fused_neighborhood_attention import (
    LigerFusedNeighborhoodAttentionFunction,
    _fused_neighborhood_attention_av_kernel,
    _fused_neighborhood_attention_qk_kernel,
    _neighborhood_mask_kernel,
)
from liger_kernel.ops.softmax import _softmax_single_block_forward_kernel

__all__ = [  # what kernel_fn launches, for IR and resources
    "_fused_neighborhood_attention_av_kernel",
    "_fused_neighborhood_attention_qk_kernel",
    "_neighborhood_mask_kernel",
    "_softmax_single_block_forward_kernel",
]

KERNEL_SIZE = 7


def kernel_fn(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return LigerFusedNeighborhoodAttentionFunction.apply(q, k, v, KERNEL_SIZE)


def reference_fn(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    pos = torch.arange(q.shape[-2], device=q.device)
    near = (pos[:, None] - pos[None, :]).abs() <= KERNEL_SIZE // 2
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=near)


def get_inputs() -> list[torch.Tensor]:
    # batch 2, 8 heads, 1024 positions, head dim 64
    return [torch.randn(2, 8, 1024, 64, device="cuda", dtype=torch.bfloat16) for _ in range(3)]
