"""Routing advice (seed 000 "when not to write Triton", seed 002 phase 0): keep the Triton
kernel, use the library call, or do not bother, in one sentence with the numbers that decide
it: the kernel's place on the roofline and the reference's own speed (torch, torch.compile)."""

from __future__ import annotations

from workbench.diagnosis.facts import Facts
from workbench.diagnosis.roofline import NEAR_PEAK, Placement, record

SAME = 0.1
"""Speed-ups within 1 +- this are a tie: the spread of repeated timings and clocks."""


def advice(facts: Facts, placed: Placement | None) -> str | None:
    rec = record(facts.bench, facts.launch) if facts.bench is not None else None
    if rec is None or not rec.speedup_vs_torch:
        return None
    vs_torch = rec.speedup_vs_torch
    vs_compile = rec.speedup_vs_compile if isinstance(rec.speedup_vs_compile, float) else None
    speeds = f"{vs_torch:.2f}x torch" + (f", {vs_compile:.2f}x torch.compile" if vs_compile else "")
    where = f", {placed.short}" if placed is not None and placed.ratio is not None else ""
    best, name = min((s, n) for s, n in ((vs_torch, "torch"), (vs_compile, "torch.compile")) if s)
    launch = facts.launch
    graph = None
    if launch is not None and launch.graph_correct and launch.graph_ms and rec.torch_ms:
        graph = rec.torch_ms / launch.graph_ms
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
