"""Register spills: a 256x128 fp32 accumulator held by too few warps, beside its fixed twin.

With 4 warps each thread owns 256x128/128 = 256 accumulator values, more than the 255
registers a thread may have, so ptxas moves part of the tile to local memory (spills) on every
arch. The twin runs the same tile with 8 warps: 128 values per thread, no spills.
"""

import torch

from kernels.matmul import PLAIN_MATMUL, _matmul_kernel, pointer_matmul
from workbench.catalog.spec import KernelSpec

# The library matmul's pointer body (kernels/matmul.py) with one fixed tile and no epilogue.
TILE = {"BLOCK_M": 256, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8, "num_stages": 3}


def _matmul(a: torch.Tensor, b: torch.Tensor, num_warps: int) -> torch.Tensor:
    c = torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
    pointer_matmul(a, b, c, None, False, **TILE, num_warps=num_warps)
    return c


def matmul_spilling(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """matmul, 256x128 fp32 tile on 4 warps: spills registers."""
    return _matmul(a, b, num_warps=4)


def matmul_fixed(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """the same tile on 8 warps: no spills."""
    return _matmul(a, b, num_warps=8)


SHAPES = {
    "regular": [(256, 128, 64)],
    "irregular": [(300, 200, 100)],
    "bench": [(4096, 4096, 4096)],
}
DTYPES = ("float16",)
# The rest of each spec: the twins differ in num_warps alone.
_SAME = {**PLAIN_MATMUL, "shapes": SHAPES, "dtypes": DTYPES, "jit": (_matmul_kernel,)}

SPILL = KernelSpec(name="pitfall_spill", kernel_fn=matmul_spilling, **_SAME)

FIXED = KernelSpec(name="pitfall_spill_fixed", kernel_fn=matmul_fixed, **_SAME)
