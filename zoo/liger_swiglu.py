"""Liger-Kernel SwiGLU forward (liger-kernel 0.8.5, liger_kernel/ops/swiglu.py): silu(a) * b.

kernel_fn is Liger's own autograd function, imported unchanged (it makes its inputs contiguous).
"""

import torch
from liger_kernel.ops.swiglu import LigerSiLUMulFunction, _swiglu_forward_kernel

__all__ = ["_swiglu_forward_kernel"]  # what kernel_fn launches, for IR and resources


def kernel_fn(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return LigerSiLUMulFunction.apply(a, b)


def reference_fn(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    # Liger rounds silu(a), computed in fp32, to b's dtype before the product
    return torch.nn.functional.silu(a.float()).to(b.dtype) * b


def get_inputs() -> list[torch.Tensor]:
    # a Llama MLP's gate and up projections: 4096 tokens, intermediate 11008
    a = torch.randn(4096, 11008, device="cuda", dtype=torch.bfloat16)
    return [a, torch.randn(4096, 11008, device="cuda", dtype=torch.bfloat16)]
