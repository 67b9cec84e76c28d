"""Register spills: a 256x128 fp32 accumulator held by too few warps, beside its fixed twin.

With 4 warps each thread owns 256x128/128 = 256 accumulator values, more than the 255
registers a thread may have, so ptxas moves part of the tile to local memory (spills) on every
arch. The twin runs the same tile with 8 warps: 128 values per thread, no spills.
"""

import torch

from kernels.matmul import _matmul_kernel, pointer_matmul
from workbench.catalog.spec import MATMUL_TOLERANCES, KernelSpec

# The library matmul's pointer body (kernels/matmul.py) with one fixed tile and no epilogue.
TILE = {"BLOCK_M": 256, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8, "num_stages": 3}


def _matmul(a: torch.Tensor, b: torch.Tensor, num_warps: int) -> torch.Tensor:
    c = torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
    pointer_matmul(a, b, c, None, False, **TILE, num_warps=num_warps)
    return c


def matmul_spilling(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return _matmul(a, b, num_warps=4)


def matmul_fixed(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return _matmul(a, b, num_warps=8)


def _inputs(shape, dtype, device):
    m, n, k = shape
    a = torch.randn((m, k), dtype=dtype, device=device)
    b = torch.randn((k, n), dtype=dtype, device=device)
    return a, b


def _flops(shape) -> float:
    m, n, k = shape
    return 2.0 * m * n * k


def _bytes(shape, esize: int) -> float:
    m, n, k = shape
    return float(m * k + k * n + m * n) * esize


SHAPES = {
    "regular": [(256, 128, 64)],
    "irregular": [(300, 200, 100)],
    "bench": [(4096, 4096, 4096)],
}
DTYPES = ("float16",)
# The rest of each spec: the twins differ in num_warps alone.
_SAME = {
    "reference_fn": torch.matmul,
    "make_inputs": _inputs,
    "tolerances": MATMUL_TOLERANCES,
    "flops": _flops,
    "bytes_moved": _bytes,
}

SPILL = KernelSpec(
    name="pitfall_spill",
    kernel_fn=matmul_spilling,
    shapes=SHAPES,
    dtypes=DTYPES,
    jit=(_matmul_kernel,),
    description="matmul, 256x128 fp32 tile on 4 warps: spills registers",
    **_SAME,
)

FIXED = KernelSpec(
    name="pitfall_spill_fixed",
    kernel_fn=matmul_fixed,
    shapes=SHAPES,
    dtypes=DTYPES,
    jit=(_matmul_kernel,),
    description="the same tile on 8 warps: no spills",
    **_SAME,
)
