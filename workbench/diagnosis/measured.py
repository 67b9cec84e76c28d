"""Measured findings: what Nsight Compute measured, matched to the pitfall table.

The input is one launch of an ncu summary (`profilers.ncumetrics.NcuLaunch`: its metrics as
fields, in base units, with its `rules` and `hot_lines`); the output is `Finding` records, the
same ones the static findings use, so a spill measured by ncu and one read from the cubin look
alike. Pure functions of that data: no I/O, no pandas. Ids, thresholds and fixes are the
pitfall table's rows: register-spill, smem-bank-conflicts, low-occupancy, occupancy-gap,
grid-too-small, stall-dominant, uncoalesced-access, and ncu-rule (NVIDIA's own rule with the
largest estimated gain, when none of ours says the same).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection
from dataclasses import replace
from typing import Any

from workbench.catalog.spec import ELSIZE
from workbench.diagnosis import rank, roofline
from workbench.diagnosis.facts import Facts
from workbench.diagnosis.finding import SEVERITIES, Finding
from workbench.diagnosis.pitfalls import OCCUPANCY_RULES, fix_text, limit
from workbench.diagnosis.registry import detector
from workbench.profilers.ncumetrics import NcuLaunch, launches
from workbench.runtime.errors import WorkbenchError
from workbench.runtime.grammar import parse_shape

BANK_CONFLICT_RATIO = limit("smem-bank-conflicts", "ratio")
OCCUPANCY_FLOOR = limit("low-occupancy", "floor")
ACHIEVED_FLOOR = limit("low-occupancy", "achieved_floor")
LATENCY_BOUND = limit("low-occupancy", "latency_bound")
GAP_FRACTION = limit("occupancy-gap", "fraction")
GRID_IDLE = limit("grid-too-small", "idle")
STALL_SHARE = limit("stall-dominant", "share")
EXCESS_SECTORS = limit("uncoalesced-access", "excess")
ORDER = (
    "register-spill",
    "smem-bank-conflicts",
    "uncoalesced-access",
    "grid-too-small",
    "low-occupancy",
    "occupancy-gap",
    "stall-dominant",
    "ncu-rule",
)
"""Every finding this module makes, in the order one launch's are listed."""
RULE_PEERS = {
    "TheoreticalOccupancy": "low-occupancy",
    "AchievedOccupancy": "occupancy-gap",
    "LaunchConfiguration": "grid-too-small",
    "SOLBottleneck": "grid-too-small",
    "SharedMemoryConflicts": "smem-bank-conflicts",
    "UncoalescedSharedAccess": "smem-bank-conflicts",
    "UncoalescedGlobalAccess": "uncoalesced-access",
    "MemoryCacheAccessPattern": "register-spill",
    "CPIStall": "stall-dominant",
    "IssueSlotUtilization": "stall-dominant",
}
"""NVIDIA's rules that say what one of our findings says (when both fire, they agree)."""
STALL_PREFIX = "smsp__pcsamp_warps_issue_stalled_"
NOT_STALLS = ("selected", "not_selected")
"""Sampled states that are not stalls: issuing, and eligible but not picked."""
_LINK = re.compile(r"@(?:section|url):([^:@]+)(?::[^@]*)?@")


def measured(summary: dict) -> list[Finding]:
    """Findings for every launch of an ncu summary, each weighed against that launch's own
    place on the roofline (ncu's throughput), most severe first."""
    found = []
    for k in launches(summary):
        found += rank.apply_roofline(kernel_findings(k), roofline.from_ncu(k))
    severity = {s: i for i, s in enumerate(SEVERITIES)}
    return sorted(
        found,
        key=lambda f: (severity.get(f.severity, 9), f.evidence["launch"] or 0, ORDER.index(f.id)),
    )


def kernel_findings(k: NcuLaunch, uses_dot: bool = False) -> list[Finding]:
    """One launch's findings; `uses_dot` (or a hot line calling tl.dot) marks a tile kernel."""
    tile = uses_dot or _calls_dot(k)
    found = [
        f
        for f in (
            spill_finding(k),
            bank_conflict_finding(k),
            uncoalesced_finding(k),
            grid_finding(k),
            low_occupancy_finding(k, tile),
            occupancy_gap_finding(k),
            stall_finding(k),
        )
        if f is not None
    ]
    rule = top_rule_finding(k, {f.id for f in found})
    return found + ([rule] if rule else [])


@detector(*ORDER)
def ncu_findings(facts: Facts) -> list[Finding]:
    """Every launch of the facts' ncu summary; the compile's tl.dot marks its launches as a
    tile kernel's when they are all of one kernel (else each launch's hot lines say)."""
    profiled = launches(facts.ncu)
    one = len({k.kernel for k in profiled}) == 1
    tile = one and any(f.evidence.get("uses_dot") for f in facts.compile_findings)
    return [_sourced(f, "ncu") for k in profiled for f in kernel_findings(k, tile)]


# ---- register spill ----------------------------------------------------------------------------


def spill_finding(k: NcuLaunch) -> Finding | None:
    spills = _count(k.spill_instructions)
    local_ld, local_st = _count(k.local_ld_instructions), _count(k.local_st_instructions)
    local_bytes = _count(k.local_bytes)
    if spills <= 0 and local_ld + local_st <= 0 and local_bytes <= 0:
        return None
    regs = _count(k.registers_per_thread)
    what = f"{spills:,} spill instructions" if spills else f"{local_ld + local_st:,} local ld/st"
    line = _top_line(k, lambda h: _num(h.get("memory_l2_theoretical_sectors_local")))
    evidence = _base(k) | {
        "registers_per_thread": regs,
        "spill_instructions": spills,
        "local_ld_instructions": local_ld,
        "local_st_instructions": local_st,
        "local_bytes": local_bytes,
        "block_size": _count(k.block_size),
    }
    finding = Finding(
        id="register-spill",
        title=f"registers spill: {what} moved {human_bytes(local_bytes)} through local memory "
        f"({regs} registers/thread)",
        severity="high",
        evidence=evidence,
        fix=fix_text("register-spill"),
        gain=_rule_gain(k, "MemoryCacheAccessPattern"),
    )
    return _at_line(finding, line)


# ---- shared-memory bank conflicts --------------------------------------------------------------


def bank_conflict_finding(k: NcuLaunch) -> Finding | None:
    """Conflict replays weighed against all shared wavefronts: a conflicting store in a kernel
    that mostly loads from shared memory (a matmul's epilogue) costs little."""
    conflicts = {op: _num(c) for op, (c, _) in shared_ops(k).items()}
    if not sum(conflicts.values()):
        return None
    worst = conflict_share(k)
    if worst is not None and worst < BANK_CONFLICT_RATIO:
        return None
    ratios = {op: r for op, r in bank_conflict_ratios(k).items() if conflicts[op]}
    replaying = [op for op, r in ratios.items() if r is None or r >= BANK_CONFLICT_RATIO]
    line = _top_line(k, _shared_excess)
    inlined = _top_line(k, _shared_excess, origin="triton")
    evidence = _base(k)
    for op, (c, w) in shared_ops(k).items():
        evidence |= {f"bank_conflicts_{op}": _count(c), f"wavefronts_{op}": _count(w)}
    evidence |= {f"ratio_{op}": round(r, 4) for op, r in ratios.items() if r is not None}
    evidence["ratio"] = round(worst, 4) if worst is not None else None
    evidence["threshold"] = BANK_CONFLICT_RATIO
    if inlined:
        evidence["inlined_line"] = inlined  # a tl.max/tl.sum inlined from triton/language
    ops = "/".join({"ld": "loads", "st": "stores"}[op] for op in replaying or ratios)
    share = (
        f"{worst:.0%} of shared wavefronts are conflict replays"
        if worst is not None
        else "conflicts counted, but no wavefront count to weigh them against"
    )
    finding = Finding(
        id="smem-bank-conflicts",
        title=f"shared-memory bank conflicts on {ops}: {share}",
        severity="low" if worst is None else "high" if worst >= 0.5 else "medium",
        evidence=evidence,
        fix=fix_text("smem-bank-conflicts"),
        gain=_rule_gain(k, "SharedMemoryConflicts"),
    )
    return _at_line(finding, line)


def shared_ops(k: NcuLaunch) -> dict[str, tuple[float | None, float | None]]:
    """Per shared-memory op (ld, st): its bank conflicts and its wavefronts."""
    return {
        "ld": (k.smem_bank_conflicts_ld, k.smem_wavefronts_ld),
        "st": (k.smem_bank_conflicts_st, k.smem_wavefronts_st),
    }


def conflict_share(k: NcuLaunch) -> float | None:
    """Conflict replays per shared wavefront of the launch; None where an op has conflicts but
    no wavefront count to weigh them against."""
    ops = shared_ops(k).values()
    if not all(_num(w) for c, w in ops if _num(c)):
        return None
    wavefronts = _shared_wavefronts(k)
    return sum(_num(c) for c, _ in ops) / wavefronts if wavefronts else 0.0


def _shared_wavefronts(k: NcuLaunch) -> float:
    """All the shared-memory wavefronts of a launch. The conflict counters and their wavefront
    counters see only the LSU pipe (ld/st.shared); what cp.async, TMA and wgmma move through
    shared memory shows in the per-line source counters alone (on an H100 a 64 x 64 matmul tile:
    0.9 M LSU wavefronts, 68 M on its lines). Their sum over the hot lines is a lower bound."""
    lsu = sum(_num(w) for _, w in shared_ops(k).values())
    lines = sum(_num(h.get("memory_l1_wavefronts_shared")) for h in k.hot_lines or [])
    return max(lsu, lines)


def bank_conflict_ratios(k: NcuLaunch) -> dict[str, float | None]:
    """Conflicts per wavefront for loads and stores (None where there is nothing to divide by)."""
    return {
        op: _num(c) / _num(w) if c is not None and _num(w) else None
        for op, (c, w) in shared_ops(k).items()
    }


def _shared_excess(h: dict) -> float:
    excess = _num(h.get("derived__memory_l1_wavefronts_shared_excessive"))
    if excess:
        return excess
    return _num(h.get("memory_l1_wavefronts_shared")) - _num(
        h.get("memory_l1_wavefronts_shared_ideal")
    )


# ---- occupancy and the grid --------------------------------------------------------------------


def low_occupancy_finding(k: NcuLaunch, uses_dot: bool = False) -> Finding | None:
    """Few warps resident because the launch's resources allow few (theoretical is low too);
    a launch that could hold more but does not is an occupancy gap instead. A tl.dot tile kernel
    that gets the occupancy its tile asks for is info: one big tile per SM is its design."""
    theoretical, achieved = k.theoretical_occupancy_pct, k.achieved_occupancy_pct
    if theoretical is None or achieved is None:
        return None
    if achieved >= ACHIEVED_FLOOR or theoretical >= OCCUPANCY_FLOOR:
        return None
    limiter = k.occupancy_limiter or "unknown"
    fixes = [fix_text("low-occupancy", variant=p) for p in limiter.split(", ")]
    evidence = _occupancy_evidence(k) | {"uses_dot": uses_dot}
    by_design = uses_dot and achieved >= GAP_FRACTION * theoretical
    if by_design:
        evidence["why_info"] = (
            "a tile kernel (tl.dot, or warps specialized by hand) at the occupancy its tile "
            "asks for: its pipeline (num_stages, a producer warp), not resident warps, hides "
            "the latency"
        )
    return Finding(
        id="low-occupancy",
        title=f"achieved occupancy {achieved:.1f}%: the launch allows only {theoretical:g}% "
        f"(limited by {limiter})",
        severity="info" if by_design else _occupancy_severity(k),
        evidence=evidence,
        fix="; or ".join(dict.fromkeys(fixes)) or fix_text("low-occupancy"),
        gain=None if by_design else _rule_gain(k, "TheoreticalOccupancy"),
    )


def occupancy_gap_finding(k: NcuLaunch) -> Finding | None:
    """Fewer warps resident than the launch allows, when the grid fills the GPU (a grid that
    does not is grid-too-small's)."""
    theoretical, achieved = k.theoretical_occupancy_pct, k.achieved_occupancy_pct
    if not theoretical or achieved is None or achieved >= GAP_FRACTION * theoretical:
        return None
    fill = grid_fill(k)
    if fill is not None and fill["programs"] < fill["sms"]:
        return None
    return Finding(
        id="occupancy-gap",
        title=f"achieved occupancy {achieved:.1f}% of a theoretical {theoretical:g}%: uneven "
        "work per program or a partial last wave",
        severity=_occupancy_severity(k),
        evidence=_occupancy_evidence(k) | {"threshold": round(GAP_FRACTION, 3)},
        fix=fix_text("occupancy-gap"),
        gain=_rule_gain(k, "AchievedOccupancy"),
    )


def grid_fill(k: NcuLaunch) -> dict | None:
    """How the launch's programs fill the GPU, and the share of its SM time left idle: under
    one wave, the SMs left without a program (programs spread one per SM first, as the block
    scheduler does); from one wave up, the empty part of the last wave (NVIDIA's tail effect).
    The SM count is the programs one wave holds over the programs one SM holds."""
    grid, waves = k.grid_size, k.waves_per_sm
    limits = k.occupancy_limits or {}
    per_sm = min(limits.values()) if limits else None
    if not grid or not waves or not per_sm:
        return None
    sms = round(grid / waves / per_sm)
    if sms <= 0:
        return None
    if waves < 1:
        idle = 1.0 - grid / (sms * math.ceil(grid / sms))
    else:
        idle = (math.ceil(waves) - waves) / math.ceil(waves)
    return {
        "programs": round(grid),
        "sms": sms,
        "programs_per_sm": round(per_sm),
        "waves": round(waves, 3),
        "idle": idle,
    }


def grid_finding(k: NcuLaunch) -> Finding | None:
    fill = grid_fill(k)
    if fill is None or fill["idle"] < GRID_IDLE:
        return None
    evidence = _base(k) | fill | {"idle": round(fill["idle"], 3), "threshold": GRID_IDLE}
    if fill["programs"] < fill["sms"]:
        title = (
            f"the grid ({fill['programs']} programs) leaves {fill['sms'] - fill['programs']} of "
            f"{fill['sms']} SMs idle"
        )
        fix = fix_text("grid-too-small", evidence)
    else:
        title = (
            f"tail wave: {fill['programs']} programs on {fill['sms']} SMs leave "
            f"{fill['idle']:.0%} of the SM time idle in the last wave"
        )
        fix = fix_text("grid-too-small", evidence, variant="tail")
    return Finding(
        id="grid-too-small",
        title=title,
        severity="high" if fill["idle"] >= 0.5 else "medium",
        evidence=evidence,
        fix=fix,
        gain=_rule_gain(k, "LaunchConfiguration") or fill["idle"],
    )


def _occupancy_severity(k: NcuLaunch) -> str:
    sm, mem = k.sm_throughput_pct, k.memory_throughput_pct
    if sm is not None and mem is not None and sm < LATENCY_BOUND and mem < LATENCY_BOUND:
        return "high"  # nothing is saturated: more warps would hide the latency
    return "medium"


def _occupancy_evidence(k: NcuLaunch) -> dict:
    return _base(k) | {
        "theoretical_occupancy_pct": k.theoretical_occupancy_pct,
        "achieved_occupancy_pct": k.achieved_occupancy_pct,
        "occupancy_limiter": k.occupancy_limiter,
        "occupancy_limits": k.occupancy_limits,
        "registers_per_thread": k.registers_per_thread,
        "block_size": k.block_size,
        "grid_size": k.grid_size,
        "waves_per_sm": k.waves_per_sm,
        "sm_throughput_pct": k.sm_throughput_pct,
        "memory_throughput_pct": k.memory_throughput_pct,
    }


# ---- stalls and coalescing ---------------------------------------------------------------------


def stall_shares(k: NcuLaunch) -> dict[str, float]:
    """Sampled warp stalls per reason over the hot lines, as shares of all stalls."""
    counts: dict[str, float] = {}
    for h in k.hot_lines or []:
        for key, value in h.items():
            if key.startswith(STALL_PREFIX) and not key.endswith("_not_issued"):
                reason = key[len(STALL_PREFIX) :]
                if reason not in NOT_STALLS:
                    counts[reason] = counts.get(reason, 0.0) + _num(value)
    total = sum(counts.values())
    return {r: c / total for r, c in counts.items()} if total else {}


def stall_finding(k: NcuLaunch) -> Finding | None:
    shares = stall_shares(k)
    if not shares:
        return None
    reason, share = max(shares.items(), key=lambda s: s[1])
    if share < STALL_SHARE:
        return None
    line = _top_line(k, lambda h: _num(h.get(STALL_PREFIX + reason)))
    evidence = _base(k) | {
        "reason": reason,
        "share": round(share, 3),
        "threshold": STALL_SHARE,
        "sm_throughput_pct": k.sm_throughput_pct,
        "memory_throughput_pct": k.memory_throughput_pct,
    }
    # Where warps wait explains time; it is a finding of its own only when too few warps hide
    # the latency (then more of them is the fix), else the why behind another finding.
    latency = _occupancy_severity(k) == "high"
    finding = Finding(
        id="stall-dominant",
        title=f"{share:.0%} of sampled warp stalls are {reason}",
        severity="medium" if latency else "info",
        evidence=evidence,
        fix=fix_text("stall-dominant", evidence, variant=reason),
        gain=_rule_gain(k, "CPIStall") or _rule_gain(k, "IssueSlotUtilization"),
    )
    return _at_line(finding, line)


def uncoalesced_finding(k: NcuLaunch) -> Finding | None:
    """Global sectors moved beyond the ideal ones, over the kernel's hot lines."""
    lines = [h for h in k.hot_lines or [] if h.get("origin", "kernel") == "kernel"]
    ideal = sum(_num(h.get("memory_l2_theoretical_sectors_global_ideal")) for h in lines)
    moved = sum(_num(h.get("memory_l2_theoretical_sectors_global")) for h in lines)
    if ideal <= 0 or (moved - ideal) / ideal < EXCESS_SECTORS:
        return None
    excess = (moved - ideal) / ideal
    line = _top_line(
        k,
        lambda h: (
            _num(h.get("memory_l2_theoretical_sectors_global"))
            - _num(h.get("memory_l2_theoretical_sectors_global_ideal"))
        ),
    )
    evidence = _base(k) | {
        "sectors": round(moved),
        "ideal_sectors": round(ideal),
        "excess": round(excess, 3),
        "threshold": EXCESS_SECTORS,
        "line": line["line"] if line else None,
    }
    unaligned = _unaligned_length(k.config)
    if unaligned is not None:
        evidence |= {"length": unaligned[0], "vector": unaligned[1]}
    finding = Finding(
        id="uncoalesced-access",
        title=f"global accesses move {1 + excess:.1f}x the sectors they need: neighbouring "
        "lanes read far-apart addresses",
        severity="high" if excess >= 1.0 else "medium",
        evidence=evidence,
        fix=fix_text("uncoalesced-access", evidence, variant="unaligned" if unaligned else None),
        gain=_rule_gain(k, "UncoalescedGlobalAccess") or excess / (1.0 + excess),
    )
    return _at_line(finding, line)


def _unaligned_length(config: str | None) -> tuple[int, int] | None:
    """(length, elements per 16 bytes) when the profiled case's last size is not a multiple of
    one 16-byte vector: Triton then cannot prove a masked access aligned and loads each lane's
    elements one at a time, 16 bytes apart across the warp (an H100 twin's SASS: four LDG.E at
    2^28 - 1 floats, one LDG.E.128 at 2^28). Sectors move as if the access were strided while
    its indices are contiguous."""
    shape, _, dtype = (config or "").partition(":")
    elsize = ELSIZE.get(dtype.strip())
    try:
        dims = parse_shape(shape) if elsize else ()
    except WorkbenchError:
        return None
    vector = 16 // elsize if elsize else 0
    if not dims or not vector or dims[-1] % vector == 0:
        return None
    return dims[-1], vector


# ---- NVIDIA's rules ----------------------------------------------------------------------------


def top_rule_finding(k: NcuLaunch, ours: Collection[str] = ()) -> Finding | None:
    """NVIDIA's rule with the largest estimated speedup, with the Triton-side fix to try;
    `ours` are the ids already found for this launch, to say when the rule agrees with one."""
    rules = [r for r in k.rules if r.get("speedup_pct")]
    if not rules:
        return None
    r = max(rules, key=lambda r: r["speedup_pct"])
    gain = r["speedup_pct"]
    variant = r["rule"]
    if variant == "TheoreticalOccupancy":
        variant += ":" + (k.occupancy_limiter or "").split(", ")[0]
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
    # NVIDIA's estimate alone is info (its words were often not where the time goes); it
    # counts when one of our detectors sees the same problem and takes it in (rank.CAUSES).
    return Finding(
        id="ncu-rule",
        title=title,
        severity="info",
        evidence=evidence,
        fix=fix_text("ncu-rule", evidence, variant=variant),
        gain=gain / 100,
    )


def is_occupancy_rule(f: Finding) -> bool:
    """An ncu-rule finding whose remedy is more resident warps or programs."""
    return f.id == "ncu-rule" and f.evidence.get("rule") in OCCUPANCY_RULES


def clean_message(text: str) -> str:
    """ncu's links (`@section:Id:Label@`, `@url:Label:https://…@`) as their labels."""
    return _LINK.sub(lambda m: m.group(1), text).strip()


# ---- helpers -----------------------------------------------------------------------------------


def _top_line(k: NcuLaunch, weight: Callable[[dict], float], origin: str = "kernel") -> dict | None:
    """The hot line of `origin` with the largest positive weight, as evidence."""
    lines = [h for h in k.hot_lines or [] if h.get("origin", "kernel") == origin]
    scored = [(weight(h), h) for h in lines]
    scored = [(w, h) for w, h in scored if w > 0]
    if not scored:
        return None
    w, h = max(scored, key=lambda s: s[0])
    return {"file": h["file"], "line": int(h["line"]), "code": h.get("code", ""), "value": w}


def _at_line(f: Finding, line: dict | None) -> Finding:
    """The finding pointed at its hot line (`_top_line`), which its evidence also carries."""
    if not line:
        return f
    return replace(
        f, file=line["file"], line=line["line"], evidence={**f.evidence, "hot_line": line}
    )


def _rule_gain(k: NcuLaunch, rule: str) -> float | None:
    """NVIDIA's estimated speedup for a rule of this launch, as a share of its time."""
    pcts = [r["speedup_pct"] for r in k.rules if r["rule"] == rule and r.get("speedup_pct")]
    return max(pcts) / 100 if pcts else None


_MMA_CALL = re.compile(r"\b(?:tl\.dot|warpgroup_mma|tcgen05_mma)\(")


def _calls_dot(k: NcuLaunch) -> bool:
    """A hot line of the kernel multiplies tiles (tl.dot, Gluon's warpgroup_mma or tcgen05_mma):
    a tile kernel."""
    return any(_MMA_CALL.search(h.get("code") or "") for h in k.hot_lines or [])


def _sourced(f: Finding, source: str) -> Finding:
    return replace(f, evidence={**f.evidence, "source": source})


def _base(k: NcuLaunch) -> dict[str, Any]:
    return {"launch": k.launch, "kernel": k.kernel, "config": k.config}


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
