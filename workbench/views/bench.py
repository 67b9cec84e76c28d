"""A bench result as table rows (the columns `workbench bench` prints) and as terminal bars of the
roofline fraction and the speedups, for the TUI's Bench tab (pure: no UI imports)."""

from __future__ import annotations

from workbench.bench import metrics, timing_rules
from workbench.bench.clock_rules import case_note
from workbench.bench.report import num, ratio
from workbench.bench.result import BenchRecord, Ceilings
from workbench.runtime.grammar import shape_text

HEADERS = (
    "shape",
    "dtype",
    "status",
    "ms",
    "GB/s",
    "TFLOP/s",
    "roofline",
    "vs copy",
    "vs torch",
    "vs compile",
)
BLOCKS = " ▏▎▍▌▋▊▉█"
"""Eighths of a cell, for bars finer than one character."""
TICKS = "▁▂▃▄▅▆▇█"
"""Heights of a sparkline, lowest to highest."""


def row(r: BenchRecord) -> tuple[str, ...]:
    compiled = r.speedup_vs_compile
    return (
        shape_text(r.shape),
        r.dtype,
        r.status,
        num(r.ms, 4),
        num(r.gbps),
        num(r.tflops),
        ratio(r.roofline_ratio),
        ratio(r.vs_copy),
        ratio(r.speedup_vs_torch),
        compiled if isinstance(compiled, str) else ratio(compiled),
    )


def work_line(r: BenchRecord, ceil: Ceilings) -> str | None:
    """A timed case's FLOPs and bytes, each with its source, and its intensity against the
    ridge of the measured ceilings: which side of the roofline it is timed against."""
    if r.ms is None or (r.flops is None and r.bytes is None):
        return None
    rate = ceil.matmul_rate(r.compute_dtype)
    ridge = metrics.ridge(ceil.copy_gbps, rate)
    parts = [
        f"{num(r.flops / 1e9)} GFLOP ({r.flops_source or 'as recorded'})"
        if r.flops is not None
        else "no FLOP count",
        f"{num(r.bytes / 1e6)} MB ({r.bytes_source or 'as recorded'})"
        if r.bytes is not None
        else "no byte count",
    ]
    ai = metrics.intensity(r.flops, r.bytes)
    side = (
        f"{num(ai)} FLOP/B {'over' if ai > ridge else 'under'} the ridge of {num(ridge)}"
        if ai is not None
        else f"ridge {num(ridge)} FLOP/B"
    )
    ceilings = f"{num(rate)} TFLOP/s / {num(ceil.copy_gbps)} GB/s"
    bound = f": {r.bound}-bound" if r.bound else ""
    return f"{shape_text(r.shape)} {r.dtype}: {', '.join(parts)}; {side} ({ceilings}){bound}"


def clock_line(r: BenchRecord) -> str | None:
    """A case whose SM clock was held back (power, heat) while timed, with the clocks the kernel
    and torch ran at; None for the rest, so memory-bound kernels' tables stay as they were."""
    note = case_note(r.clocks, r.torch_clocks)
    return f"{shape_text(r.shape)} {r.dtype}: {note}" if note else None


def unsteady_line(r: BenchRecord) -> str | None:
    """A case whose samples spread too widely to trust its median (`timing_rules.unsteady`)."""
    note = timing_rules.unsteady(r.ms, r.ms_p20, r.ms_p80)
    return f"{shape_text(r.shape)} {r.dtype}: {note}" if note else None


CLOCK_HEAD = (
    "SM clock while timed (NVML): a sustained timing runs at it, short ones faster; the speedups, "
    "timed in the same run, hold"
)


LAUNCH_HEADERS = (
    "case",
    "launches",
    "GPU busy",
    "mean gap",
    "eager ms",
    "graph ms",
    "graph correct",
    "graph vs torch",
    "graph vs compile",
)


def launch_row(r: BenchRecord) -> tuple[str, ...]:
    """How one call launches (`bench --graph`): eagerly and replayed from one CUDA graph, the
    replay against eager PyTorch and torch.compile of the reference."""
    d = r.launch or {}
    busy, correct = d.get("gpu_busy_ns"), d.get("graph_correct")
    graph = d.get("graph_ms") if correct else None
    return (
        f"{shape_text(r.shape)} {r.dtype}",
        num(d.get("launches")),
        f"{num(busy / 1e6, 4)} ms" if busy is not None else "-",
        f"{num(d['mean_gap_ns'] / 1e3)} us" if d.get("mean_gap_ns") is not None else "-",
        num(d.get("eager_ms"), 4),
        num(d.get("graph_ms"), 4),
        "-" if correct is None else "yes" if correct else f"NO: {d.get('graph_problem', '')}",
        _times(r.torch_ms, graph),
        _times(r.compile_ms, graph),
    )


def _times(peer_ms: float | None, ms: float | None) -> str:
    return f"{peer_ms / ms:.2f}x" if peer_ms and ms else "-"


def bar(fraction: float, width: int) -> str:
    """`fraction` of `width` cells filled, to an eighth of a cell; clipped to 0..width."""
    eighths = round(max(0.0, min(fraction, 1.0)) * width * 8)
    full, part = divmod(eighths, 8)
    return ("█" * full + (BLOCKS[part] if part else "")).ljust(width)


def bars(records: list[BenchRecord], width: int = 16) -> list[str]:
    """One line per timed case: the roofline fraction as a bar (full = the measured ceiling),
    then the speedups over eager PyTorch and torch.compile."""
    timed = [r for r in records if r.roofline_ratio is not None]
    label = max((len(f"{shape_text(r.shape)} {r.dtype}") for r in timed), default=0)
    out = []
    for r in timed:
        name = f"{shape_text(r.shape)} {r.dtype}".ljust(label)
        compiled = r.speedup_vs_compile
        vs_compile = compiled if isinstance(compiled, str) else f"{ratio(compiled)}x"
        out.append(
            f"{name}  {bar(r.roofline_ratio or 0.0, width)} {r.roofline_ratio:.0%} roofline"
            f"  {ratio(r.speedup_vs_torch)}x torch  {vs_compile} compile"
        )
    return out


def spark(values: list[float]) -> str:
    """One character per value, its height between the smallest and the largest of them."""
    low, high = min(values, default=0.0), max(values, default=0.0)
    span = high - low
    top = len(TICKS) - 1
    return "".join(TICKS[round((v - low) / span * top) if span else 0] for v in values)
