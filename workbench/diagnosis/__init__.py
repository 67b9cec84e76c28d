"""Diagnosis: where every finding about a kernel is weighed, joined and ranked.

Most findings are made here, from every kind of fact; the cache doctor (`cache.static`,
`cache.findings`, above this stage) makes its own `Finding`s on the same severity scale, taken in
as rows of the table (`autotune`).

The pitfall table is data (`pitfalls`); detectors registered per row (`registry`) read `Facts`:
static (`static`: resources, IR, source, run by the IR job through `diagnose_compile`), dynamic
(`dynamic`, `errors`: the check), measured (`measured`: ncu; `launch`: nsys and CUDA-graph
timing; `roofline`: the bench), configs (`configs`: spill-free neighbours) and the autotune
cache (`autotune`). `diagnose` runs them all, joins what one problem shows in several facts,
places the kernel on the roofline, ranks by severity and gain (`rank`), routes (`routing`) and
sets our findings beside Nsight Compute's rules (`agreement`). Pure: no torch, no triton.

May import ir (its resources and line maps, as data), check, bench and profilers results, and
runtime; the jobs and `workbench.loop` call it; views only read the findings.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

# accesses, autotune, configs, dynamic, errors and launch are imported for their detectors,
# which register themselves on import (registry.detector)
from workbench.diagnosis import (  # noqa: F401
    accesses,
    agreement,
    autotune,
    configs,
    dynamic,
    errors,
    launch,
    masks,
    measured,
    rank,
    roofline,
    routing,
    static,
)
from workbench.diagnosis.facts import Diagnosis, Facts
from workbench.diagnosis.finding import Finding
from workbench.diagnosis.registry import detectors
from workbench.diagnosis.static import irregular_shapes
from workbench.ir.linemap import Key, StageMap
from workbench.ir.resources import Resources

__all__ = [
    "Compiled",
    "Diagnosis",
    "Facts",
    "Finding",
    "diagnose",
    "diagnose_compile",
    "diagnose_profile",
    "irregular_shapes",
]


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
    tuned: bool = False
    """One of an autotuner's candidates: the autotuner times them all and runs the fastest."""


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
        spill = static.spill_finding(c.resources, c.label, c.where)
        low = static.occupancy_finding(c.resources, c.label, c.where, "tt.dot" in c.ttir)
        found += [f for f in (spill, low) if f is not None]
        irregular = _irregular_for(shapes, c.values)
        found += static.ir_findings(c.ttir, c.ttir_map, c.label, irregular)
        found += masks.off_by_one(c.ttir, c.ttir_map, c.label)
    found = static.among_candidates(found, {c.label: _launches(c) for c in compiled if c.tuned})
    for source, file, first_line in kernel_sources:
        found += static.constexpr_findings(source, file, first_line)
    found += static.host_sync_findings(wrapper_sources)
    return static.merge(static.drop_guarded(found, lambda f: Path(f).read_text()))


def diagnose_profile(summary: dict) -> dict:
    """An ncu summary with its measured findings; one that has them (a saved one) is kept."""
    if summary.get("tool") != "ncu" or "findings" in summary:
        return summary
    return {**summary, "findings": [f.to_dict() for f in measured.measured(summary)]}


def diagnose(facts: Facts) -> Diagnosis:
    """Every detector over the facts; one finding per problem, weighed against the roofline and
    ranked by severity then gain; the routing advice and the agreement with Nsight Compute."""
    found = [f for detect in detectors() for f in detect(facts)]
    placed = roofline.place(facts)
    joined = rank.apply_check(rank.join(found, measured.RULE_PEERS), facts.check)
    weighed = rank.apply_launch(rank.apply_roofline(joined, placed), facts.launch)
    weighed = rank.apply_short_kernels(weighed, facts.launch)
    weighed = rank.cap_by_gain(weighed)
    ranked = rank.rank(rank.explain(weighed))
    return Diagnosis(
        kernel=facts.kernel,
        findings=ranked,
        roofline=placed.to_dict() if placed else None,
        routing=routing.advice(facts, placed),
        agreement=agreement.table(facts, ranked, placed),
        missing=dict(facts.missing),
    )


def _launches(c: Compiled) -> bool:
    occ = c.resources.occupancy
    return occ is None or occ.blocks_per_sm > 0


def _irregular_for(shapes: list[tuple[int, ...]], values: dict[str, Any]) -> list[tuple[int, ...]]:
    """Shapes that leave a partial tile for the smallest power-of-two tile size (>= 16)."""
    tiles = [v for v in values.values() if type(v) is int and v >= 16 and not v & (v - 1)]
    return irregular_shapes(shapes, min(tiles, default=16))
