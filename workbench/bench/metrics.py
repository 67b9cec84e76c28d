"""Benchmark arithmetic: rates, the roofline floor, speedups, and the fields one case's raw
timings give (pure functions of numbers; no torch, so CPU tests replay a GPU's timings)."""

from __future__ import annotations

from dataclasses import dataclass

SPEC = "spec"
"""The spec's own `flops=` / `bytes_moved=` formula: it always wins."""
NCU = "ncu"
"""Counted by Nsight Compute on the case's own launches: tensor and FP ops, DRAM bytes."""
FLOP_COUNTER = "flop-counter"
"""torch's FlopCounterMode over the reference: matmuls, convolutions and attention only."""
INPUTS_OUTPUTS = "inputs+outputs"
"""The fewest bytes a call can move: its inputs' distinct storage read once, its outputs
written once."""
COPY_ALIGN = 16
"""A same-size copy moves whole 16-byte vectors: the copy's widest loads and stores, with no
narrower tail to time."""


@dataclass(frozen=True)
class Work:
    """One call's FLOPs and bytes, each with where it comes from (SPEC, NCU, ...)."""

    flops: float | None
    flops_source: str | None
    bytes: float | None
    bytes_source: str | None


@dataclass(frozen=True)
class Timings:
    """What the GPU measured for one case, before any arithmetic."""

    ms: float
    ms_p20: float
    ms_p80: float
    torch_ms: float
    compiled: float | str
    """The torch.compile'd reference's median ms, or "n/a: why"."""
    bytes: float | None
    flops: float | None
    input_sets: int
    bytes_source: str | None = None
    flops_source: str | None = None
    input_dtype: str | None = None
    """The timed inputs' floating dtype: the compute ceiling of a case run "as given"."""
    size_copy_ms: float | None = None
    """Median ms of a device-to-device copy moving the case's bytes (`copy_each_way`)."""


def rates(ms: float, nbytes: float | None, flops: float | None) -> tuple[float | None, ...]:
    """(GB/s, TFLOP/s) achieved in `ms`, in decimal units; None where the spec gives no model."""
    seconds = ms * 1e-3
    gbps = nbytes / seconds / 1e9 if nbytes is not None else None
    tflops = flops / seconds / 1e12 if flops is not None else None
    return gbps, tflops


def intensity(flops: float | None, nbytes: float | None) -> float | None:
    """Arithmetic intensity, FLOP per byte; None without both numbers."""
    return flops / nbytes if flops is not None and nbytes else None


def ridge(copy_gbps: float, matmul_tflops: float) -> float:
    """The intensity (FLOP/B) at which moving the bytes and doing the FLOPs take equally long
    at the measured ceilings: above it a kernel is compute-bound, at or below memory-bound."""
    return matmul_tflops * 1e12 / (copy_gbps * 1e9)


def floor_ms(
    nbytes: float | None, flops: float | None, copy_gbps: float, matmul_tflops: float
) -> tuple[float | None, str | None]:
    """The roofline floor: the longer of moving the bytes at copy speed and doing the FLOPs at
    the measured matmul rate, and which of the two it is ("memory" or "compute"). Compute is
    the longer exactly when the intensity is above the ridge; no FLOPs (none counted) leave the
    kernel on the memory side."""
    memory = nbytes / (copy_gbps * 1e9) * 1e3 if nbytes is not None else None
    compute = flops / (matmul_tflops * 1e12) * 1e3 if flops else None
    if memory is None and compute is None:
        return None, None
    if compute is None or (memory is not None and memory >= compute):
        return memory, "memory"
    return compute, "compute"


def roofline_ratio(ms: float, floor: float | None) -> float | None:
    """Floor time / measured time: 1.0 is the measured ceiling, 0.5 is twice as slow as it."""
    if floor is None or ms <= 0:
        return None
    return floor / ms


def copy_each_way(nbytes: float | None) -> int | None:
    """What a copy moving `nbytes` reads, and writes: half of them each way, in whole
    COPY_ALIGN-byte vectors; None without a byte count."""
    if not nbytes or nbytes <= 0:
        return None
    return max(COPY_ALIGN, round(nbytes / 2 / COPY_ALIGN) * COPY_ALIGN)


def speedup(reference_ms: float | None, ms: float | None) -> float | None:
    if reference_ms is None or not ms:
        return None
    return reference_ms / ms


def derived(t: Timings, copy_gbps: float, matmul_tflops: float) -> dict:
    """Every figure of a bench record that follows from the timings and the two ceilings."""
    gbps, tflops = rates(t.ms, t.bytes, t.flops)
    floor, bound = floor_ms(t.bytes, t.flops, copy_gbps, matmul_tflops)
    compiled = t.compiled if isinstance(t.compiled, float) else None
    return {
        "gbps": gbps,
        "tflops": tflops,
        "floor_ms": floor,
        "bound": bound,
        "roofline_ratio": roofline_ratio(t.ms, floor),
        "compile_ms": compiled,
        "speedup_vs_torch": speedup(t.torch_ms, t.ms),
        "speedup_vs_compile": speedup(compiled, t.ms) if compiled is not None else t.compiled,
        # a copy of the same bytes against the kernel: 1.0 moves them as fast as a copy can;
        # said of memory-bound cases only (a compute-bound one's floor is its FLOPs)
        "vs_copy": speedup(t.size_copy_ms, t.ms) if bound == "memory" else None,
    }
