"""Where the kernel sits on the measured roofline, before any finding is weighed.

From the bench when it timed the kernel: its arithmetic intensity (FLOPs per byte) against the
ridge of the measured ceilings (the matmul rate of its dtype over the copy bandwidth) says the
bound, and the time against that ceiling the fraction. The FLOPs and bytes are the spec's
formulas when it has them, else what Nsight Compute counted on the case's launches, else the
bench's own count (the reference's FLOPs, its inputs and outputs); each says its source. Without
a bench timing, Nsight Compute's throughput of the longest launch places it. The placement caps
what any performance fix can gain (its headroom) and, near the ceiling, says the occupancy rules
do not apply. A memory-bound kernel far under copy bandwidth is itself a finding, unless it
moves its bytes as fast as a copy of the same size (the bench times one beside each case): then
the distance is the input's size, and the finding is info.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from workbench.bench import metrics
from workbench.bench.metrics import INPUTS_OUTPUTS, NCU, SPEC, Work
from workbench.bench.result import AS_GIVEN, BenchRecord, BenchResult
from workbench.bench.timing_rules import NOISE
from workbench.diagnosis.facts import Facts, LaunchFacts
from workbench.diagnosis.finding import Finding, demoted
from workbench.diagnosis.pitfalls import fix_text, limit
from workbench.diagnosis.registry import detector
from workbench.profilers.names import Config, range_name
from workbench.profilers.ncumetrics import NcuLaunch, launches
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
AS_FAST_AS_COPY = 1 - NOISE
"""A kernel whose time is within timing noise of a copy of its own bytes (the bench's vs_copy at
or above this) moves them as fast as a copy of that size can: what separates it from the
bandwidth of the large copy the ceiling was measured on is the input's size (launch, ramp-up,
tail), which no change to the kernel removes."""
LATENCY_BOUND = limit("low-occupancy", "latency_bound")
NO_FLOPS = " (no FLOP count: placed by its bytes alone)"
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
        """The most a fix to the kernel itself can save, as a share of its time: what it lacks
        of the ceiling, and no more than it lacks of a copy of its own bytes where the bench
        timed one (no kernel of this size moves them faster)."""
        if self.ratio is None:
            return None
        vs_copy = self.figures.get("vs_copy")
        left = 1.0 - self.ratio if vs_copy is None else min(1.0 - self.ratio, 1.0 - vs_copy)
        return max(0.0, left)

    @property
    def near_peak(self) -> bool:
        return self.ratio is not None and self.ratio >= NEAR_PEAK

    @property
    def short(self) -> str:
        """ "at 0.79x of copy bandwidth"."""
        if self.ratio is None:
            return "latency-bound: no unit near its peak"
        size = size_copy_text(self.figures) if self.bound == "memory" else ""
        return f"at {self.ratio:.2f}x of {self.ceiling}" + (f"; {size}" if size else "")

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
            return "; ".join(
                x for x in (", ".join(filter(None, (f.get("case"), rate))), _why(f)) if x
            )
        units = (("DRAM", "dram_pct"), ("SM", "sm_pct"), ("memory", "memory_pct"))
        return ", ".join(f"{name} {f[key]:.0f}%" for name, key in units if f.get(key) is not None)

    def to_dict(self) -> dict:
        keys = ("source", "bound", "ratio", "ceiling", "headroom", "near_peak", "idle", "text")
        return {**fields_dict(self, *keys), **self.figures}


def place(facts: Facts) -> Placement | None:
    """The bench's placement when it timed the kernel with FLOPs or bytes, else ncu's."""
    placed = None
    if facts.bench is not None and (rec := record(facts.bench, facts.launch)) is not None:
        placed = from_bench(rec, facts.bench, case_launches(facts.ncu, rec))
    if placed is None and (k := hottest(launches(facts.ncu))) is not None:
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


def from_bench(
    rec: BenchRecord, bench: BenchResult, profiled: list[NcuLaunch] | None = None
) -> Placement | None:
    """The bench's time against the ceiling the case's intensity puts it under; `launches`: the
    case's own ncu launches (`case_launches`), whose counts replace the bench's own."""
    used = work(rec, profiled or [])
    ceil = bench.ceilings
    copy, rate = ceil.copy_gbps, ceil.matmul_rate(rec.compute_dtype)
    floor, bound = metrics.floor_ms(used.bytes, used.flops, copy, rate)
    if rec.ms is None or floor is None or bound is None:
        return None
    gbps, tflops = metrics.rates(rec.ms, used.bytes, used.flops)
    figures = {
        "case": f"{rec.dtype} {'x'.join(map(str, rec.shape))}".rstrip(),
        "ms": rec.ms,
        "gbps": gbps,
        "tflops": tflops,
        "copy_gbps": copy,
        "matmul_tflops": rate,
        "flops": used.flops,
        "flops_source": used.flops_source,
        "bytes": used.bytes,
        "bytes_source": used.bytes_source,
        "intensity": metrics.intensity(used.flops, used.bytes),
        "ridge": metrics.ridge(copy, rate),
    }
    figures |= ncu_figures(profiled or []) | size_copy_figures(rec, copy)
    if used.bytes_source == NCU and rec.bytes and rec.bytes_source == INPUTS_OUTPUTS:
        figures["least_bytes"] = rec.bytes  # what the measured traffic is weighed against
    ceiling = "copy bandwidth" if bound == "memory" else "the measured matmul rate"
    return Placement("bench", bound, metrics.roofline_ratio(rec.ms, floor), ceiling, figures)


def size_copy_figures(rec: BenchRecord, copy_gbps: float) -> dict:
    """The copy of the case's bytes the bench timed beside it: its time, the kernel's time
    against it (vs_copy), and what that copy reaches of copy bandwidth; none before the bench
    timed one."""
    if rec.size_copy_ms is None or rec.vs_copy is None or not rec.bytes:
        return {}
    gbps, _ = metrics.rates(rec.size_copy_ms, rec.bytes, None)
    return {
        "size_copy_bytes": rec.bytes,
        "size_copy_ms": rec.size_copy_ms,
        "size_copy_ratio": gbps / copy_gbps if gbps is not None else None,
        "vs_copy": rec.vs_copy,
    }


def size_copy_text(f: dict) -> str:
    """ "a copy of these 134 MB reaches 0.93x": how close to copy bandwidth a copy of the case's
    own bytes gets ("" before the bench timed one)."""
    if f.get("size_copy_ratio") is None:
        return ""
    return (
        f"a copy of these {_num(f['size_copy_bytes'] / 1e6)} MB reaches {f['size_copy_ratio']:.2f}x"
    )


def case_launches(ncu: dict | None, rec: BenchRecord) -> list[NcuLaunch]:
    """The launches ncu profiled in the record's case (the kernel's range at that shape and
    dtype): one call, as the workbench profiles it."""
    case = Config(tuple(rec.shape), None if rec.dtype == AS_GIVEN else rec.dtype)
    return [k for k in launches(ncu) if k.range == range_name(rec.name, case)]


def _total(values: Iterable[float | None]) -> float | None:
    counted = [v for v in values if v is not None]
    return float(sum(counted)) if counted else None


def ncu_counts(profiled: list[NcuLaunch]) -> tuple[float | None, float | None]:
    """(FLOPs, DRAM bytes) ncu counted over the launches: tensor-path and FP-pipe operations,
    bytes read and written; None where it collected no such counter."""
    flops = _total(n for k in profiled for n in (k.tensor_flops, k.fp_flops))
    return flops, _total(k.dram_bytes for k in profiled)


def work_bytes(profiled: list[NcuLaunch]) -> float | None:
    """ncu's DRAM bytes less the launches' local-memory (spill) traffic: spills are a defect
    with a finding of their own, not bytes the work needs; counted in, they would place a
    spilling GEMM under a memory ceiling its own spills built, whose headroom hides what fixing
    them gains. Local bytes are counted at L1, so they bound the share that reached DRAM from
    above."""
    nbytes = _total(k.dram_bytes for k in profiled)
    if nbytes is None:
        return None
    return max(0.0, nbytes - (_total(k.local_bytes for k in profiled) or 0.0))


def work(rec: BenchRecord, profiled: list[NcuLaunch]) -> Work:
    """The FLOPs and bytes the placement uses: the spec's formula, else what ncu counted on the
    case's launches, else the bench's own count. ncu's DRAM bytes, spill traffic left out,
    replace the inputs and outputs only when more: writes still in L2 when the kernel ends never
    reach its count, and what the kernel moves beyond its inputs and outputs (intermediates
    between its launches) is the implementation's real traffic."""
    flops, _ = ncu_counts(profiled)
    nbytes = work_bytes(profiled)
    use_flops = rec.flops_source != SPEC and bool(flops)
    use_bytes = rec.bytes_source != SPEC and nbytes is not None
    if nbytes is not None and rec.bytes_source == INPUTS_OUTPUTS and rec.bytes is not None:
        use_bytes = nbytes > rec.bytes
    return Work(
        flops if use_flops else rec.flops,
        NCU if use_flops else rec.flops_source,
        nbytes if use_bytes else rec.bytes,
        NCU if use_bytes else rec.bytes_source,
    )


def ncu_figures(profiled: list[NcuLaunch]) -> dict:
    """What ncu counted on the case, beside what the placement used: its FLOP rate over the
    launches' own durations is the one to hold the bench's against."""
    flops, nbytes = ncu_counts(profiled)
    ns = sum(k.duration_ns or 0.0 for k in profiled)
    out: dict = {}
    if flops:
        out |= {"ncu_flops": flops, "ncu_tflops": flops / ns / 1e3 if ns else None}
    if nbytes is not None:
        out["ncu_dram_bytes"] = nbytes
    if local := _total(k.local_bytes for k in profiled):
        out["ncu_local_bytes"] = local
    return out


def _why(f: dict) -> str:
    """ "1,365 FLOP/B over the ridge of 258; FLOPs: flop-counter, bytes: inputs+outputs"."""
    ai, ridge = f.get("intensity"), f.get("ridge")
    if f.get("flops") is None:
        head = "no FLOP count"
    elif not f["flops"]:
        head = "no FLOPs counted"
    elif ai is None or ridge is None:
        head = ""
    else:
        side = "over" if ai > ridge else "under"
        head = f"{_num(ai)} FLOP/B {side} the ridge of {_num(ridge)}"
    sources = ", ".join(
        f"{what}: {f[key]}"
        for what, key in (("FLOPs", "flops_source"), ("bytes", "bytes_source"))
        if f.get(key)
    )
    spills = (
        f"{f['ncu_local_bytes'] / 1e9:.3g} GB of spill traffic left out of the bytes"
        if f.get("ncu_local_bytes")
        else ""
    )
    extra = (
        f"it moves {f['bytes'] / f['least_bytes']:.2g}x its inputs and outputs"
        if f.get("least_bytes") and f.get("bytes")
        else ""
    )
    return "; ".join(x for x in (head, sources, extra, spills) if x)


def _num(x: float) -> str:
    return f"{x:,.0f}" if x >= 10 else f"{x:.2g}"


def hottest(profiled: list[NcuLaunch]) -> NcuLaunch | None:
    """The launch that took longest: the one whose placement speaks for the kernel."""
    return max(
        (k for k in profiled if k.duration_ns), key=lambda k: k.duration_ns or 0.0, default=None
    )


def from_ncu(k: NcuLaunch) -> Placement | None:
    dram, sm = k.dram_throughput_pct, k.sm_throughput_pct
    memory = k.memory_throughput_pct
    if dram is None or sm is None:
        return None
    figures = {"launch": k.launch, "dram_pct": dram, "sm_pct": sm, "memory_pct": memory}
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
    unflopped = placed.source == "bench" and placed.figures.get("flops") is None
    found = Finding(
        id="memory-far-from-peak",
        title=f"memory-bound {placed.short}: the bytes move at {placed.ratio:.0%} of what a "
        "copy reaches" + (NO_FLOPS if unflopped else ""),
        severity="high" if placed.ratio < threshold / 2 else "medium",
        evidence=evidence,
        fix=fix_text("memory-far-from-peak", evidence),
        gain=placed.headroom,
    )
    vs_copy = placed.figures.get("vs_copy")
    if vs_copy is not None and vs_copy >= AS_FAST_AS_COPY:
        why = (
            f"{size_copy_text(placed.figures)} of copy bandwidth, and the kernel takes "
            f"{1 / vs_copy:.2f}x that copy's time: it moves its bytes as fast as a copy of this "
            "size; the distance is the input's size (launch, ramp-up, tail), not the kernel; "
            "time it at a larger input"
        )
        found = demoted(found, why)
    return [found]
