"""Liger-Kernel RMSNorm forward (liger-kernel 0.8.5, liger_kernel/ops/rms_norm.py), Llama casting.

kernel_fn is Liger's own autograd function, imported unchanged: it makes its inputs contiguous,
normalizes each row in fp32 and casts back before the weight (casting_mode "llama").
"""

import torch
from liger_kernel.ops.rms_norm import LigerRMSNormFunction, _rms_norm_forward_kernel

__all__ = ["_rms_norm_forward_kernel"]  # what kernel_fn launches, for IR and resources

EPS = 1e-6


def kernel_fn(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return LigerRMSNormFunction.apply(x, weight, EPS)


def reference_fn(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    normed = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + EPS)
    return normed.to(x.dtype) * weight


def get_inputs() -> list[torch.Tensor]:
    # a Llama-style hidden state: 4 sequences of 1024 tokens, hidden 4096
    x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    return [x, 1 + 0.1 * torch.randn(4096, device="cuda", dtype=torch.bfloat16)]
