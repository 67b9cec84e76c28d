"""Measured findings: what Nsight Compute measured, matched to the pitfall table.

The input is one kernel entry of an ncu summary (`profilers.summary.ncu_dict`: plain JSON, base
units, with its `rules` and `hot_lines`); the output is `Finding` records, the same ones the static
findings use, so a spill measured by ncu and one read from the cubin look alike. Pure functions
of that data: no I/O, no pandas. Ids: register-spill, smem-bank-conflicts, low-occupancy,
occupancy-gap (pitfall rows), and ncu-rule (NVIDIA's own rule with the largest estimated gain).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection

from workbench.diagnosis.finding import SEVERITIES, Finding
from workbench.diagnosis.static import OCCUPANCY_FLOOR

SPILL_FIX = (
    "cut live registers: a smaller tile or fewer accumulators per program, spread the tile over "
    "more warps (num_warps), fewer num_stages, or cap registers with maxnreg"
)
BANK_CONFLICT_FIX = (
    "Triton swizzles the shared memory behind tl.dot itself; conflicts come from reductions and "
    "custom scratch layouts: pad the row stride or reduce along the contiguous axis"
)
BANK_CONFLICT_RATIO = 0.10
"""Conflicts per shared wavefront (loads and stores apart) at which a finding is raised.

It is the threshold of NVIDIA's SharedMemoryConflicts rule, so the two agree. Each conflict is
one extra wavefront, so the ratio is the share of shared-memory cycles lost to replays. "> 0"
would flag every Triton reduction: the aggregate counters also count conflicts the source view
sees no excess for (the softmax fixture: 1.7 % / 2.0 %, zero excessive wavefronts per line).
"""
ACHIEVED_FLOOR = 25.0
"""Achieved occupancy (%) under which the pitfall table calls occupancy low (register spill row)."""
GAP_FRACTION = 2 / 3
"""A gap is raised when fewer than this share of the theoretical warps are resident on average.

NVIDIA's AchievedOccupancy rule fires at a 10-point gap, which also flags a memory-bound
kernel at 85 % of a 100 % theoretical (the vector_add fixture, at 90 % of DRAM bandwidth); that
rule still shows among ncu's rules. A third of the warps missing is the size of gap that a grid
smaller than the GPU or a heavy tail wave makes, and a relative measure also works for launches
whose theoretical occupancy is low to begin with (12.5 % for the spill fixture).
"""
LATENCY_BOUND = 60.0
"""SM and memory throughput (% of peak) both under this: latency-bound (NVIDIA's SOLBottleneck),
the case where more resident warps pay off."""

OCCUPANCY_FIX = {
    "registers": "fewer registers per thread: a smaller tile per warp, more warps, or maxnreg",
    "shared memory": "less shared memory per block: fewer num_stages or smaller BLOCK_K tiles",
    "warps": "fewer warps per block so more blocks fit (num_warps)",
    "blocks": "more warps per block: the SM's block slots run out first",
    "barriers": "more warps per block: the SM's barrier slots run out first",
}
RULE_FIXES: dict[str, str] = {
    "LaunchConfiguration": "launch more programs: smaller BLOCK sizes or a split reduction "
    "(split-K) so the grid covers every SM at least once",
    "AchievedOccupancy": "even out the work per program, or use a persistent grid (one program "
    "per SM looping over tiles) so no tail wave idles",
    "IssueSlotUtilization": "hide latency: more resident warps, more num_stages to pipeline the "
    "loads, fewer dependent loads per iteration",
    "CPIStall": "hide latency: more resident warps, more num_stages to pipeline the loads; "
    "local-memory stalls are spills (cut registers)",
    "MemoryCacheAccessPattern": "make the fastest-moving index the contiguous one in "
    "tl.load/tl.store; local-memory traffic here is register spill: cut registers",
    "UncoalescedGlobalAccess": "make the fastest-moving index the contiguous one (stride 1) in "
    "tl.load/tl.store, or transpose the operand once beforehand",
    "UncoalescedSharedAccess": BANK_CONFLICT_FIX,
    "SharedMemoryConflicts": BANK_CONFLICT_FIX,
    "ThreadDivergence": "keep branches uniform per warp: use tl.where over masks instead of "
    "data-dependent control flow",
}
ORDER = ("register-spill", "smem-bank-conflicts", "low-occupancy", "occupancy-gap", "ncu-rule")
RULE_PEERS = {
    "TheoreticalOccupancy": "low-occupancy",
    "AchievedOccupancy": "occupancy-gap",
    "LaunchConfiguration": "occupancy-gap",
    "SharedMemoryConflicts": "smem-bank-conflicts",
    "MemoryCacheAccessPattern": "register-spill",
}
"""NVIDIA's rules that say what one of our findings says (when both fire, they agree)."""
_LINK = re.compile(r"@(?:section|url):([^:@]+)(?::[^@]*)?@")


def measured(summary: dict) -> list[Finding]:
    """Findings for every launch of an ncu summary, most severe first."""
    found = [f for k in summary.get("kernels", []) for f in kernel_findings(k)]
    severity = {s: i for i, s in enumerate(SEVERITIES)}
    return sorted(
        found,
        key=lambda f: (severity.get(f.severity, 9), f.evidence["launch"] or 0, ORDER.index(f.id)),
    )


def kernel_findings(k: dict) -> list[Finding]:
    checks = (spill_finding, bank_conflict_finding, low_occupancy_finding, occupancy_gap_finding)
    found = [f for check in checks if (f := check(k)) is not None]
    rule = top_rule_finding(k, {f.id for f in found})
    return found + ([rule] if rule else [])


# ---- register spill ----------------------------------------------------------------------------


def spill_finding(k: dict) -> Finding | None:
    spills = _count(k.get("spill_instructions"))
    local_ld, local_st = (
        _count(k.get("local_ld_instructions")),
        _count(k.get("local_st_instructions")),
    )
    local_bytes = _count(k.get("local_bytes"))
    if spills <= 0 and local_ld + local_st <= 0 and local_bytes <= 0:
        return None
    regs = _count(k.get("registers_per_thread"))
    what = f"{spills:,} spill instructions" if spills else f"{local_ld + local_st:,} local ld/st"
    line = _top_line(k, lambda h: _num(h.get("memory_l2_theoretical_sectors_local")))
    evidence = _base(k) | {
        "registers_per_thread": regs,
        "spill_instructions": spills,
        "local_ld_instructions": local_ld,
        "local_st_instructions": local_st,
        "local_bytes": local_bytes,
        "block_size": _count(k.get("block_size")),
    }
    if line:
        evidence["hot_line"] = line
    return Finding(
        id="register-spill",
        title=f"registers spill: {what} moved {human_bytes(local_bytes)} through local memory "
        f"({regs} registers/thread)",
        severity="high",
        evidence=evidence,
        fix=SPILL_FIX,
        file=line["file"] if line else None,
        line=line["line"] if line else None,
    )


# ---- shared-memory bank conflicts --------------------------------------------------------------


def bank_conflict_finding(k: dict) -> Finding | None:
    ratios = {
        op: r
        for op, r in bank_conflict_ratios(k).items()
        if _num(k.get(f"smem_bank_conflicts_{op}")) > 0 and (r is None or r >= BANK_CONFLICT_RATIO)
    }
    if not ratios:
        return None
    known = [r for r in ratios.values() if r is not None]
    worst = max(known, default=None)
    line = _top_line(k, _shared_excess)
    inlined = _top_line(k, _shared_excess, origin="triton")
    evidence = _base(k) | {
        f"{name}_{op}": _count(k.get(f"smem_{name}_{op}"))
        for op in ("ld", "st")
        for name in ("bank_conflicts", "wavefronts")
    }
    evidence |= {f"ratio_{op}": round(r, 4) for op, r in ratios.items() if r is not None}
    evidence["threshold"] = BANK_CONFLICT_RATIO
    if line:
        evidence["hot_line"] = line
    if inlined:
        evidence["inlined_line"] = inlined  # a tl.max/tl.sum inlined from triton/language
    ops = "/".join({"ld": "loads", "st": "stores"}[op] for op in ratios)
    share = (
        f"{worst:.0%} of shared wavefronts are conflict replays"
        if worst is not None
        else "conflicts counted, but no wavefront count to weigh them against"
    )
    return Finding(
        id="smem-bank-conflicts",
        title=f"shared-memory bank conflicts on {ops}: {share}",
        severity="low" if worst is None else "high" if worst >= 0.5 else "medium",
        evidence=evidence,
        fix=BANK_CONFLICT_FIX,
        file=line["file"] if line else None,
        line=line["line"] if line else None,
    )


def bank_conflict_ratios(k: dict) -> dict[str, float | None]:
    """Conflicts per wavefront for loads and stores (None where there is nothing to divide by)."""
    out: dict[str, float | None] = {}
    for op in ("ld", "st"):
        wavefronts = _num(k.get(f"smem_wavefronts_{op}"))
        conflicts = k.get(f"smem_bank_conflicts_{op}")
        out[op] = _num(conflicts) / wavefronts if conflicts is not None and wavefronts else None
    return out


def _shared_excess(h: dict) -> float:
    excess = _num(h.get("derived__memory_l1_wavefronts_shared_excessive"))
    if excess:
        return excess
    return _num(h.get("memory_l1_wavefronts_shared")) - _num(
        h.get("memory_l1_wavefronts_shared_ideal")
    )


# ---- occupancy ---------------------------------------------------------------------------------


def low_occupancy_finding(k: dict) -> Finding | None:
    """Few warps resident because the launch's resources allow few (theoretical is low too);
    a launch that could hold more but does not is an occupancy gap instead."""
    theoretical, achieved = k.get("theoretical_occupancy_pct"), k.get("achieved_occupancy_pct")
    if theoretical is None or achieved is None:
        return None
    if achieved >= ACHIEVED_FLOOR or theoretical >= OCCUPANCY_FLOOR:
        return None
    limiter = k.get("occupancy_limiter") or "unknown"
    fixes = [OCCUPANCY_FIX[part] for part in limiter.split(", ") if part in OCCUPANCY_FIX]
    return Finding(
        id="low-occupancy",
        title=f"achieved occupancy {achieved:.1f}%: the launch allows only {theoretical:g}% "
        f"(limited by {limiter})",
        severity=_occupancy_severity(k),
        evidence=_occupancy_evidence(k),
        fix="; or ".join(fixes) or "raise the per-SM limit that binds first",
    )


def occupancy_gap_finding(k: dict) -> Finding | None:
    theoretical, achieved = k.get("theoretical_occupancy_pct"), k.get("achieved_occupancy_pct")
    if not theoretical or achieved is None or achieved >= GAP_FRACTION * theoretical:
        return None
    waves = k.get("waves_per_sm")
    grid = _count(k.get("grid_size"))
    if waves is not None and waves < 1:
        cause = f"the grid ({grid} blocks) fills {waves:.2f} of one wave"
        fix = RULE_FIXES["LaunchConfiguration"]
    else:
        cause = "a partial last wave or uneven work per program"
        fix = RULE_FIXES["AchievedOccupancy"]
    return Finding(
        id="occupancy-gap",
        title=f"achieved occupancy {achieved:.1f}% of a theoretical {theoretical:g}%: {cause}",
        severity=_occupancy_severity(k),
        evidence=_occupancy_evidence(k),
        fix=fix,
    )


def _occupancy_severity(k: dict) -> str:
    sm, mem = k.get("sm_throughput_pct"), k.get("memory_throughput_pct")
    if sm is not None and mem is not None and sm < LATENCY_BOUND and mem < LATENCY_BOUND:
        return "high"  # nothing is saturated: more warps would hide the latency
    return "medium"


def _occupancy_evidence(k: dict) -> dict:
    keys = (
        "theoretical_occupancy_pct",
        "achieved_occupancy_pct",
        "occupancy_limiter",
        "occupancy_limits",
        "registers_per_thread",
        "block_size",
        "grid_size",
        "waves_per_sm",
        "sm_throughput_pct",
        "memory_throughput_pct",
    )
    return _base(k) | {key: k.get(key) for key in keys}


# ---- NVIDIA's rules ----------------------------------------------------------------------------


def top_rule_finding(k: dict, ours: Collection[str] = ()) -> Finding | None:
    """NVIDIA's rule with the largest estimated speedup, with the Triton-side fix to try;
    `ours` are the ids already found for this launch, to say when the rule agrees with one."""
    rules = [r for r in k.get("rules", []) if r.get("speedup_pct")]
    if not rules:
        return None
    r = max(rules, key=lambda r: r["speedup_pct"])
    gain = r["speedup_pct"]
    fix = RULE_FIXES.get(r["rule"], "")
    if r["rule"] == "TheoreticalOccupancy":
        limiter = (k.get("occupancy_limiter") or "").split(", ")[0]
        fix = OCCUPANCY_FIX.get(limiter, "raise the per-SM limit that binds first")
    message = clean_message(r.get("message") or "")
    evidence = _base(k) | {
        "rule": r["rule"],
        "section": r.get("section"),
        "speedup_pct": round(gain, 2),
        "speedup_type": r.get("speedup_type"),
        "message": message,
    }
    title = f"ncu rule {r['rule']}" + (f" ({r['title']})" if r.get("title") else "")
    title += f": est. speedup {gain:.0f}% ({r.get('speedup_type')})"
    peer = RULE_PEERS.get(r["rule"])
    if peer in ours:
        evidence["agrees_with"] = peer
        title += f", as {peer} says"
    return Finding(
        id="ncu-rule",
        title=title,
        severity="high" if gain >= 50 else "medium" if gain >= 10 else "low",
        evidence=evidence,
        fix=fix or f"ncu: {message}",
    )


def clean_message(text: str) -> str:
    """ncu's links (`@section:Id:Label@`, `@url:Label:https://…@`) as their labels."""
    return _LINK.sub(lambda m: m.group(1), text).strip()


# ---- helpers -----------------------------------------------------------------------------------


def _top_line(k: dict, weight: Callable[[dict], float], origin: str = "kernel") -> dict | None:
    """The hot line of `origin` with the largest positive weight, as evidence."""
    lines = [h for h in k.get("hot_lines", []) if h.get("origin", "kernel") == origin]
    scored = [(weight(h), h) for h in lines]
    scored = [(w, h) for w, h in scored if w > 0]
    if not scored:
        return None
    w, h = max(scored, key=lambda s: s[0])
    return {"file": h["file"], "line": int(h["line"]), "code": h.get("code", ""), "value": w}


def _base(k: dict) -> dict:
    return {"launch": k.get("launch"), "kernel": k.get("kernel"), "config": k.get("config")}


def _num(x: float | int | None) -> float:
    return float(x) if x is not None else 0.0


def _count(x: float | int | None) -> int:
    """ncu reports counts as floats; 0 where the metric was not collected."""
    return round(x) if x is not None else 0


def human_bytes(n: float) -> str:
    for unit in ("B", "kB", "MB"):
        if abs(n) < 1000:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"
