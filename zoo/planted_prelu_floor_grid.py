"""FlagGems prelu with one planted bug: its grid floors the size (n // BLOCK_SIZE programs).

A copy of gems_prelu.py that differs from it in the one line marked PLANTED: the last, partial
block is never launched, so the tail of the output stays unwritten whenever the size is not a
multiple of BLOCK_SIZE (the given inputs are; the derived, irregular ones are not).
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
    grid = lambda meta: (n_elements // meta["BLOCK_SIZE"],)  # noqa: E731  # PLANTED: floor, not cdiv
    prelu_kernel[grid](x, weight, out, n_elements, S, C, w_is_scalar=False, BLOCK_SIZE=BLOCK_SIZE)
    return out


kernel_fn = prelu


def reference_fn(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.prelu(x, weight)


def get_inputs() -> list[torch.Tensor]:
    # a ResNet stage's activations: batch 4, 64 channels, 56 x 56
    return [torch.randn(4, 64, 56, 56, device="cuda"), torch.rand(64, device="cuda") * 0.5]
