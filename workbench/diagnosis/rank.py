"""Findings made one per problem, weighed against the roofline, and ranked.

`join` makes the findings of one pitfall one (a spill read from the cubin and measured by ncu,
a missing mask seen in the TTIR and proven by the check), the measured one leading, and folds a
consequence into its cause (occupancy limited by the registers of a spill; NVIDIA's rule that
says what one of ours says). `apply_roofline` caps every gain by the kernel's headroom and turns
what the measurement contradicts into info, saying why; `apply_launch` weighs a kernel's gains
by its busy share of a call; `explain` folds a far placement into the finding that explains it.
`rank` orders by severity, wrong results before time, then gain.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from workbench.check.result import CheckReport
from workbench.diagnosis.facts import LaunchFacts
from workbench.diagnosis.finding import SEVERITIES, Finding, demoted
from workbench.diagnosis.pitfalls import KINDS, OCCUPANCY_RULES, known, pitfall
from workbench.diagnosis.roofline import Placement

SOURCES = ("check", "ncu", "bench", "nsys", "configs", "static", "cache")
"""Whose evidence leads a joined finding: a measurement before a static estimate."""
WRONG = ("correctness", "error")
"""Kinds whose findings say the kernel is wrong or does not run."""
CARRIED = ("alternatives", "try")
"""Evidence a fix needs (what `diagnose --try` applies), lifted from the finding that offers the
fix to the joined one."""
MIN_GAIN = 0.05
"""A performance finding whose gain, capped by the headroom, is under this is info: 5 % is
inside the spread of repeated timings (p20-p80) and of run-to-run clock variation."""
CAUSES = (
    ("ncu-rule", None, True),
    ("low-occupancy", "register-spill", False),
    ("off-by-one-mask", "out-of-bounds-read", False),
    ("no-boundary-mask", "out-of-bounds-read", False),
    ("off-by-one-mask", "out-of-bounds-write", False),
    ("no-boundary-mask", "out-of-bounds-write", False),
    ("nan-inf", "out-of-bounds-read", False),
    ("nan-inf", "uninitialised-read", False),
    ("reduction-across-blocks", "smem-race", False),
    ("nan-inf", "smem-race", False),
)
"""(consequence, cause, takes its gain) folded in this order when both fire: NVIDIA's rule into
our finding that says the same (its peer; the rule's estimate is that finding's own), then
occupancy limited by registers into the spill that takes them (a spill-free config keeps the
tile's occupancy, so the occupancy estimate is not the spill fix's gain). An access out of
bounds that the check watched happen takes in the mask the TTIR or the failed cases point at
(the access finding names the mask's line in its fix), and NaNs that a read past the end or of
uninitialised memory brought in. Runs that differ, or NaNs, beside a shared-memory race the
sanitizer saw are that race's doing."""


def source(f: Finding) -> str:
    return str(f.evidence.get("source") or "static")


def join(findings: list[Finding], peers: dict[str, str]) -> list[Finding]:
    """One finding per pitfall (per measured kernel); `peers` maps NVIDIA's rules to our ids."""
    groups: dict[tuple[str, str | None], list[Finding]] = {}
    for f in findings:
        kernel = f.evidence.get("kernel") if source(f) == "ncu" else None
        groups.setdefault((f.id, kernel), []).append(f)
    # findings of no kernel (static, check) join the group of their id that has one
    for id, kernel in [key for key in groups if key[1] is None]:
        named = [key for key in groups if key[0] == id and key[1] is not None]
        if named:
            groups[named[0]] += groups.pop((id, kernel))
    joined = [_merge(group) for group in groups.values()]
    return _fold(joined, peers)


def _merge(group: list[Finding]) -> Finding:
    if len(group) == 1:
        return group[0]
    order = {s: i for i, s in enumerate(SOURCES)}
    severity = {s: i for i, s in enumerate(SEVERITIES)}
    ranked = sorted(group, key=lambda f: (order.get(source(f), 9), severity.get(f.severity, 9)))
    lead, rest = ranked[0], ranked[1:]
    at = next((f for f in ranked if f.line is not None), lead)
    evidence = {
        **lead.evidence,
        "sources": list(dict.fromkeys(source(f) for f in ranked)),
        "joined": [_as_evidence(f) for f in rest],
    }
    gains = [f.gain for f in ranked if f.gain is not None]
    offer = next((f for f in ranked if f.fix_id), None)
    if offer is not None:
        evidence |= {k: offer.evidence[k] for k in CARRIED if k in offer.evidence}
    return replace(
        lead,
        evidence=evidence,
        file=at.file,
        line=at.line,
        gain=gains[0] if gains else None,
        fix_id=offer.fix_id if offer else None,
        fix=offer.fix if offer else lead.fix,
    )


def _fold(findings: list[Finding], peers: dict[str, str]) -> list[Finding]:
    """Fold each consequence into its cause: the cause keeps its severity, takes the gain the
    consequence was measured with when it has none, and lists it under evidence["folded"]."""
    kept = list(findings)
    for consequence, cause, takes_gain in CAUSES:
        for f in [f for f in kept if f.id == consequence]:
            wanted = cause or peers.get(str(f.evidence.get("rule")))
            if consequence == "low-occupancy" and "registers" not in _limiter(f):
                continue
            target = next((c for c in kept if c.id == wanted and _same_kernel(c, f)), None)
            if target is None:
                continue
            folded = [*target.evidence.get("folded", []), _as_evidence(f, keep_folded=True)]
            kept[kept.index(target)] = replace(
                target,
                evidence={**target.evidence, "folded": folded},
                gain=f.gain
                if takes_gain and target.gain is None and target.severity != "info"
                else target.gain,
            )
            kept.remove(f)
    return kept


def apply_roofline(findings: list[Finding], placed: Placement | None) -> list[Finding]:
    """Cap performance gains by the headroom; near the ceiling the occupancy rows are info, and
    a performance finding with less than MIN_GAIN left is info; each says why."""
    if placed is None:
        return findings
    out = []
    for f in findings:
        kind = kind_of(f)
        if kind not in ("performance", "occupancy"):
            out.append(f)
            continue
        gain = f.gain
        if gain is not None and placed.headroom is not None:
            gain = min(gain, placed.headroom)
        if f.severity == "info":
            out.append(replace(f, gain=gain))
            continue
        why = None
        if kind == "occupancy" and placed.near_peak:
            why = f"{placed.short}: little left; the occupancy rules do not apply"
        elif placed.headroom is not None and placed.headroom < MIN_GAIN:
            why = f"{placed.short}: nothing left to gain"
        elif gain is not None and gain < MIN_GAIN:
            why = f"{placed.short}: under {MIN_GAIN:.0%} of the time to gain"
        if why:
            f = demoted(f, why)
        out.append(replace(f, gain=gain))
    return out


def apply_launch(findings: list[Finding], launch: LaunchFacts | None) -> list[Finding]:
    """The kernels' own time is the busy share of a call: a fix to a kernel saves its gain times
    that share (all of it for one long kernel, little between launches of tiny ones)."""
    if launch is None or not launch.idle_fraction:
        return findings
    busy = 1.0 - launch.idle_fraction
    out = []
    for f in findings:
        if kind_of(f) not in ("performance", "occupancy") or f.gain is None:
            out.append(f)
            continue
        gain = f.gain * busy
        f = replace(f, gain=gain)
        if f.severity != "info" and gain < MIN_GAIN:
            why = (
                f"the GPU is busy {busy:.0%} of a call ({launch.launches} launches): a faster "
                "kernel saves little of it"
            )
            f = demoted(f, why)
        out.append(f)
    return out


SHORT_KERNEL_NS = 20_000
"""A kernel shorter than this (20 us) is mostly launch latency and ramp: its achieved
occupancy, its grid, where its warps stall and how far it is from a bandwidth measured on a
1 GB copy describe the input's size, not the kernel."""
SIZE_BOUND = ("memory-far-from-peak",)
"""Performance rows that a short kernel's size explains (beside every occupancy row)."""


def apply_short_kernels(findings: list[Finding], launch: LaunchFacts | None) -> list[Finding]:
    """Occupancy rows and the distance from the copy bandwidth are info when the call's kernels
    are too short for them to matter."""
    if launch is None or not launch.launches or launch.gpu_busy_ns is None:
        return findings
    each = launch.gpu_busy_ns / launch.launches
    if each >= SHORT_KERNEL_NS:
        return findings
    why = (
        f"each kernel runs {each / 1e3:.1f} us: launch latency and ramp-up dominate so short a "
        "kernel; time it at a larger input before tuning its occupancy or grid"
    )
    sized = [f for f in findings if kind_of(f) == "occupancy" or f.id in SIZE_BOUND]
    return [demoted(f, why) if f in sized and f.severity != "info" else f for f in findings]


def apply_check(findings: list[Finding], check: CheckReport | None) -> list[Finding]:
    """A missing mask read from the IR is info when the check passed at every shape that leaves
    a partial tile: the unmasked access stays in bounds by construction (a partner's partials,
    a padded buffer), and a measurement outranks a pattern."""
    if check is None:
        return findings
    passed = {tuple(c.shape) for c in check.cases if c.status == "passed"}
    failed = {tuple(c.shape) for c in check.cases if c.status != "passed"}
    out = []
    for f in findings:
        shapes = {tuple(s) for s in f.evidence.get("irregular_shapes") or []}
        proven = shapes and shapes <= passed and not shapes & failed
        if f.id == "no-boundary-mask" and source(f) == "static" and proven:
            listed = ", ".join("x".join(map(str, s)) for s in sorted(shapes))
            f = demoted(f, f"the check passed at every shape with a partial tile ({listed})")
        out.append(f)
    return out


SEVERITY_BY_GAIN = ((0.25, "high"), (0.10, "medium"), (0.0, "low"))
"""The most severe a performance finding may be for its weighed gain: a fix that saves under a
tenth of a call is worth a look, not an alarm."""


def cap_by_gain(findings: list[Finding]) -> list[Finding]:
    """A performance or occupancy finding's severity is at most what its known gain earns."""
    order = {s: i for i, s in enumerate(SEVERITIES)}
    out = []
    for f in findings:
        if f.gain is not None and kind_of(f) in ("performance", "occupancy"):
            earned = next(s for floor, s in SEVERITY_BY_GAIN if f.gain >= floor)
            if order.get(f.severity, 9) < order[earned]:
                evidence = {**f.evidence, "severity_before": f.severity}
                f = replace(f, severity=earned, evidence=evidence)
        out.append(f)
    return out


def explain(findings: list[Finding]) -> list[Finding]:
    """A memory-bound kernel far from its peak says where it stands, not why: when a finding as
    severe gives the reason (a grid that leaves SMs idle, uncoalesced access, spills), the
    placement folds into the one of them with the most to gain."""
    far = next((f for f in findings if f.id == "memory-far-from-peak"), None)
    if far is None or far.severity == "info":
        return findings
    order = {s: i for i, s in enumerate(SEVERITIES)}
    causes = [
        f
        for f in findings
        if f is not far
        and order[f.severity] <= order[far.severity]
        and kind_of(f) in ("performance", "occupancy")
    ]
    if not causes:
        return findings
    cause = max(causes, key=lambda f: f.gain or 0.0)
    folded = [*cause.evidence.get("folded", []), _as_evidence(far)]
    merged = replace(cause, evidence={**cause.evidence, "folded": folded})
    return [merged if f is cause else f for f in findings if f is not far]


def rank(findings: list[Finding]) -> list[Finding]:
    """Most severe first; at one severity, wrong results before time (a wrong kernel's speed is
    moot), a cause seen on the module's own inputs before one seen only on inputs the check
    derived from them, then most to gain (unknown gains last)."""
    severity = {s: i for i, s in enumerate(SEVERITIES)}
    kinds = {k: i for i, k in enumerate(KINDS)}
    return sorted(
        findings,
        key=lambda f: (
            severity.get(f.severity, len(SEVERITIES)),
            kind_of(f) not in WRONG,
            f.evidence.get("given") is False,
            -(f.gain if f.gain is not None else -1.0),
            kinds.get(kind_of(f), len(KINDS)),
            f.id,
        ),
    )


def kind_of(f: Finding) -> str:
    """The row's kind; an NVIDIA rule weighs as occupancy when its remedy is more warps."""
    if f.id == "ncu-rule":
        return "occupancy" if f.evidence.get("rule") in OCCUPANCY_RULES else "performance"
    return pitfall(f.id).kind if known(f.id) else "info"


def _as_evidence(f: Finding, keep_folded: bool = False) -> dict:
    out: dict[str, Any] = {
        "id": f.id,
        "source": source(f),
        "title": f.title,
        "severity": f.severity,
    }
    if f.file:
        out["at"] = f"{f.file}:{f.line}" if f.line else f.file
    if f.gain is not None:
        out["gain"] = f.gain
    skip = ("source", "joined") if keep_folded else ("source", "joined", "folded")
    return out | {k: v for k, v in f.evidence.items() if k not in skip}


def _same_kernel(a: Finding, b: Finding) -> bool:
    ka, kb = a.evidence.get("kernel"), b.evidence.get("kernel")
    return ka is None or kb is None or ka == kb


def _limiter(f: Finding) -> str:
    return str(f.evidence.get("occupancy_limiter") or f.evidence.get("limiter") or "")
