"""Findings from the accesses the check watched: writes and reads out of bounds, reads of
memory nothing wrote, shared-memory races (`check.access` records, in `CaseResult.accesses`
from guard regions and the interpreter's bounds, in `CheckReport.sanitizer` from
compute-sanitizer). One finding per row, at the line of its lead record (placed, with the
most elements); where the compile found an off-by-one mask, the fix says so at its line.
"""

from __future__ import annotations

from workbench.check import access
from workbench.check.result import CaseResult
from workbench.diagnosis.facts import Facts
from workbench.diagnosis.finding import Finding
from workbench.diagnosis.pitfalls import fix_text
from workbench.diagnosis.registry import detector

ROWS = {
    "write": "out-of-bounds-write",
    "read": "out-of-bounds-read",
    "uninitialised-read": "uninitialised-read",
    "race": "smem-race",
    "sync": "smem-race",
}
SHOWN = 4
"""Records named in a finding's evidence."""


@detector("out-of-bounds-write", "out-of-bounds-read", "uninitialised-read", "smem-race")
def accesses(facts: Facts) -> list[Finding]:
    check = facts.check
    if check is None:
        return []
    seen: list[tuple[dict, CaseResult | None]] = [(r, c) for c in check.cases for r in c.accesses]
    seen += [(r, None) for r in check.sanitizer.get("accesses", [])]
    by_row: dict[str, list[tuple[dict, CaseResult | None]]] = {}
    for r, c in seen:
        if r.get("kind") in ROWS:
            by_row.setdefault(ROWS[r["kind"]], []).append((r, c))
    mask = next((f for f in facts.compile_findings if f.id == "off-by-one-mask"), None)
    return [_finding(row, found, mask) for row, found in by_row.items()]


def _finding(
    row: str, found: list[tuple[dict, CaseResult | None]], mask: Finding | None
) -> Finding:
    records = [r for r, _ in found]
    lead = max(records, key=lambda r: (r.get("line") is not None, r.get("count") or 0))
    cases = list(dict.fromkeys(_case(c) for _, c in found if c is not None))
    watchers = {s for r in records for s in str(r.get("source", "")).split(", ") if s}
    watchers |= {f"compute-sanitizer {r['tool']}" for r in records if r.get("tool")}
    watchers.discard("sanitizer")
    evidence = {
        "source": "check",
        "watchers": sorted(watchers),
        "cases": len(cases),
        "examples": cases[:SHOWN],
        "accesses": [access.describe(r) for r in _distinct(records)[:SHOWN]],
        "tensor": lead.get("tensor"),
        "line": lead.get("line"),
    }
    variant = None
    if mask is not None and row in ("out-of-bounds-write", "out-of-bounds-read"):
        variant = "off-by-one"
        evidence |= {"line": mask.line, "mask_line": mask.line}
    elif lead.get("kind") == "sync":
        variant = "sync"
    where = f", in {len(cases)} case{'s' * (len(cases) != 1)}" if cases else ""
    return Finding(
        row,
        access.describe(lead, via=False) + where,
        "high",
        evidence,
        fix_text(row, evidence, variant),
        lead.get("file"),
        lead.get("line"),
    )


def _case(c: CaseResult) -> str:
    return f"{'x'.join(map(str, c.shape))} {c.dtype} {c.layout}"


def _distinct(records: list[dict]) -> list[dict]:
    """One record per tensor, side and line, the one with the most elements first."""
    kept: dict[tuple, dict] = {}
    for r in sorted(records, key=lambda r: -(r.get("count") or 0)):
        kept.setdefault((r.get("tensor"), r.get("side"), r.get("line")), r)
    return list(kept.values())
