"""Routing advice (seed 000 "when not to write Triton", seed 002 phase 0): keep the Triton
kernel, use the library call, or do not bother, in one sentence with the numbers that decide
it: the kernel's place on the roofline and the reference's own speed (torch, torch.compile).
After `diagnose --try`, the way the kernel runs once a kept fix is applied."""

from __future__ import annotations

from dataclasses import dataclass, replace

from workbench.diagnosis.facts import Facts
from workbench.diagnosis.roofline import NEAR_PEAK, Placement, record

SAME = 0.1
"""Speed-ups within 1 +- this are a tie: the spread of repeated timings and clocks."""


@dataclass(frozen=True)
class Tried:
    """A fix tried beside the kernel as launched, both timed in one run (`diagnose --try`)."""

    label: str
    """What the fix changes ("BLOCK_M=128", "replayed from one CUDA graph")."""
    speedup: float | None
    """The kernel as launched over the fix, in the trial's run; None: no candidate was correct."""
    kept: bool
    """The fix was correct and faster: the way to run the kernel now."""


def advice(facts: Facts, placed: Placement | None, tried: Tried | None = None) -> str | None:
    """The advice from the bench's timing of the kernel as launched; after a trial whose fix
    was kept, from that timing sped up by what the fix gained in the trial (both sides of each
    ratio timed in one run), and said so; after one whose fix was not kept, labelled as the
    timing before it."""
    rec = record(facts.bench, facts.launch) if facts.bench is not None else None
    if rec is None or not rec.speedup_vs_torch:
        return None
    vs_torch = rec.speedup_vs_torch
    vs_compile = rec.speedup_vs_compile if isinstance(rec.speedup_vs_compile, float) else None
    launch = facts.launch
    graph = None
    if launch is not None and launch.graph_correct and launch.graph_ms and rec.torch_ms:
        graph = rec.torch_ms / launch.graph_ms
    said = ""
    if tried is not None and tried.kept and tried.speedup:
        gain = tried.speedup
        vs_torch, vs_compile = vs_torch * gain, vs_compile * gain if vs_compile else None
        graph = None  # the bench replayed the kernel as launched, before the fix
        placed = _sped_up(placed, gain)
        said = f"with the fix kept ({tried.label}, {gain:.2f}x faster in the trial): "
    elif tried is not None:
        said = f"as launched (the fix tried, {tried.label}, was not kept): "
    return said + _advice(vs_torch, vs_compile, graph, placed)


def _sped_up(placed: Placement | None, gain: float) -> Placement | None:
    """The bench's placement of the kernel, `gain` times faster (the same work in less time);
    an ncu placement, of counters that the fix changes, is not carried over."""
    if placed is None or placed.source != "bench" or placed.ratio is None:
        return None
    return replace(placed, ratio=placed.ratio * gain)


def _advice(
    vs_torch: float, vs_compile: float | None, graph: float | None, placed: Placement | None
) -> str:
    speeds = f"{vs_torch:.2f}x torch" + (f", {vs_compile:.2f}x torch.compile" if vs_compile else "")
    where = f", {placed.short}" if placed is not None and placed.ratio is not None else ""
    best, name = min((s, n) for s, n in ((vs_torch, "torch"), (vs_compile, "torch.compile")) if s)
    if best < 1 - SAME and graph and graph >= 1 + SAME:
        return (
            f"keep it, replayed from one CUDA graph: {graph:.2f}x torch that way; launched "
            f"eagerly it is {speeds}{where}"
        )
    if best < 1 - SAME:
        return (
            f"use the library call: {name} runs {1 / best:.2f}x faster than this kernel "
            f"({speeds}{where})"
        )
    reference = placed.ratio / vs_torch if placed is not None and placed.ratio else None
    if best < 1 + SAME and placed is not None and reference is not None and reference >= NEAR_PEAK:
        return (
            f"do not bother: torch already runs at {reference:.2f}x of {placed.ceiling} and this "
            f"kernel matches it ({speeds}); a Triton kernel pays when it fuses work the library "
            "does in separate passes"
        )
    left = (
        ", with little left to gain"
        if placed is not None and placed.near_peak
        else f", with up to {placed.headroom:.0%} left"
        if placed is not None and placed.headroom is not None
        else ""
    )
    return f"keep the Triton kernel: {speeds}{where}{left}"
