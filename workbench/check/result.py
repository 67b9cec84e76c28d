"""The check job's output, typed: one result per case and the report of the whole check.

Pure (no torch): the child fills them, the parent reads them back with `from_dict`; `to_dict` is
the JSON the events and the store carry.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields


@dataclass
class CaseResult:
    shape_set: str
    shape: list[int]
    dtype: str
    layout: str
    """"contiguous", or "strided" when the tensor inputs are non-contiguous views."""
    status: str = "passed"
    """passed | failed | skipped | error."""
    max_abs_diff: float | None = None
    max_rel_diff: float | None = None
    rel_l2: float | None = None
    worst_index: list[int] | None = None
    unwritten: int = 0
    """Output elements left NaN (poisoned before the launch) where the reference is finite."""
    bad: int = 0
    numel: int = 0
    boundary_only: bool = False
    boundary_block: int | None = None
    """The smallest power-of-two tile whose partial last tile holds every wrong element."""
    deterministic: bool | None = None
    reason: str = ""
    problem: dict | None = None
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> CaseResult:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


@dataclass
class CheckReport:
    kernel: str
    device: str
    mode: str
    cases: list[CaseResult] = field(default_factory=list)

    @property
    def correct(self) -> bool:
        ran = [c for c in self.cases if c.status != "skipped"]
        return bool(ran) and all(c.status == "passed" for c in ran)

    def summary(self) -> dict:
        by = {s: sum(c.status == s for c in self.cases) for s in ("passed", "failed", "skipped")}
        by["errors"] = sum(c.status == "error" for c in self.cases)
        failed = [c for c in self.cases if c.status == "failed"]
        contiguous_ok = {
            (c.shape_set, tuple(c.shape), c.dtype)
            for c in self.cases
            if c.layout == "contiguous" and c.status == "passed"
        }
        by["stride_only_errors"] = bool(failed) and all(
            c.layout == "strided" and (c.shape_set, tuple(c.shape), c.dtype) in contiguous_ok
            for c in failed
        )
        by["boundary_only_errors"] = bool(failed) and all(c.boundary_only for c in failed)
        by["nondeterministic"] = any(c.deterministic is False for c in self.cases)
        return by

    def to_dict(self) -> dict:
        return {
            "kernel": self.kernel,
            "device": self.device,
            "mode": self.mode,
            "correct": self.correct,
            "summary": self.summary(),
            "cases": [c.to_dict() for c in self.cases],
        }

    @classmethod
    def from_dict(cls, d: dict) -> CheckReport:
        cases = [CaseResult.from_dict(c) for c in d["cases"]]
        return cls(d["kernel"], d["device"], d["mode"], cases)
