"""FlagGems prelu with one planted bug: it assumes contiguous inputs (no .contiguous()).

A copy of gems_prelu.py that differs from it in the one line marked PLANTED: the kernel walks x
as one flat array, so a strided x (every other column of a wider buffer) is read from the wrong
addresses, gaps included.
"""

import torch
import triton
from _packages import flag_gems_op

prelu_kernel = flag_gems_op("prelu").prelu_kernel


def prelu(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    x = x  # PLANTED: .contiguous() dropped
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
