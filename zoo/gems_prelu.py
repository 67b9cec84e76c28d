"""FlagGems prelu (flag-gems 5.0.2, flag_gems/ops/prelu.py): per-channel PReLU, elementwise.

The kernel is FlagGems' own, loaded unchanged from the installed package; kernel_fn launches it
as FlagGems' `prelu` does (contiguous inputs, channel count C and spatial size S, BLOCK_SIZE
1024, a cdiv grid) without its CUDA-only guard, so the interpreter can run it too.
"""

import torch
import triton
from _packages import flag_gems_op

prelu_kernel = flag_gems_op("prelu").prelu_kernel


def prelu(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    weight = weight.contiguous()
    out = torch.empty_like(x)
    n_elements = x.numel()
    C = x.shape[1]
    S = 1
    for d in x.shape[2:]:
        S *= d
    BLOCK_SIZE = 1024
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)  # noqa: E731
    prelu_kernel[grid](x, weight, out, n_elements, S, C, w_is_scalar=False, BLOCK_SIZE=BLOCK_SIZE)
    return out


kernel_fn = prelu


def reference_fn(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.prelu(x, weight)


def get_inputs() -> list[torch.Tensor]:
    # a ResNet stage's activations: batch 4, 64 channels, 56 x 56
    return [torch.randn(4, 64, 56, 56, device="cuda"), torch.rand(64, device="cuda") * 0.5]
