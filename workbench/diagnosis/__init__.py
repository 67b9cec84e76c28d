"""Diagnosis: the one place findings are made, static (resources, IR, source) and measured (ncu).

May import ir (its resources and line maps, as data) and runtime; the jobs and commands that make
results call `diagnose_compile` and `diagnose_profile`; views only read the findings.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.diagnosis import measured, static
from workbench.diagnosis.finding import Finding
from workbench.diagnosis.static import irregular_shapes
from workbench.ir.linemap import Key, StageMap
from workbench.ir.resources import Resources

__all__ = ["Compiled", "Finding", "diagnose_compile", "diagnose_profile", "irregular_shapes"]


@dataclass(frozen=True)
class Compiled:
    """What one compiled config gives the diagnosis."""

    label: str
    where: Key
    """The kernel's file and the line of its `def`."""
    resources: Resources
    ttir: str
    ttir_map: StageMap
    values: dict[str, Any]
    """Its constexprs and compile options: the smallest power-of-two tile finds partial tiles."""


def diagnose_compile(
    compiled: list[Compiled],
    kernel_sources: list[tuple[str, str, int]],
    wrapper_sources: list[tuple[str, str, int]],
    shapes: list[tuple[int, ...]],
) -> list[Finding]:
    """Static findings of a compile: per config (spill, occupancy, IR patterns), per kernel source
    (constexpr block sizes) and in the launcher (host syncs); (source, file, first line) each."""
    found: list[Finding] = []
    for c in compiled:
        for detect in (static.spill_finding, static.occupancy_finding):
            if (f := detect(c.resources, c.label, c.where)) is not None:
                found.append(f)
        irregular = _irregular_for(shapes, c.values)
        found += static.ir_findings(c.ttir, c.ttir_map, c.label, irregular)
    for source, file, first_line in kernel_sources:
        found += static.constexpr_findings(source, file, first_line)
    found += static.host_sync_findings(wrapper_sources)
    return static.merge(static.drop_guarded(found, lambda f: Path(f).read_text()))


def diagnose_profile(summary: dict) -> dict:
    """An ncu summary with its measured findings; one that has them (a saved one) is kept."""
    if summary.get("tool") != "ncu" or "findings" in summary:
        return summary
    return {**summary, "findings": [f.to_dict() for f in measured.measured(summary)]}


def _irregular_for(shapes: list[tuple[int, ...]], values: dict[str, Any]) -> list[tuple[int, ...]]:
    """Shapes that leave a partial tile for the smallest power-of-two tile size (>= 16)."""
    tiles = [v for v in values.values() if type(v) is int and v >= 16 and not v & (v - 1)]
    return irregular_shapes(shapes, min(tiles, default=16))
