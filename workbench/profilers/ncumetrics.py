"""What Nsight Compute measured on one launch, typed: `NcuLaunch`, whose fields are the metrics the
workbench reads, each with ncu's name for it beside it. The summary (`summary.kernel_launches`)
is built from the field list, and its readers (the diagnosis, the views) name fields, not keys.

The metric names are Hopper's (ncu 2025.x); where ncu renamed one, the older name follows as a
fallback. Pure: no pandas.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from workbench.runtime.records import Record, fields_dict

SECTOR_BYTES = 32
LIMITS = {
    "registers": "launch__occupancy_limit_registers",
    "shared memory": "launch__occupancy_limit_shared_mem",
    "warps": "launch__occupancy_limit_warps",
    "blocks": "launch__occupancy_limit_blocks",
    "barriers": "launch__occupancy_limit_barriers",
}
"""Blocks per SM each resource allows, by the resource's name in the occupancy limiter."""


def metric(*names: str) -> Any:
    """A field read from ncu: the first of `names` the launch has (None when it has none)."""
    return field(default=None, metadata={"ncu": names})


def total(*terms: tuple[str, int]) -> Any:
    """A field summed from ncu's metrics, each (name, weight): the work a launch did (None when
    ncu collected none of them)."""
    return field(default=None, metadata={"sum": terms})


@dataclass(frozen=True)
class NcuLaunch(Record):
    """One profiled launch: where it ran, the metrics read (base units: ns, bytes, %), what they
    give together, NVIDIA's rules that fired and the hottest source lines."""

    launch: int
    range: str | None
    kernel: str
    config: str | None
    duration_ns: float | None = metric("gpu__time_duration.sum")
    registers_per_thread: float | None = metric("launch__registers_per_thread")
    grid_size: float | None = metric("launch__grid_size")
    block_size: float | None = metric("launch__block_size")
    shared_mem_per_block: float | None = metric("launch__shared_mem_per_block_allocated")
    waves_per_sm: float | None = metric("launch__waves_per_multiprocessor")
    theoretical_occupancy_pct: float | None = metric("sm__maximum_warps_per_active_cycle_pct")
    achieved_occupancy_pct: float | None = metric(
        "sm__warps_active.avg.pct_of_peak_sustained_active"
    )
    sm_throughput_pct: float | None = metric("sm__throughput.avg.pct_of_peak_sustained_elapsed")
    memory_throughput_pct: float | None = metric(
        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
    )
    dram_throughput_pct: float | None = metric(
        "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
        "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    )
    local_ld_sectors: float | None = metric("l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum")
    local_st_sectors: float | None = metric("l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum")
    local_ld_instructions: float | None = metric("smsp__sass_inst_executed_op_local_ld.sum")
    local_st_instructions: float | None = metric("smsp__sass_inst_executed_op_local_st.sum")
    spill_instructions: float | None = metric(
        "sass__inst_executed_register_spilling", "derived__local_spilling_requests"
    )
    smem_bank_conflicts_ld: float | None = metric(
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"
    )
    smem_bank_conflicts_st: float | None = metric(
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"
    )
    smem_wavefronts_ld: float | None = metric(
        "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"
    )
    smem_wavefronts_st: float | None = metric(
        "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"
    )
    dram_bytes: float | None = total(("dram__bytes_read.sum", 1), ("dram__bytes_write.sum", 1))
    # Tensor-path "ops" are FLOPs: 2 per multiply-add (a 1024^3 bf16 matmul counts 2 * 1024^3).
    tensor_flops: float | None = total(
        *(
            (f"sm__ops_path_tensor_src_{path}.sum", 1)
            for path in ("bf16_dst_fp32", "fp16_dst_fp16", "fp16_dst_fp32", "tf32_dst_fp32", "fp64")
        )
    )
    # Thread instructions on the FP pipes, weighted as ncu's own roofline charts weigh them.
    fp_flops: float | None = total(
        *(
            (f"smsp__sass_thread_inst_executed_op_{p}{op}_pred_on.sum", w * (2 if p == "h" else 1))
            for p in "fhd"
            for op, w in (("add", 1), ("mul", 1), ("fma", 2))
        )
    )
    occupancy_limits: dict[str, float] | None = None
    """Blocks per SM each resource allows (`LIMITS`)."""
    occupancy_limiter: str | None = None
    """The resources that allow the fewest blocks ("registers, warps" for a tie)."""
    local_bytes: float | None = None
    """Local-memory (spill) traffic at L1: its sectors x 32 bytes."""
    device: str | None = None
    rules: list[dict] = field(default_factory=list)
    """NVIDIA's rule results that fired on the launch (all but OK)."""
    hot_lines: list[dict] | None = None
    """The hottest source lines with their counters; None when the report has none."""

    @classmethod
    def measured(
        cls,
        info: Mapping[str, Any],
        values: Mapping[str, Any],
        rules: list[dict],
        hot_lines: list[dict] | None,
    ) -> NcuLaunch:
        """The launch `info` (launch, range, kernel, config, attributes) with its metric
        `values` by ncu's name, read into the fields."""
        read: dict[str, Any] = {}
        for f in fields(cls):
            if "ncu" in f.metadata:
                read[f.name] = next((values[n] for n in f.metadata["ncu"] if n in values), None)
            elif "sum" in f.metadata:
                counted = [values[n] * weight for n, weight in f.metadata["sum"] if n in values]
                read[f.name] = sum(counted) if counted else None
        limits = {label: values[m] for label, m in LIMITS.items() if m in values}
        low = min(limits.values(), default=None)
        sectors = [s for s in (read["local_ld_sectors"], read["local_st_sectors"]) if s is not None]
        return cls(
            launch=info["launch"],
            range=info["range"],
            kernel=info["kernel"],
            config=info["config"],
            **read,
            occupancy_limits=limits or None,
            occupancy_limiter=", ".join(k for k, v in limits.items() if v == low) or None,
            local_bytes=sum(sectors) * SECTOR_BYTES if sectors else None,
            device=(info.get("attributes") or {}).get("device__attribute_display_name"),
            rules=rules,
            hot_lines=hot_lines,
        )

    def to_dict(self) -> dict[str, Any]:
        """Its fields; `hot_lines` only when the report has per-line counters."""
        out = fields_dict(self)
        if self.hot_lines is None:
            del out["hot_lines"]
        return out


def work_metric_names() -> tuple[str, ...]:
    """The metrics summed into the work fields (DRAM bytes, tensor and FP operations)."""
    return tuple(n for f in fields(NcuLaunch) for n, _ in f.metadata.get("sum", ()))


def launches(summary: Mapping[str, Any] | None) -> list[NcuLaunch]:
    """The launches of an ncu summary's JSON (fresh or stored); none for another tool's."""
    if not summary or summary.get("tool") != "ncu":
        return []
    return [NcuLaunch.from_dict(k) for k in summary.get("kernels", [])]
