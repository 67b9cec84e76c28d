"""A finding: one diagnosed problem with its evidence, the fix to try and the line it points at;
static (compile time), dynamic (check), measured (ncu, nsys, timings) findings share it, so all
read alike."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

SEVERITIES = ("high", "medium", "low", "info")
"""Most severe first; "info" is a fact worth knowing that asks for no change."""
CACHE_SEVERITIES = {"error": "high", "warning": "medium"}
"""The cache doctor's own words for severity, which results stored before its findings were
Findings carry: read back in the one scale."""


@dataclass(frozen=True)
class Finding:
    id: str
    """The pitfall's id in the table (`diagnosis.pitfalls`), or a tool's own (ncu-rule)."""
    title: str
    severity: str
    evidence: dict = field(hash=False, compare=False)
    fix: str = ""
    file: str | None = None
    line: int | None = None
    gain: float | None = field(default=None, compare=False)
    """Estimated share of the kernel's time the fix would save (0..1); None when unknown."""
    fix_id: str | None = field(default=None, compare=False)
    """What `diagnose --try` accepts to apply the fix by itself; None when only a person can."""

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> Finding:
        fields: dict[str, Any] = {
            k: d.get(k) for k in cls.__dataclass_fields__ if k in d or k == "evidence"
        }
        if isinstance(fields["evidence"], str):  # a stored cache finding: text, plan beside it
            plan = {k: d[k] for k in ("remove", "bytes", "stale") if k in d}
            fields["evidence"] = {"detail": fields["evidence"], **plan}
        fields["severity"] = CACHE_SEVERITIES.get(fields["severity"], fields["severity"])
        return cls(**fields)


def demoted(f: Finding, why: str) -> Finding:
    """The finding as info, saying why a measurement outweighs it and what it was before."""
    evidence = {**f.evidence, "demoted": why, "severity_before": f.severity}
    return replace(f, severity="info", evidence=evidence)
