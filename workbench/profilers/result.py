"""The profile-target job's output, typed (pure: no torch): what ran inside each NVTX range that
the profiler wrapping the job records. The profiler's own report is read by `ncureport` and
`nsysreport`; this is the job's side of it.

`from_dict` takes exactly the keys `to_dict` writes (a missing or unknown one is a TypeError)
and recomputes the summary.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass
class TargetResult:
    kernel: str
    device: str
    """The GPU's name, or the device it ran on without one (cpu)."""
    mode: str
    """"gpu", or "interpreter" (no profiler records a CPU run: the job's own test)."""
    warmup: int
    repeats: int
    ranges: list[dict]
    """Per config, in order: its range name, shape, dtype, warmup_s and range_s."""
    jit_kernels: list[str]
    """The Triton kernels the spec declares: what a missing launch is checked against."""
    pin: dict | None
    """The pinned kernel and config label (`profile --pin`), else None."""

    def summary(self) -> dict[str, int]:
        return {"ranges": len(self.ranges), "repeats": self.repeats}

    def to_dict(self) -> dict:
        return {**asdict(self), "summary": self.summary()}

    @classmethod
    def from_dict(cls, d: dict) -> TargetResult:
        return cls(**{k: v for k, v in d.items() if k != "summary"})
