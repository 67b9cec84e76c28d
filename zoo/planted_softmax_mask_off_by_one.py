"""FlagGems _safe_softmax with one planted bug: its column mask is off by one (<= for <).

A copy of gems_safe_softmax.py whose kernel differs from FlagGems' in the one line marked
PLANTED. Where the row width is a power of two the block ends at the row's end and the extra
column is outside it; elsewhere (the derived, irregular widths) each row also reads and writes
the next row's first element, past the end on the last row.
"""

import torch
import triton
import triton.language as tl

# _safe_softmax_kernel below is copied verbatim from flag-gems 5.0.2, flag_gems/ops/_safe_softmax.py,
# but for the line marked PLANTED. Apache License 2.0: see zoo/LICENSE-flag-gems.


# fmt: off
@triton.jit
def _safe_softmax_kernel(
    input_ptr, output_ptr, n_rows, n_cols, BLOCK_SIZE: tl.constexpr
):
    row_id = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols <= n_cols  # PLANTED: <= for <

    row_offset = row_id * n_cols
    x = tl.load(input_ptr + row_offset + cols, mask=mask, other=-float("inf"))
    x_fp32 = x.to(tl.float32)

    x_max = tl.max(x_fp32, axis=0)
    all_neginf = x_max == -float("inf")

    x_shifted = x_fp32 - x_max
    exp_x = tl.exp(x_shifted)
    sum_exp = tl.sum(exp_x, axis=0)
    softmax = exp_x / sum_exp

    softmax = tl.where(all_neginf, tl.zeros([BLOCK_SIZE], dtype=tl.float32), softmax)

    tl.store(output_ptr + row_offset + cols, softmax, mask=mask)
# fmt: on


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
