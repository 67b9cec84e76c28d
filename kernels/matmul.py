"""Tiled matmul with grouped (L2-friendly) program order, and the same GEMM with bias + GELU.

C = A @ B accumulates in fp32 (fp16/bf16 inputs on the tensor cores; fp32 inputs in TF32, as
cuBLAS does by default). Programs are numbered down GROUP_M tile rows before moving right, so
the B columns a group needs stay in L2 while its A rows are read once.

Two paths share the tile order and the epilogue: on Hopper, contiguous 16-bit operands with
16-byte aligned rows go through TMA descriptors (bulk tile copies, no address arithmetic in the
loop) in a persistent grid; everything else (strided views, odd strides, fp32, the interpreter)
through pointer loads masked along K.
"""

import functools
import math

import torch
import triton
import triton.language as tl

from workbench.catalog.spec import MATMUL_TOLERANCES, KernelSpec
from workbench.runtime import compat
from workbench.runtime.errors import fail

# tanh-GELU = 0.5 x (1 + tanh(u)) = x * sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3).
# With exp2: x / (1 + 2^(-(A x + B x^3))), A = 2 sqrt(2/pi) log2(e), B = 0.044715 A.
_GELU_A = tl.constexpr(2.0 * math.sqrt(2.0 / math.pi) * math.log2(math.e))
_GELU_B = tl.constexpr(0.044715 * _GELU_A.value)
# The same with tanh itself: u = C x + D x^3.
_GELU_C = tl.constexpr(math.sqrt(2.0 / math.pi))
_GELU_D = tl.constexpr(0.044715 * _GELU_C.value)


def _cfg(bm: int, bn: int, bk: int, warps: int, stages: int, **extra: int) -> triton.Config:
    kw = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8, **extra}
    return triton.Config(kw, num_warps=warps, num_stages=stages)


# Largest first. Big tiles with 8 warps and 3-4 stages feed Hopper's wgmma; the small ones
# serve skinny or small problems (_prune relies on this order). 256 x 128 on 8 warps and
# 128 x 128 on 4 warps are left out: their accumulators spill on sm_90.
_POINTER_CONFIGS = [
    _cfg(128, 256, 64, 8, 3),
    _cfg(128, 256, 64, 8, 4),
    _cfg(128, 128, 64, 8, 4),
    _cfg(128, 128, 64, 8, 3),
    _cfg(64, 256, 32, 4, 4),
    _cfg(128, 64, 32, 4, 4),
    _cfg(64, 128, 32, 4, 4),
    _cfg(64, 64, 32, 4, 5),
    _cfg(32, 64, 32, 4, 5),
]
_INTERPRETER_CONFIG = _cfg(32, 32, 32, 4, 1)


def _prune(configs: list[triton.Config], named_args: dict, **_: object) -> list[triton.Config]:
    """Drop tiles more than twice as tall or wide as the problem; small problems, bound by
    launch latency, get the smallest tile untimed (one compile per shape instead of many)."""
    M, N, K = named_args["M"], named_args["N"], named_args["K"]
    m_cap = max(32, 2 * triton.next_power_of_2(M))
    n_cap = max(32, 2 * triton.next_power_of_2(N))
    fit = [c for c in configs if c.kwargs["BLOCK_M"] <= m_cap and c.kwargs["BLOCK_N"] <= n_cap]
    fit = fit or configs[-1:]
    return fit[-1:] if M * N * K < 1 << 24 else fit


@triton.jit
def _tile_coords(tile, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """(pid_m, pid_n) of a tile number in grouped order: GROUP_M rows of tiles, column by column."""
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    width = GROUP_M * grid_n
    first_m = (tile // width) * GROUP_M
    rows = tl.minimum(grid_m - first_m, GROUP_M)
    pid_m = first_m + (tile % width) % rows
    pid_n = (tile % width) // rows
    return pid_m, pid_n


@triton.jit
def _epilogue(
    acc,
    bias_ptr,
    stride_bias,
    offs_n,
    N,
    HAS_BIAS: tl.constexpr,
    GELU: tl.constexpr,
    FAST_TANH: tl.constexpr,
):
    """Bias add and tanh-GELU on the fp32 accumulator, before the one rounding to the output.

    The epilogue is not overlapped with the next tile's loads, so its instruction count shows
    in the GEMM's time. FAST_TANH (GPU only: the interpreter has no inline PTX) uses the
    hardware tanh, one MUFU op (max relative error 2^-11), instead of exp2 + reciprocal with
    their range fix-ups, about 20 instructions per element.
    """
    if HAS_BIAS:
        bias = tl.load(bias_ptr + offs_n * stride_bias, mask=offs_n < N, other=0.0)
        acc += bias.to(tl.float32)[None, :]
    if GELU:
        if FAST_TANH:
            u = acc * (_GELU_C + _GELU_D * acc * acc)
            t = tl.inline_asm_elementwise(
                "tanh.approx.f32 $0, $1;", "=r,r", [u], dtype=tl.float32, is_pure=True, pack=1
            )
            half = 0.5 * acc
            acc = half + half * t
        else:
            z = acc * (_GELU_A + _GELU_B * acc * acc)
            acc = acc / (1.0 + tl.math.exp2(-z))
    return acc


@triton.jit
def _matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    bias_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    stride_bias,
    HAS_BIAS: tl.constexpr,
    GELU: tl.constexpr,
    FAST_TANH: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    pid_m, pid_n = _tile_coords(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    # Rows/columns past the edge wrap to valid ones (their results are never stored), so the
    # loads need a mask along K only; % keeps the contiguity the vectorizer needs when M, N
    # are multiples of 16.
    rows = offs_m % M
    cols = offs_n % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rows[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + cols[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        k_left = K - k
        a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    acc = _epilogue(acc, bias_ptr, stride_bias, offs_n, N, HAS_BIAS, GELU, FAST_TANH)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=mask)


# The pointer body, autotuned; pointer_matmul launches the bare body when given a config.
_matmul_tuned = triton.autotune(
    configs=compat.autotune_configs(_POINTER_CONFIGS, _INTERPRETER_CONFIG),
    key=["M", "N", "K", "HAS_BIAS", "GELU"],
    prune_configs_by={"early_config_prune": _prune},
)(_matmul_kernel)


def _set_blocks(nargs: dict) -> None:
    """Config pre-hook: a host TMA descriptor carries its tile shape, so set it per config."""
    bm, bn, bk = nargs["BLOCK_M"], nargs["BLOCK_N"], nargs["BLOCK_K"]
    nargs["a_desc"].block_shape = [bm, bk]
    nargs["b_desc"].block_shape = [bk, bn]
    nargs["c_desc"].block_shape = [bm, bn // nargs["EPILOGUE_SPLIT"]]


def _tma_cfg(
    bm: int, bn: int, bk: int, warps: int, stages: int, split: int, flatten: bool
) -> triton.Config:
    kw = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8, "EPILOGUE_SPLIT": split}
    kw["FLATTEN"] = flatten
    return triton.Config(kw, num_warps=warps, num_stages=stages, pre_hook=_set_blocks)


# Largest first (_prune relies on it). Shared memory per stage is (BM + BN) * BK * 2 bytes, and
# the output tile is staged for the TMA store in BM * BN / EPILOGUE_SPLIT * 2 more: all fit in
# Hopper's 227 KB. On an H100 (bf16, 4096^3 and 8192^3) 128 x 256 x 64 on 8 warps won by 5-25 %
# over every 128 x 128 and 256 x 128 tile; which of split/flatten/stages wins varied by shape.
_TMA_CONFIGS = [
    _tma_cfg(128, 256, 64, 8, 3, 2, True),
    _tma_cfg(128, 256, 64, 8, 3, 1, True),
    _tma_cfg(128, 256, 64, 8, 3, 1, False),
    _tma_cfg(128, 256, 64, 8, 4, 2, True),
    _tma_cfg(128, 256, 64, 8, 4, 2, False),
    _tma_cfg(128, 128, 64, 4, 4, 1, True),
    _tma_cfg(64, 128, 64, 4, 4, 1, True),
]


@triton.autotune(
    configs=_TMA_CONFIGS,
    key=["M", "N", "K", "HAS_BIAS", "GELU"],
    prune_configs_by={"early_config_prune": _prune},
)
@triton.jit
def _matmul_tma_kernel(
    a_desc,
    b_desc,
    c_desc,
    bias_ptr,
    M,
    N,
    K,
    stride_bias,
    HAS_BIAS: tl.constexpr,
    GELU: tl.constexpr,
    FAST_TANH: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    EPILOGUE_SPLIT: tl.constexpr,
    FLATTEN: tl.constexpr,
):
    # Persistent: each program walks tiles start, start + P, ... in grouped order. TMA zero-fills
    # reads past the edges and drops writes past them, so nothing here needs a mask.
    start = tl.program_id(0)
    programs = tl.num_programs(0)
    tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    for tile in tl.range(start, tiles, programs, flatten=FLATTEN):
        pid_m, pid_n = _tile_coords(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(k_tiles):
            a = a_desc.load([off_m, k * BLOCK_K])
            b = b_desc.load([k * BLOCK_K, off_n])
            acc = tl.dot(a, b, acc)
        offs_n = off_n + tl.arange(0, BLOCK_N)
        acc = _epilogue(acc, bias_ptr, stride_bias, offs_n, N, HAS_BIAS, GELU, FAST_TANH)
        out = acc.to(c_desc.dtype)
        if EPILOGUE_SPLIT == 2:
            # Two half-width stores halve the shared memory the store stages through.
            halves = tl.permute(tl.reshape(out, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1))
            left, right = tl.split(halves)
            c_desc.store([off_m, off_n], left)
            c_desc.store([off_m, off_n + BLOCK_N // 2], right)
        else:
            c_desc.store([off_m, off_n], out)


@functools.cache
def _sm_count(device: int) -> int:
    return torch.cuda.get_device_properties(device).multi_processor_count


def _tma_ok(*tensors: torch.Tensor) -> bool:
    """TMA needs Hopper+, 16-bit data here, unit inner stride, 16-byte aligned base and rows."""
    t0 = tensors[0]
    if compat.tensor_descriptor() is None or not t0.is_cuda or t0.dtype == torch.float32:
        return False
    if torch.cuda.get_device_capability(t0.device)[0] < 9:
        return False
    return all(
        t.stride(1) == 1 and t.stride(0) * t.element_size() % 16 == 0 and t.data_ptr() % 16 == 0
        for t in tensors
    )


def _check_operands(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None) -> None:
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise fail(
            "bad-input",
            f"matmul needs A (M, K) and B (K, N); got {tuple(a.shape)} and {tuple(b.shape)}",
            "pass 2-D tensors whose inner dimensions agree",
        )
    if a.dtype != b.dtype or (bias is not None and bias.dtype != a.dtype):
        raise fail(
            "bad-input",
            f"operand dtypes differ: {a.dtype}, {b.dtype}"
            + (f", {bias.dtype}" if bias is not None else ""),
            "cast the operands to one of float16, bfloat16, float32",
        )
    if a.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise fail("bad-input", f"unsupported dtype {a.dtype}", "use float16, bfloat16 or float32")
    if bias is not None and tuple(bias.shape) != (b.shape[1],):
        raise fail(
            "bad-input",
            f"bias has shape {tuple(bias.shape)}, expected ({b.shape[1]},)",
            "pass one bias value per output column",
        )


def _launch(
    a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None, gelu: bool
) -> torch.Tensor:
    _check_operands(a, b, bias)
    (M, K), N = a.shape, b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    if M == 0 or N == 0:
        return c
    bias_arg = bias if bias is not None else c  # never read when HAS_BIAS is False
    bias_stride = bias.stride(0) if bias is not None else 0
    descriptor = compat.tensor_descriptor()
    if K > 0 and _tma_ok(a, b, c):
        dummy = [1, 1]  # real tile shapes are set per config by _set_blocks
        a_desc = descriptor(a, list(a.shape), list(a.stride()), dummy)
        b_desc = descriptor(b, list(b.shape), list(b.stride()), dummy)
        c_desc = descriptor(c, list(c.shape), list(c.stride()), dummy)
        sms = _sm_count(a.device.index or 0)

        def grid(meta: dict) -> tuple[int]:
            tiles = triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"])
            return (min(sms, tiles),)

        _matmul_tma_kernel[grid](
            a_desc,
            b_desc,
            c_desc,
            bias_arg,
            M,
            N,
            K,
            bias_stride,
            HAS_BIAS=bias is not None,
            GELU=gelu,
            FAST_TANH=True,
        )
        return c

    pointer_matmul(a, b, c, bias, gelu)
    return c


def pointer_matmul(
    a: torch.Tensor,
    b: torch.Tensor,
    c: torch.Tensor,
    bias: torch.Tensor | None,
    gelu: bool,
    **config: int,
) -> None:
    """C = epilogue(A @ B (+ bias)) through pointer loads, autotuned; with `config` (BLOCK_M,
    BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages) the bare kernel runs that one config."""
    (M, K), N = a.shape, b.shape[1]

    def grid(meta: dict) -> tuple[int]:
        return (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)

    kernel = _matmul_kernel if config else _matmul_tuned
    kernel[grid](
        a,
        b,
        c,
        bias if bias is not None else c,  # never read when HAS_BIAS is False
        M,
        N,
        K,
        a.stride(0),
        a.stride(1),
        b.stride(0),
        b.stride(1),
        c.stride(0),
        c.stride(1),
        bias.stride(0) if bias is not None else 0,
        HAS_BIAS=bias is not None,
        GELU=gelu,
        FAST_TANH=a.is_cuda,
        **config,
    )


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """C = A @ B, shape (M, N, K); grouped tile order, fp32 accumulate.

    A and B are 2-D fp16, bf16 or fp32 (TF32) tensors.
    """
    return _launch(a, b, None, gelu=False)


def matmul_bias_gelu(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """gelu_tanh(A @ B + bias), shape (M, N, K); bias and GELU in the epilogue.

    Bias and GELU act on the fp32 accumulator, in the one kernel.
    """
    return _launch(a, b, bias, gelu=True)


def _reference_bias_gelu(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.gelu(torch.addmm(bias, a, b), approximate="tanh")


def _operands(shape: tuple[int, ...], dtype: torch.dtype, device: str) -> list[torch.Tensor]:
    M, N, K = shape
    # A is scaled by 1/sqrt(K) so that C is O(1) at every K: GELU's curved part is exercised
    # and the tolerances mean the same thing for K = 17 and K = 8192.
    a = torch.randn(M, K, device=device).div_(math.sqrt(max(K, 1))).to(dtype)
    b = torch.randn(K, N, device=device, dtype=dtype)
    return [a, b]


def _matmul_inputs(shape: tuple[int, ...], dtype: torch.dtype, device: str) -> tuple:
    return tuple(_operands(shape, dtype, device))


def _matmul_flops(shape: tuple[int, ...]) -> float:
    M, N, K = shape
    return 2.0 * M * N * K


def _matmul_bytes(shape: tuple[int, ...], esize: int) -> float:
    """A and B read once, C written once."""
    M, N, K = shape
    return float(M * K + K * N + M * N) * esize


def _bias_gelu_inputs(shape: tuple[int, ...], dtype: torch.dtype, device: str) -> tuple:
    bias = torch.randn(shape[1], device=device, dtype=dtype)
    return (*_operands(shape, dtype, device), bias)


CHECK_SHAPES = {
    "regular": [(64, 64, 64), (128, 96, 64)],
    "irregular": [(100, 72, 40), (1, 33, 17)],
}
PLAIN_MATMUL = {
    "reference_fn": torch.matmul,
    "make_inputs": _matmul_inputs,
    "tolerances": MATMUL_TOLERANCES,
    "flops": _matmul_flops,
    "bytes_moved": _matmul_bytes,
}
"""C = A @ B's reference, inputs and costs: MATMUL's, and those of the pitfalls on its body."""
_SAME = {"jit": (_matmul_tuned, _matmul_tma_kernel)}

MATMUL = KernelSpec(
    name="matmul",
    kernel_fn=matmul,
    shapes={
        **CHECK_SHAPES,
        "bench": [(4096, 4096, 4096), (8192, 8192, 8192)],
    },
    **PLAIN_MATMUL,
    **_SAME,
)

MATMUL_BIAS_GELU = KernelSpec(
    name="matmul_bias_gelu",
    kernel_fn=matmul_bias_gelu,
    reference_fn=_reference_bias_gelu,
    make_inputs=_bias_gelu_inputs,
    shapes={
        **CHECK_SHAPES,
        # LLM MLP up-projections: tokens x (4 * hidden) x hidden (GPT-2 XL, Llama-7B, 13B).
        "bench": [(8192, 6400, 1600), (8192, 11008, 4096), (4096, 13824, 5120)],
    },
    tolerances=MATMUL_TOLERANCES,
    flops=_matmul_flops,
    bytes_moved=lambda s, esize: _matmul_bytes(s, esize) + s[1] * esize,  # and the bias
    compile_mode="max-autotune",  # the bar the fused epilogue has to clear
    **_SAME,
)
