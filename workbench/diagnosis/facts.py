"""What the diagnosis reads and what it gives back: `Facts` gathered about one kernel (by
`workbench.loop`, from the jobs, or from imported reports) and the ranked `Diagnosis`.

Pure data, no torch: every field is optional, since each machine gathers what it can (a CPU
host has the check in the interpreter and the cross-compiled resources; a GPU host adds timings,
Nsight Compute and Nsight Systems). `missing` says what was not gathered and why.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from workbench.bench.result import BenchResult
from workbench.check.result import CheckReport
from workbench.diagnosis.finding import Finding
from workbench.runtime.records import Record


@dataclass
class LaunchFacts(Record):
    """How the kernel's workload launches, from Nsight Systems and from timing it eagerly and
    replayed from one CUDA graph."""

    launches: int | None = None
    """Kernel launches in one call of kernel_fn."""
    wall_ns: float | None = None
    """One call's time on the host, first launch to last kernel end."""
    gpu_busy_ns: float | None = None
    """Sum of kernel durations inside that call."""
    mean_gap_ns: float | None = None
    """Mean idle time between consecutive kernels of the call."""
    eager_ms: float | None = None
    graph_ms: float | None = None
    graph_correct: bool | None = None
    """The graph replay's outputs checked against the reference."""
    shape: list[int] | None = None
    dtype: str | None = None

    @property
    def idle_fraction(self) -> float | None:
        if not self.wall_ns or self.gpu_busy_ns is None:
            return None
        return max(0.0, 1.0 - self.gpu_busy_ns / self.wall_ns)


@dataclass
class Facts(Record):
    """Its JSON (`to_dict`) is what a diagnosis can be replayed from (tests/fixtures/diagnosis)."""

    kernel: str
    file: str | None = None
    arch: str | None = None
    """"sm_90": the arch the static facts were compiled for."""
    gpu: str | None = None
    """The GPU the measured facts come from; None on a CPU host."""
    check: CheckReport | None = None
    compile_findings: list[Finding] = field(default_factory=list)
    """Static findings of the IR job (`diagnose_compile`): spill, occupancy, IR and source."""
    configs: list[dict[str, Any]] = field(default_factory=list)
    """The launched config and its cross-compiled neighbours: sweep rows (label, values,
    regs, spill_bytes, shared_bytes, occupancy, limiter, status, ms when timed), the launched
    one with "launched": True."""
    bench: BenchResult | None = None
    ncu: dict | None = None
    """An ncu summary (`profilers.summary`), with its rules and hot lines."""
    launch: LaunchFacts | None = None
    cache: list[Finding] = field(default_factory=list)
    """Autotune-cache findings (`cache.findings`)."""
    missing: dict[str, str] = field(default_factory=dict)
    """fact -> why it was not gathered ("ncu": "no GPU on this host")."""

    @classmethod
    def parsed_fields(cls, d: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "check": CheckReport.from_dict(d["check"]) if d.get("check") else None,
            "compile_findings": [Finding.from_dict(f) for f in d.get("compile_findings") or []],
            "configs": d.get("configs") or [],
            "bench": BenchResult.from_dict(d["bench"]) if d.get("bench") else None,
            "launch": LaunchFacts.from_dict(d["launch"]) if d.get("launch") else None,
            "cache": [Finding.from_dict(f) for f in d.get("cache") or []],
            "missing": d.get("missing") or {},
        }


@dataclass
class Diagnosis(Record):
    kernel: str
    findings: list[Finding]
    """Ranked: most to gain first."""
    roofline: dict | None = None
    """Where the kernel sits: bound, fraction of the ceiling, and what that means."""
    routing: str | None = None
    """Keep the Triton kernel, use the library call, or leave it: from the measured fractions."""
    agreement: list[dict] = field(default_factory=list)
    """Our findings beside Nsight Compute's rules: agree, differ, and why."""
    missing: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parsed_fields(cls, d: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "findings": [Finding.from_dict(f) for f in d["findings"]],
            "agreement": d.get("agreement") or [],
            "missing": d.get("missing") or {},
        }
