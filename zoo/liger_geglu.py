"""Liger-Kernel GeGLU forward (liger-kernel 0.8.5, liger_kernel/ops/geglu.py): gelu_tanh(a) * b.

kernel_fn is Liger's own autograd function, imported unchanged (it makes its inputs contiguous).
"""

import torch
from liger_kernel.ops.geglu import LigerGELUMulFunction, _geglu_tanh_forward_kernel

__all__ = ["_geglu_tanh_forward_kernel"]  # what kernel_fn launches, for IR and resources


def kernel_fn(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return LigerGELUMulFunction.apply(a, b)


def reference_fn(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    # Liger rounds gelu(a), computed in fp32, to a's dtype before the product
    return torch.nn.functional.gelu(a.float(), approximate="tanh").to(a.dtype) * b


def get_inputs() -> list[torch.Tensor]:
    # a Gemma MLP's gate and up projections: 4096 tokens, intermediate 16384
    a = torch.randn(4096, 16384, device="cuda", dtype=torch.bfloat16)
    return [a, torch.randn(4096, 16384, device="cuda", dtype=torch.bfloat16)]
