"""fla-core's causal attention forward (fla-core 0.6.0, fla/ops/attn/parallel.py): flash attention.

kernel_fn is fla's own `parallel_attn`, imported unchanged: queries, keys and values laid out
[batch, seq, heads, head_dim], a causal mask, softmax in base 2 with the 1/sqrt(d) scale, one
program per 128-query block and head; it picks its tile by the GPU's shared memory (64 keys a
step and 8 warps on a Hopper).
"""

import torch
from fla.ops.attn.parallel import parallel_attn, parallel_attn_fwd_kernel

__all__ = ["parallel_attn_fwd_kernel"]  # what kernel_fn launches, for IR and resources


def kernel_fn(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return parallel_attn(q, k, v)


def reference_fn(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    out = torch.nn.functional.scaled_dot_product_attention(
        q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True
    )
    return out.transpose(1, 2)


def get_inputs() -> list[torch.Tensor]:
    # batch 4, 4096 positions, 32 heads of 128: a 7B model's attention at 4k context
    return [torch.randn(4, 4096, 32, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3)]
