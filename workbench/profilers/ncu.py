"""Nsight Compute command lines: presets, NVTX and kernel filters, metric checks.

The command profiles only the launches inside the workbench's NVTX range(s), optionally only the
Triton kernels the spec names, and at most `launch_count` of them; it never changes GPU clocks
(`--clock-control none`), embeds the Python source so lines can be shown with their counters,
and writes the report into the run's folder.
"""

from __future__ import annotations

import difflib
import subprocess
from dataclasses import dataclass, field

from workbench.profilers.launch import PLACEHOLDER
from workbench.profilers.names import kernel_regex, nvtx_include
from workbench.profilers.ncumetrics import work_metric_names
from workbench.profilers.toolerrors import Filters
from workbench.runtime.errors import fail

REPORT_STEM = "profile"

# Spills (local memory = register spills in Triton code) and shared-memory bank conflicts:
# counters that no small section carries. `derived__*` names are refused by --metrics.
SPILL_METRICS = (
    "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum",
    "smsp__sass_inst_executed_op_local_ld.sum",
    "smsp__sass_inst_executed_op_local_st.sum",
    "sass__inst_executed_register_spilling",
)
BANK_METRICS = (
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "smsp__sass_inst_executed_op_shared_ld.sum",
    "smsp__sass_inst_executed_op_shared_st.sum",
)

WORK = work_metric_names()
"""DRAM bytes and tensor/FP operation counts: the work each launch did (`NcuLaunch`)."""


@dataclass(frozen=True)
class Preset:
    name: str
    sections: tuple[str, ...] = ()
    set_name: str | None = None
    metrics: tuple[str, ...] = ()
    description: str = ""


PRESETS = {
    "quick": Preset(
        "quick",
        ("LaunchStats", "Occupancy", "SpeedOfLight", "SourceCounters"),
        metrics=SPILL_METRICS + BANK_METRICS + WORK,
        description="launch, occupancy, speed of light, per-line counters, spills, bank conflicts",
    ),
    "memory": Preset(
        "memory",
        (
            "LaunchStats",
            "Occupancy",
            "SpeedOfLight",
            "MemoryWorkloadAnalysis",
            "MemoryWorkloadAnalysis_Tables",
            "SchedulerStats",
            "WarpStateStats",
            "SourceCounters",
        ),
        metrics=SPILL_METRICS + BANK_METRICS + WORK,
        description="quick + memory tables, scheduler and warp-state statistics",
    ),
    "full": Preset(
        "full",
        set_name="full",
        metrics=SPILL_METRICS + BANK_METRICS + WORK,
        description="--set full",
    ),
}


@dataclass
class NcuPlan:
    """One ncu invocation, before the run folder exists (`{run_dir}` stands for it)."""

    ncu: str
    preset: Preset
    ranges: list[str]
    kernels: list[str] = field(default_factory=list)
    metrics: list[str] = field(default_factory=list)
    launch_count: int | None = None
    dropped: list[str] = field(default_factory=list)
    """Preset metrics this ncu does not know (left out rather than losing the run)."""

    @property
    def filters(self) -> Filters:
        return Filters(
            tuple(nvtx_include(r) for r in self.ranges),
            kernel_regex(self.kernels),
            self.launch_count,
        )

    def command(self) -> list[str]:
        f = self.filters
        cmd = [self.ncu, "--nvtx"]
        for expr in f.nvtx:
            cmd += ["--nvtx-include", expr]
        if f.kernel:
            cmd += ["-k", f.kernel]
        if self.launch_count:
            cmd += ["--launch-count", str(self.launch_count)]
        if self.preset.set_name:
            cmd += ["--set", self.preset.set_name]
        for section in self.preset.sections:
            cmd += ["--section", section]
        if self.metrics:
            cmd += ["--metrics", ",".join(self.metrics)]
        cmd += ["--import-source", "yes", "--clock-control", "none"]
        cmd += ["-f", "-o", f"{PLACEHOLDER}/{REPORT_STEM}"]
        return cmd


def plan(
    ncu: str,
    preset: str,
    ranges: list[str],
    kernels: list[str],
    user_metrics: list[str],
    launch_count: int | None,
    known: set[str] | None,
) -> NcuPlan:
    """Choose filters and metrics. `known` (base metric names this ncu knows) may be None."""
    if preset not in PRESETS:
        raise fail(
            "unknown-preset",
            f"no ncu preset {preset!r}",
            f"use one of {', '.join(PRESETS)}",
        )
    chosen = PRESETS[preset]
    metrics, dropped = [], []
    for m in chosen.metrics:
        (metrics if known is None or base_name(m) in known else dropped).append(m)
    for m in user_metrics:
        check_metric_name(m, known)
        if m not in metrics:
            metrics.append(m)
    return NcuPlan(ncu, chosen, ranges, kernels, metrics, launch_count, dropped)


def base_name(metric: str) -> str:
    """`dram__bytes_read.sum.per_second` -> `dram__bytes_read` (what --query-metrics lists)."""
    return metric.split(".", 1)[0]


def check_metric_name(metric: str, known: set[str] | None) -> None:
    """Refuse a name ncu would abort on (it kills the program and saves nothing)."""
    if metric.startswith("derived__"):
        raise fail(
            "unknown-metric",
            f"{metric!r} is a derived metric: ncu computes those only inside sections and "
            "refuses them in --metrics",
            "use --preset memory (MemoryWorkloadAnalysis_Tables) or full to get it",
        )
    if known is None or metric.startswith(("regex:", "group:", "breakdown:")):
        return
    base = base_name(metric)
    if base not in known:
        close = difflib.get_close_matches(base, sorted(known), n=3, cutoff=0.7)
        hint = f"did you mean {', '.join(close)}? " if close else ""
        raise fail(
            "unknown-metric",
            f"ncu on this GPU has no metric {metric!r}",
            f"{hint}list the names with `ncu --query-metrics`",
        )


METRIC_TYPES = ("Counter", "Ratio", "Throughput")


def parse_query_metrics(text: str) -> set[str]:
    """Names from `ncu --query-metrics` tables: rows are "NAME  TYPE  UNIT  DESCRIPTION"."""
    names = set()
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 2 and fields[1] in METRIC_TYPES:
            names.add(fields[0])
    return names


def known_metrics(ncu: str, timeout: float = 120.0) -> set[str] | None:
    """Metric base names ncu offers on this machine's GPU, or None when it cannot tell.

    The hardware counters are listed by default; launch__/device__/source metrics live in
    collections of their own, asked for one by one.
    """
    names: set[str] = set()
    for collection in (None, "launch", "device", "source"):
        cmd = [ncu, "--query-metrics"]
        if collection:
            cmd += ["--query-metrics-collection", collection]
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except (OSError, subprocess.TimeoutExpired):
            return None
        if out.returncode != 0 and collection is None:
            return None
        names |= parse_query_metrics(out.stdout)
    return names or None
