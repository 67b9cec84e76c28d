"""Our findings beside Nsight Compute's rule results: where they agree, where they differ, and
why (a threshold of ours, or the roofline). One row per rule that fired on a launch, and one per
measured finding of ours that no rule shares."""

from __future__ import annotations

from workbench.diagnosis.facts import Facts
from workbench.diagnosis.finding import Finding
from workbench.diagnosis.measured import (
    ACHIEVED_FLOOR,
    BANK_CONFLICT_RATIO,
    EXCESS_SECTORS,
    GAP_FRACTION,
    GRID_IDLE,
    OCCUPANCY_FLOOR,
    RULE_PEERS,
    STALL_SHARE,
    conflict_share,
    grid_fill,
    stall_shares,
)
from workbench.diagnosis.roofline import Placement
from workbench.profilers.ncumetrics import NcuLaunch, launches


def table(facts: Facts, findings: list[Finding], placed: Placement | None) -> list[dict]:
    profiled = launches(facts.ncu)
    if not profiled:
        return []
    ours = _index(findings)
    rows, shared = [], set()
    for k in profiled:
        for r in k.rules:
            peer = RULE_PEERS.get(r["rule"])
            mine = ours.get((peer, k.kernel)) or ours.get((peer, None))
            rows.append(_row(r, k, peer, mine, placed))
            shared |= {(peer, k.kernel), (mine.id if mine else None, k.kernel)}
    for f in findings:
        mine = f.evidence.get("source") == "ncu" and f.id != "ncu-rule"
        if mine and (f.id, f.evidence.get("kernel")) not in shared:
            rows.append(
                {
                    "ours": f.id,
                    "ncu": None,
                    "verdict": "ours only",
                    "why": "no NVIDIA rule in this report's sections says it",
                    "launch": f.evidence.get("launch"),
                }
            )
    return _once(rows)


def _once(rows: list[dict]) -> list[dict]:
    """One row per (ours, ncu, verdict, why), with the launches it was seen on."""
    out: dict[tuple, dict] = {}
    for r in rows:
        key = (r["ours"], r["ncu"], r["verdict"], r["why"])
        if key in out:
            out[key]["launches"].append(r["launch"])
        else:
            out[key] = {k: v for k, v in r.items() if k != "launch"} | {"launches": [r["launch"]]}
    return list(out.values())


def _index(findings: list[Finding]) -> dict[tuple[str | None, str | None], Finding]:
    """Our findings by (id, kernel), folded ones under the finding that holds them."""
    out: dict[tuple[str | None, str | None], Finding] = {}
    for f in findings:
        kernel = f.evidence.get("kernel")
        out.setdefault((f.id, kernel), f)
        for inner in f.evidence.get("folded", []):
            out.setdefault((inner["id"], inner.get("kernel", kernel)), f)
            if inner["id"] == "ncu-rule" and inner.get("rule") in RULE_PEERS:
                out.setdefault((RULE_PEERS[inner["rule"]], kernel), f)
    return out


def _row(r: dict, k: NcuLaunch, peer: str | None, mine: Finding | None, placed: Placement | None):
    name = r["rule"] + (f" ({r['title']})" if r.get("title") else "")
    row = {
        "ours": mine.id if mine else peer,
        "ncu": name,
        "launch": k.launch,
        "speedup_pct": r.get("speedup_pct"),
    }
    if peer is None:
        return row | {"ours": None, "verdict": "ncu only", "why": "no row of ours covers it"}
    if mine is None:
        why = _silent(peer, k)
        if placed is not None and placed.near_peak:
            why += f"; {placed.short}"
        return row | {"verdict": "differ", "why": f"ours is silent: {why}"}
    if mine.severity == "info":
        why = mine.evidence.get("demoted") or mine.evidence.get("why_info") or "ours is info"
        return row | {"verdict": "differ", "why": f"ours is info: {why}"}
    return row | {"verdict": "agree", "why": f"both: {mine.title}"}


def _silent(peer: str, k: NcuLaunch) -> str:
    """Why our detector for `peer` stayed silent on this launch: the figure and our threshold."""
    theoretical = k.theoretical_occupancy_pct or 0.0
    achieved = k.achieved_occupancy_pct or 0.0
    fill = grid_fill(k)
    if peer == "occupancy-gap" and fill is not None and fill["programs"] < fill["sms"]:
        return f"the grid ({fill['programs']} programs) is smaller than the GPU: grid-too-small"
    if peer == "occupancy-gap":
        share = achieved / theoretical if theoretical else 1.0
        return (
            f"achieved {achieved:.0f}% is {share:.0%} of the theoretical {theoretical:g}%; ours "
            f"asks for under {GAP_FRACTION:.0%} (NVIDIA: a 10-point gap)"
        )
    if peer == "low-occupancy":
        return (
            f"theoretical {theoretical:g}%, achieved {achieved:.0f}%; ours asks for under "
            f"{OCCUPANCY_FLOOR:g}% and {ACHIEVED_FLOOR:g}% (NVIDIA: under 80% theoretical)"
        )
    if peer == "grid-too-small":
        idle = f"{fill['idle']:.0%}" if fill else "unknown"
        return f"SM time left idle {idle}; ours asks for {GRID_IDLE:.0%}"
    if peer == "smem-bank-conflicts":
        ratio = conflict_share(k)
        share = f"{ratio:.1%}" if ratio is not None else "unweighed"
        return (
            f"conflict replays are {share} of all shared wavefronts; ours asks for "
            f"{BANK_CONFLICT_RATIO:.0%} (excess wavefronts of wide accesses are not conflicts)"
        )
    if peer == "uncoalesced-access":
        return f"excess global sectors under {EXCESS_SECTORS:.0%} of the ideal on the hot lines"
    if peer == "stall-dominant":
        shares = stall_shares(k)
        top = max(shares.items(), key=lambda s: s[1], default=("none", 0.0))
        return (
            f"the top stall, {top[0]}, is {top[1]:.0%} of samples; ours asks for {STALL_SHARE:.0%}"
        )
    if peer == "register-spill":
        return "no local-memory traffic measured"
    return "its figures are under our threshold"
