"""FlagGems _safe_softmax (flag-gems 5.0.2, flag_gems/ops/_safe_softmax.py): row softmax, fp32 math.

The kernel is FlagGems' own, loaded unchanged from the installed package; kernel_fn launches it
as FlagGems' `_safe_softmax` does over the last dimension (a contiguous fp32 copy, one program
per row, BLOCK_SIZE = min(4096, next power of two of the row), the result cast back) without
its CUDA-only guard, so the interpreter can run it too. Rows wider than 4096 are beyond its
single block: the given rows are 1024 wide.
"""

import torch
from _packages import flag_gems_op

_safe_softmax_kernel = flag_gems_op("_safe_softmax")._safe_softmax_kernel


def safe_softmax(x: torch.Tensor) -> torch.Tensor:
    y = x.contiguous()
    n_cols = y.shape[-1]
    n_rows = y.numel() // n_cols
    y_fp32 = y.float()
    out_fp32 = torch.empty_like(y_fp32)
    BLOCK_SIZE = min(4096, 1 << (n_cols - 1).bit_length())
    grid = lambda meta: (n_rows,)  # noqa: E731
    _safe_softmax_kernel[grid](y_fp32, out_fp32, n_rows, n_cols, BLOCK_SIZE=BLOCK_SIZE)
    return out_fp32.to(x.dtype).view(*y.shape)


kernel_fn = safe_softmax


def reference_fn(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)


def get_inputs() -> list[torch.Tensor]:
    # attention scores: 4 heads x 64 queries over 1024 keys
    return [torch.randn(256, 1024, device="cuda")]
