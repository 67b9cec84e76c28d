"""Liger-Kernel LayerNorm forward (liger-kernel 0.8.5, liger_kernel/ops/layer_norm.py).

kernel_fn is Liger's own autograd function, imported unchanged (it makes its inputs contiguous).
"""

import torch
from liger_kernel.ops.layer_norm import LigerLayerNormFunction, _layer_norm_forward_kernel

__all__ = ["_layer_norm_forward_kernel"]  # what kernel_fn launches, for IR and resources

EPS = 1e-5


def kernel_fn(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return LigerLayerNormFunction.apply(x, weight, bias, EPS)


def reference_fn(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), weight, bias, EPS)


def get_inputs() -> list[torch.Tensor]:
    # a transformer's hidden state: 4096 tokens, hidden 4096
    x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    weight = 1 + 0.1 * torch.randn(4096, device="cuda", dtype=torch.bfloat16)
    return [x, weight, 0.1 * torch.randn(4096, device="cuda", dtype=torch.bfloat16)]
