"""Where the kernel sits on the measured roofline, before any finding is weighed.

From the bench (the byte and FLOP models against the measured copy bandwidth and matmul rate)
when it timed the kernel, else from Nsight Compute's throughput of its longest launch. The
placement caps what any performance fix can gain (its headroom) and, near the ceiling, says the
occupancy rules do not apply. A memory-bound kernel far under copy bandwidth is itself a finding.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from workbench.bench.result import BenchRecord, BenchResult
from workbench.diagnosis.facts import Facts, LaunchFacts
from workbench.diagnosis.finding import Finding
from workbench.diagnosis.pitfalls import fix_text, limit
from workbench.diagnosis.registry import detector
from workbench.runtime.records import fields_dict

NEAR_PEAK = 0.75
"""Fraction of the ceiling from which a kernel is near it: Triton's memory-bound kernels top out
at 0.8-0.95 of copy bandwidth (seed 003's 80-95 % rule), the library's floors are 0.85-0.93
(notes/performance-anchors), and kernels at 0.79 gained nothing from the occupancy rules that
NVIDIA rated at 25 % (issue 13). More warps cannot move bytes faster than the bus."""
COPY_OF_SPEC = 0.9
"""What a device-to-device copy reaches of the DRAM spec (3.0 of 3.35 TB/s on the H100; 89.6 %
to 90.4 % for torch.clone): ncu's DRAM throughput, a percentage of the spec, over this is the
fraction of copy bandwidth that the bench's roofline uses."""
LATENCY_BOUND = limit("low-occupancy", "latency_bound")
IDLE = limit("launch-bound", "idle")


@dataclass(frozen=True)
class Placement:
    source: str
    """"bench" or "ncu"."""
    bound: str
    """"memory", "compute", or "latency" (ncu: neither unit near its peak)."""
    ratio: float | None
    """Fraction of the ceiling (1.0 = at the ceiling; None for latency-bound)."""
    ceiling: str
    figures: dict = field(default_factory=dict)
    idle: float | None = None
    """The share of a call the GPU sat idle between launches (launch facts), when known."""

    @property
    def headroom(self) -> float | None:
        """The most a fix to the kernel itself can save, as a share of its time."""
        return None if self.ratio is None else max(0.0, 1.0 - self.ratio)

    @property
    def near_peak(self) -> bool:
        return self.ratio is not None and self.ratio >= NEAR_PEAK

    @property
    def short(self) -> str:
        """ "at 0.79x of copy bandwidth"."""
        if self.ratio is None:
            return "latency-bound: no unit near its peak"
        return f"at {self.ratio:.2f}x of {self.ceiling}"

    @property
    def text(self) -> str:
        head = f"{self.bound}-bound {self.short}" if self.ratio is not None else self.short
        head += f" ({self.source}: {self.detail})"
        if self.idle is not None and self.idle >= IDLE:
            return head + f": the GPU idles {self.idle:.0%} of a call, between launches"
        if self.near_peak:
            return head + ": little left; the occupancy rules do not apply"
        if self.headroom is not None:
            return head + f": up to {self.headroom:.0%} of the time to gain"
        return head + ": more resident warps or deeper pipelining hide latency"

    @property
    def detail(self) -> str:
        f = self.figures
        if self.source == "bench":
            rate = (
                f"{f['gbps']:.0f} of {f['copy_gbps']:.0f} GB/s"
                if self.bound == "memory" and f.get("gbps")
                else f"{f['tflops']:.0f} of {f['matmul_tflops']:.0f} TFLOP/s"
                if f.get("tflops")
                else ""
            )
            return ", ".join(x for x in (f.get("case"), rate) if x)
        units = (("DRAM", "dram_pct"), ("SM", "sm_pct"), ("memory", "memory_pct"))
        return ", ".join(f"{name} {f[key]:.0f}%" for name, key in units if f.get(key) is not None)

    def to_dict(self) -> dict:
        keys = ("source", "bound", "ratio", "ceiling", "headroom", "near_peak", "idle", "text")
        return {**fields_dict(self, *keys), **self.figures}


def place(facts: Facts) -> Placement | None:
    """The bench's placement when it timed the kernel with a byte or FLOP model, else ncu's."""
    placed = None
    if facts.bench is not None and (rec := record(facts.bench, facts.launch)) is not None:
        placed = from_bench(rec, facts.bench)
    if placed is None and facts.ncu and (k := hottest(facts.ncu)) is not None:
        placed = from_ncu(k)
    idle = facts.launch.idle_fraction if facts.launch is not None else None
    return replace(placed, idle=idle) if placed is not None else None


def record(bench: BenchResult, launch: LaunchFacts | None = None) -> BenchRecord | None:
    """The timed record the measured facts were taken at (the launch facts' shape and dtype),
    else the first timed one."""
    timed = [r for r in bench.records if r.status == "ok" and r.ms]
    if launch is not None and launch.shape is not None:
        same = [r for r in timed if list(r.shape) == list(launch.shape)]
        same = [r for r in same if launch.dtype in (None, r.dtype)]
        timed = same or timed
    return timed[0] if timed else None


def from_bench(rec: BenchRecord, bench: BenchResult) -> Placement | None:
    if rec.roofline_ratio is None or rec.bound is None:
        return None
    figures = {
        "case": f"{rec.dtype} {'x'.join(map(str, rec.shape))}",
        "ms": rec.ms,
        "gbps": rec.gbps,
        "tflops": rec.tflops,
        "copy_gbps": bench.ceilings.copy_gbps,
        "matmul_tflops": bench.ceilings.matmul_rate(rec.dtype),
    }
    ceiling = "copy bandwidth" if rec.bound == "memory" else "the measured matmul rate"
    return Placement("bench", rec.bound, rec.roofline_ratio, ceiling, figures)


def hottest(summary: dict) -> dict | None:
    """The launch that took longest: the one whose placement speaks for the kernel."""
    kernels = [k for k in summary.get("kernels", []) if k.get("duration_ns")]
    return max(kernels, key=lambda k: k["duration_ns"], default=None)


def from_ncu(k: dict) -> Placement | None:
    dram, sm = k.get("dram_throughput_pct"), k.get("sm_throughput_pct")
    memory = k.get("memory_throughput_pct")
    if dram is None or sm is None:
        return None
    figures = {"launch": k.get("launch"), "dram_pct": dram, "sm_pct": sm, "memory_pct": memory}
    if max(sm, memory or 0.0, dram) < LATENCY_BOUND:
        return Placement("ncu", "latency", None, "", figures)
    if dram >= sm:
        return Placement("ncu", "memory", dram / 100 / COPY_OF_SPEC, "copy bandwidth", figures)
    return Placement("ncu", "compute", sm / 100, "SM peak", figures)


@detector("memory-far-from-peak")
def far_from_peak(facts: Facts) -> list[Finding]:
    placed = place(facts)
    threshold = limit("memory-far-from-peak", "ratio")
    if placed is None or placed.bound != "memory" or placed.ratio is None:
        return []
    if placed.ratio >= threshold:
        return []
    evidence = {"source": placed.source, "ratio": round(placed.ratio, 3), **placed.figures}
    evidence |= {"threshold": threshold, "measured": placed.detail}
    return [
        Finding(
            id="memory-far-from-peak",
            title=f"memory-bound {placed.short}: the bytes move at {placed.ratio:.0%} of what a "
            "copy reaches",
            severity="high" if placed.ratio < threshold / 2 else "medium",
            evidence=evidence,
            fix=fix_text("memory-far-from-peak", evidence),
            gain=placed.headroom,
        )
    ]
