"""Diagnosis: where every finding about a kernel is weighed, joined and ranked.

Most findings are made here, from every kind of fact; the cache doctor (`cache.static`,
`cache.findings`, above this stage) makes its own `Finding`s on the same severity scale, taken in
as rows of the table (`autotune`).

The pitfall table is data (`pitfalls`); detectors registered per row (`registry`) read `Facts`:
static (`static`: resources, IR, source, run on the compile's facts by `diagnose_compile`), dynamic
(`dynamic`, `errors`: the check), measured (`measured`: ncu; `launch`: nsys and CUDA-graph timing;
`roofline`: the bench; `clock`: the SM clock it was timed at), configs (`configs`: spill-free
neighbours) and the autotune cache (`autotune`). `diagnose` runs them all, joins what one problem
shows in several facts, places the kernel on the roofline, ranks by severity and gain (`rank`),
routes (`routing`) and sets our findings beside Nsight Compute's rules (`agreement`). Pure: no
torch, no triton, but for `ir_job`, the "ir" job kind's entry in the child: the IR stage's compile,
then the static findings of its facts, so that the stages below never import the diagnosis.

Sits above the stages: reads ir's facts (resources, line maps, compiles), check, bench and
profilers results, and runtime; the consumers of results (`ir_job`, `workbench.loop`, views and
reports) call it; views only read the findings.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

# accesses, autotune, clock, configs, dynamic, errors and launch are imported for their detectors,
# which register themselves on import (registry.detector)
from workbench.diagnosis import (  # noqa: F401
    accesses,
    agreement,
    autotune,
    clock,
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
from workbench.ir.facts import Compiled, CompileFacts, irregular_shapes

__all__ = ["Diagnosis", "Facts", "Finding", "diagnose", "diagnose_compile", "diagnose_profile"]


def diagnose_compile(facts: CompileFacts) -> list[Finding]:
    """Static findings of a compile: per config (spill, occupancy, IR patterns), per kernel source
    (constexpr block sizes) and in the launcher (host syncs)."""
    found: list[Finding] = []
    for c in facts.compiled:
        spill = static.spill_finding(c.resources, c.label, c.where)
        low = static.occupancy_finding(c.resources, c.label, c.where, static.tile_kernel(c.ttir))
        found += [f for f in (spill, low) if f is not None]
        irregular = _irregular_for(facts.shapes, c.values)
        found += static.ir_findings(c.ttir, c.ttir_map, c.label, irregular)
        serial = static.serial_softmax_finding(c.ttir, c.ttir_map, c.label, c.resources.arch)
        found += [serial] if serial else []
        found += masks.off_by_one(c.ttir, c.ttir_map, c.label)
    tuned = {c.label: _launches(c) for c in facts.compiled if c.tuned}
    found = static.among_candidates(found, tuned)
    for source, file, first_line in facts.kernel_sources:
        found += static.constexpr_findings(source, file, first_line)
    found += static.host_sync_findings(facts.wrapper_sources)
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
