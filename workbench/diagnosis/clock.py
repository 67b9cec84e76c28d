"""The SM clock the bench timed the kernel at (`clock-held-back`): held back for power or heat,
the kernel's times depend on how long a timing runs, while its ratios to what was timed in the
same run hold."""

from __future__ import annotations

from workbench.bench.clock_rules import held_back
from workbench.diagnosis import roofline
from workbench.diagnosis.facts import Facts
from workbench.diagnosis.finding import Finding
from workbench.diagnosis.pitfalls import fix_text, limit
from workbench.diagnosis.registry import detector

SHORT_RUNS = (
    "a sustained timing (the bench's do_bench, about 100 ms of calls) runs at this clock; short "
    "ones (the sweep's batches, ncu's single launch) run at a higher one, so this kernel's time "
    "depends on how long it is timed, while its ratio to torch, timed in the same run, holds"
)


@detector("clock-held-back")
def clock_held_back(facts: Facts) -> list[Finding]:
    rec = roofline.record(facts.bench, facts.launch) if facts.bench is not None else None
    clocks = rec.clocks if rec is not None else None
    ratio = limit("clock-held-back", "ratio")
    if rec is None or clocks is None or clocks.ratio is None or not held_back(clocks, ratio):
        return []
    power = f" at {clocks.power_w:.0f} W" if clocks.power_w is not None else ""
    if clocks.power_w is not None and clocks.power_limit_w:
        power = f" at {clocks.power_w:.0f} of {clocks.power_limit_w:.0f} W"
    evidence = {
        "case": f"{rec.dtype} {'x'.join(map(str, rec.shape))}".rstrip(),
        **clocks.to_dict(),
        "clock_ratio": round(clocks.ratio, 3),
        "threshold": ratio,
        "measured": clocks.text,
        "why": SHORT_RUNS,
    }
    if rec.torch_clocks is not None:
        evidence["torch"] = rec.torch_clocks.text
    title = (
        f"SM clock held back while timed: {clocks.sm_mhz:.0f} of {clocks.max_mhz:.0f} MHz "
        f"({clocks.ratio:.0%}){power} ({', '.join(clocks.reasons)})"
    )
    fix = fix_text("clock-held-back", evidence)
    return [Finding("clock-held-back", title, "info", evidence, fix)]
