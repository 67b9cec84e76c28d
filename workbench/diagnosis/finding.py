"""A finding: one diagnosed problem with its evidence, the fix to try and the line it points at;
static (compile time) and measured (ncu) findings share it, so the two read alike."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

SEVERITIES = ("high", "medium", "low")


@dataclass(frozen=True)
class Finding:
    id: str
    title: str
    severity: str
    """high | medium | low."""
    evidence: dict = field(hash=False, compare=False)
    fix: str = ""
    file: str | None = None
    line: int | None = None

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> Finding:
        return cls(**{k: d.get(k) for k in cls.__dataclass_fields__})
