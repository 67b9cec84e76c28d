"""The sweep job's output, typed (pure: no torch, no triton).

A row stays the dict the job emits per config, typed (`sweep.row.SweepRow`): the live events,
the TUI and the views take it as is. The explained parts (each row's "why", "brief" and
"model", the per-shape picks, the minimal set, the counts) are recomputed from the rows by
`analysis.summarize`, so `from_dict` takes only what the job recorded and a result that
disagrees with itself does not round-trip.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from workbench.sweep.analysis import summarize
from workbench.sweep.row import ConfigAt, SweepRow

EXPLAINED = ("shapes", "minimal_set", "buckets", "summary")
"""The keys `to_dict` adds to the recorded ones (recomputed on reading)."""
OPTIONAL = ("notes", "shards", "store_problem", "device", "problems", "strategy", "buckets")
"""Recorded keys written only when set: a sweep by one worker has no shards, an exhaustive one no
strategy, a one-shape one no buckets, and one recorded before the static model has no device or
problem facts."""


@dataclass
class SweepResult:
    kernel: str
    mode: str
    """"gpu" (checked and timed) or "cross-compile" (resources only)."""
    arch: str
    gpu: str | None
    gpu_index: str | None
    triton_version: str
    dtype: str | None
    space: str
    jobs: int
    shard: list[int] | None
    """The fixed share of the configs an older multi-GPU run gave this job; None since every
    worker pulls from one queue."""
    rows: list[SweepRow] = field(default_factory=list)
    triton: dict[str, dict] = field(default_factory=dict)
    """Shape -> Triton's own autotuner pick there (`sweep.tuner.triton_pick`)."""
    persisted: dict[str, list[dict]] = field(default_factory=dict)
    device: dict = field(default_factory=dict)
    """The GPU's SM count, and the ridge of its measured ceilings when a bench had measured them
    (`sweep.facts.device`); the static model reads published figures for what is missing."""
    problems: dict[str, dict] = field(default_factory=dict)
    """Shape -> the kernel's integer arguments, the reference's FLOPs and the inputs' element
    size (`sweep.facts.problem`): what tells the model a GEMM and its M, N, K."""
    timings: dict[str, float] = field(default_factory=dict)
    running: ConfigAt | None = None
    """The config being timed (shape, label, values): what a killed run names for --resume."""
    complete: bool = False
    notes: list[str] = field(default_factory=list)
    shards: list[dict] | None = None
    """Per worker of a sweep by several (GPUs, hosts, or one started again where one died):
    its name, gpu_index, host, rows, timings, how it ended and the configs it lost to others."""
    plot: str | None = None
    """The PNG drawn beside the runs (None in the job's own result, or with nothing timed)."""
    store_problem: dict | None = None
    strategy: dict | None = None
    """A search strategy's sweep: its name, budget, seed, and per shape its start, timings and
    seconds (`sweep.strategy`); None: every config timed."""
    shapes: dict[str, dict] = field(default_factory=dict)
    """Shape -> best, best_ms, ranked, triton, finding (`analysis.summarize`)."""
    minimal_set: dict[str, list] = field(default_factory=dict)
    buckets: dict = field(default_factory=dict)
    """Which shapes can share an autotune key bucket (`analysis.buckets`)."""
    summary: dict[str, Any] = field(default_factory=dict)

    def record(self) -> dict:
        """What the job keeps in sweep.json as rows land (the unexplained keys)."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in EXPLAINED}
        return {k: v for k, v in out.items() if k not in OPTIONAL or v}

    def to_dict(self) -> dict:
        explained = {k: getattr(self, k) for k in EXPLAINED}
        return {**self.record(), **{k: v for k, v in explained.items() if k not in OPTIONAL or v}}

    @classmethod
    def from_dict(cls, d: dict) -> SweepResult:
        """A result or a sweep.json (a cancelled or killed job's), explained anew; `d` is left
        as it was (its rows are copied before they are explained)."""
        recorded = {k: v for k, v in d.items() if k not in EXPLAINED}
        recorded["rows"] = [dict(r) for r in recorded.get("rows", [])]
        return summarize(cls(**recorded))
