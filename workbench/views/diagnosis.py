"""A diagnosis as text: the roofline first, findings ranked with evidence, fix and how to try it,
the routing advice, agreement with Nsight Compute, what was not gathered; a trial side by side.
The CLI prints these lines and the TUI's Diagnosis tab shows the same rows."""

from __future__ import annotations

import os
from typing import Any

from workbench.diagnosis.facts import Diagnosis
from workbench.diagnosis.finding import Finding
from workbench.ir.config import shared_values
from workbench.loop.trial import Side, Trial, alternatives
from workbench.views.text import fmt, kv, short_label, table

FINDING_HEADERS = ("#", "severity", "gain", "pitfall", "where")
EVIDENCE_SKIP = (
    "alternatives",
    "configs",
    "launch",
    "kernel",
    "hot_line",
    "message",
    "try",
    "source",
)
"""Evidence keys shown elsewhere (alternatives get their own table) or too long for one line."""


def finding_rows(findings: list[Finding]) -> list[tuple[str, ...]]:
    return [
        (str(i), f.severity, gain_text(f.gain), f.id, where(f)) for i, f in enumerate(findings, 1)
    ]


def gain_text(gain: float | None) -> str:
    return "-" if gain is None else f"{gain:.0%}"


def where(f: Finding) -> str:
    if not f.file:
        return str(f.evidence.get("config") or "")
    return f"{os.path.basename(f.file)}:{f.line}" if f.line else os.path.basename(f.file)


def evidence_text(evidence: dict[str, Any]) -> str:
    """The evidence's values as `name=value`; a finding said in words (the cache doctor's
    `detail`) comes first, as it is."""
    said = [str(evidence["detail"])] if evidence.get("detail") else []
    parts = [
        f"{k}={fmt(v)}"
        for k, v in evidence.items()
        if k not in EVIDENCE_SKIP and k != "detail" and v not in (None, "")
        and not isinstance(v, (dict, list))
    ]  # fmt: skip
    return ", ".join(said + parts)


def alternatives_table(f: Finding) -> str | None:
    """The configs a config fix would time, each named by what it changes."""
    rows = [
        (
            a.get("change") or a.get("label", ""),
            fmt(a.get("regs")),
            fmt(a.get("spill_bytes")),
            fmt(a.get("occupancy")),
            fmt(a.get("ms")),
        )
        for a in alternatives(f)
    ]
    return table(("instead", "regs", "spill B", "occupancy %", "ms"), rows) if rows else None


def roofline_text(roofline: dict | None) -> str:
    if not roofline:
        return "roofline: not placed (no timing or ncu throughput)"
    text = roofline.get("text") or roofline.get("summary")
    if text:
        return f"roofline: {text}"
    return "roofline: " + ", ".join(f"{k} {fmt(v)}" for k, v in roofline.items())


def finding_detail(i: int, f: Finding, name: str, paths: list[str]) -> list[str]:
    """One finding as the CLI prints it below the table (and the TUI beside it)."""
    lines = [f"{i}. [{f.severity}] {f.id}: {f.title}"]
    if ev := evidence_text(f.evidence):
        lines.append(f"   evidence: {ev}")
    if f.evidence.get("demoted"):
        lines.append(f"   {f.severity}: {f.evidence['demoted']}")
    if f.fix:
        lines.append(f"   fix: {f.fix}")
    if alts := alternatives_table(f):
        lines.append("   " + alts.replace("\n", "\n   "))
    if f.fix_id:
        extra = "".join(f" --path {p}" for p in paths)
        lines.append(f"   try it: python -m workbench diagnose {name} --try {f.id}{extra}")
    return lines


def summary_line(d: Diagnosis) -> str:
    loud = [f for f in d.findings if f.severity != "info"]
    if not loud:
        return f"{d.kernel}: nothing above info ({len(d.findings)} finding(s) in all)"
    first = loud[0]
    return f"{d.kernel}: {len(loud)} finding(s) above info; first {first.id} ({first.severity}" + (
        f", {gain_text(first.gain)} to gain)" if first.gain is not None else ")"
    )


def closing_lines(d: Diagnosis) -> list[str]:
    """Routing, agreement with Nsight Compute, and what was not gathered."""
    lines: list[str] = []
    if d.routing:
        lines += ["", f"routing: {d.routing}"]
    if d.agreement:
        rows = [
            (a.get("ours") or "-", a.get("ncu") or "-", a.get("verdict", ""), a.get("why", ""))
            for a in d.agreement
        ]
        lines += ["", "beside Nsight Compute's rules:", table(("ours", "ncu", "", "why"), rows)]
    if d.missing:
        lines += ["", "not gathered: " + "; ".join(f"{k} ({v})" for k, v in d.missing.items())]
    return lines


def diagnosis_text(d: Diagnosis, name: str, paths: list[str]) -> str:
    lines = [roofline_text(d.roofline), ""]
    if not d.findings:
        lines.append("no findings")
    else:
        lines.append(table(FINDING_HEADERS, finding_rows(d.findings)))
        for i, f in enumerate(d.findings, 1):
            if f.severity != "info":
                lines += ["", *finding_detail(i, f, name, paths)]
    return "\n".join(lines + closing_lines(d))


def trial_text(t: Trial) -> str:
    configs = [t.before.values, t.after.values] if t.after else []
    same = shared_values(configs) if all(configs) else {}
    rows = [("before", _label(t.before, same), fmt(t.before.ms, 4), _yes(t.before.correct))]
    if t.after:
        rows.append(("after", _label(t.after, same), fmt(t.after.ms, 4), _yes(t.after.correct)))
    rows += [("peer", p.label, fmt(p.ms, 4), _yes(p.correct)) for p in t.peers]
    head = f"tried {t.fix_id} for {t.finding} at {'x'.join(map(str, t.shape or []))} {t.dtype}"
    lines = [head + (f" on {t.gpu}" if t.gpu else ""), table(("", "run", "ms", "correct"), rows)]
    if t.speedup is not None:
        lines.append(f"speed-up {t.speedup:.2f}x; kept: {(t.kept or t.before).label}")
    else:
        lines.append(f"no correct candidate was faster; kept: {t.before.label}")
    lines += [f"kept vs {p}" for p in peer_ratios(t)]
    if same:
        lines.append(f"both: {kv(same)}")
    failed = [c for c in t.candidates if c.get("status") not in ("ok", None)]
    for c in failed:
        lines.append(f"  {c['label']}: {c['status']} {c.get('why') or ''}".rstrip())
    return "\n".join(lines)


def peer_ratios(t: Trial) -> list[str]:
    """ "PEER: N.NNx" for each correct peer timed beside the trial: how much faster the kept way
    runs than what a user would run instead."""
    kept = t.kept or t.before
    return [f"{p.label}: {p.ms / kept.ms:.2f}x" for p in t.peers if p.ms and kept.ms and p.correct]


def _label(side: Side, same: dict) -> str:
    return short_label(side.values, side.label, same)


def _yes(flag: bool | None) -> str:
    return "-" if flag is None else "yes" if flag else "NO"
