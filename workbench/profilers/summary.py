"""From the long tables of an ncu report to what a person reads: one row per launch, hot lines.

The metric names are Hopper's (ncu 2025.x); where ncu renamed one, the older name is a fallback.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

# column -> metric names, first present wins
KEY_METRICS: dict[str, tuple[str, ...]] = {
    "duration_ns": ("gpu__time_duration.sum",),
    "registers_per_thread": ("launch__registers_per_thread",),
    "grid_size": ("launch__grid_size",),
    "block_size": ("launch__block_size",),
    "shared_mem_per_block": ("launch__shared_mem_per_block_allocated",),
    "waves_per_sm": ("launch__waves_per_multiprocessor",),
    "theoretical_occupancy_pct": ("sm__maximum_warps_per_active_cycle_pct",),
    "achieved_occupancy_pct": ("sm__warps_active.avg.pct_of_peak_sustained_active",),
    "sm_throughput_pct": ("sm__throughput.avg.pct_of_peak_sustained_elapsed",),
    "memory_throughput_pct": ("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",),
    "dram_throughput_pct": (
        "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
        "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    ),
    "local_ld_sectors": ("l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",),
    "local_st_sectors": ("l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum",),
    "local_ld_instructions": ("smsp__sass_inst_executed_op_local_ld.sum",),
    "local_st_instructions": ("smsp__sass_inst_executed_op_local_st.sum",),
    "spill_instructions": (
        "sass__inst_executed_register_spilling",
        "derived__local_spilling_requests",
    ),
    "smem_bank_conflicts_ld": ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",),
    "smem_bank_conflicts_st": ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",),
    "smem_wavefronts_ld": ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",),
    "smem_wavefronts_st": ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",),
}
WORK_METRICS: dict[str, tuple[tuple[str, int], ...]] = {
    "dram_bytes": (("dram__bytes_read.sum", 1), ("dram__bytes_write.sum", 1)),
    # Tensor-path "ops" are FLOPs: 2 per multiply-add (a 1024^3 bf16 matmul counts 2 * 1024^3).
    "tensor_flops": tuple(
        (f"sm__ops_path_tensor_src_{path}.sum", 1)
        for path in ("bf16_dst_fp32", "fp16_dst_fp16", "fp16_dst_fp32", "tf32_dst_fp32", "fp64")
    ),
    # Thread instructions on the FP pipes, weighted as ncu's own roofline charts weigh them.
    "fp_flops": tuple(
        (f"smsp__sass_thread_inst_executed_op_{p}{op}_pred_on.sum", weight * (2 if p == "h" else 1))
        for p in "fhd"
        for op, weight in (("add", 1), ("mul", 1), ("fma", 2))
    ),
}
"""column -> (metric, weight): the work a launch did, a weighted sum over the metrics ncu
collected (None when it collected none of them); the placement on the roofline reads these."""
LIMITS = {
    "registers": "launch__occupancy_limit_registers",
    "shared memory": "launch__occupancy_limit_shared_mem",
    "warps": "launch__occupancy_limit_warps",
    "blocks": "launch__occupancy_limit_blocks",
    "barriers": "launch__occupancy_limit_barriers",
}
SECTOR_BYTES = 32
# Source-level counters worth a column in the per-line view (when the report has them).
LINE_ORDER = ("smsp__pcsamp_sample_count", "inst_executed")


def kernel_table(metrics: pd.DataFrame, launches: list[dict]) -> pd.DataFrame:
    """One row per profiled launch with the facts the diagnosis needs."""
    import pandas as pd

    by_launch = {
        launch: dict(zip(group["metric"], group["value"]))
        for launch, group in metrics.groupby("launch")
    }
    rows = []
    for info in launches:
        values = by_launch.get(info["launch"], {})
        row: dict[str, Any] = {k: info[k] for k in ("launch", "range", "kernel", "config")}
        for column, names in KEY_METRICS.items():
            row[column] = next((values[n] for n in names if n in values), None)
        for column, terms in WORK_METRICS.items():
            counted = [values[n] * weight for n, weight in terms if n in values]
            row[column] = sum(counted) if counted else None
        limits = {label: values[m] for label, m in LIMITS.items() if m in values}
        row["occupancy_limits"] = limits or None
        if limits:
            low = min(limits.values())
            row["occupancy_limiter"] = ", ".join(k for k, v in limits.items() if v == low)
        else:
            row["occupancy_limiter"] = None
        sectors = [row["local_ld_sectors"], row["local_st_sectors"]]
        row["local_bytes"] = (
            sum(s for s in sectors if s is not None) * SECTOR_BYTES
            if any(s is not None for s in sectors)
            else None
        )
        row["device"] = (info.get("attributes") or {}).get("device__attribute_display_name")
        rows.append(row)
    return pd.DataFrame(rows)


def line_table(source: pd.DataFrame, sources: dict[str, str], launch: int | None) -> pd.DataFrame:
    """Per (file, line): every source-level counter as a column, with the line's code.

    Triton inlines `tl.sum` and friends, so their counters land in triton/language/*.py: those
    rows keep their own file (origin "triton") rather than being guessed onto a caller.
    """
    import pandas as pd

    if source.empty:
        return pd.DataFrame(columns=["launch", "kernel", "file", "line", "origin", "code"])
    df = source if launch is None else source[source["launch"] == launch]
    wide = df.pivot_table(
        index=["launch", "kernel", "file", "line"],
        columns="metric",
        values="value",
        aggfunc="sum",
        fill_value=0,
    ).reset_index()
    wide.columns.name = None
    wide["origin"] = ["triton" if "/triton/" in f else "kernel" for f in wide["file"]]
    wide["code"] = [_code(sources, f, int(n)) for f, n in zip(wide["file"], wide["line"])]
    order = [c for c in LINE_ORDER if c in wide.columns]
    if order:
        wide = wide.sort_values(order, ascending=False)
    return wide.reset_index(drop=True)


def _code(sources: dict[str, str], file: str, line: int) -> str:
    text = sources.get(file)
    if text is None:
        try:
            with open(file, errors="replace") as f:
                text = f.read()
        except OSError:
            text = ""
        sources[file] = text
    lines = text.splitlines()
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


def _clean(value: Any) -> Any:
    """JSON-safe: NaN -> None, numpy scalars -> Python numbers."""
    if value is None:
        return None
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and value != value:
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    return value


def ncu_dict(profile: Any, top_lines: int) -> dict:
    """The JSON form of an ncu report: per launch the key facts, rule results and hot lines
    (the findings are the diagnosis's: `diagnosis.diagnose_profile`)."""
    kernels = profile.kernels()
    lines = profile.lines()
    rules = profile.rules
    out = []
    for row in kernels.to_dict("records"):
        launch = row["launch"]
        entry = {k: _clean(v) for k, v in row.items()}
        fired = (
            rules[(rules["launch"] == launch) & (rules["type"] != "OK")] if len(rules) else rules
        )
        entry["rules"] = [
            {k: _clean(v) for k, v in r.items() if k not in ("launch", "range", "kernel")}
            for r in fired.to_dict("records")
        ]
        if len(lines):
            hot = lines[lines["launch"] == launch].head(top_lines)
            entry["hot_lines"] = [
                {k: _clean(v) for k, v in r.items() if k not in ("launch", "kernel") and v != 0}
                for r in hot.to_dict("records")
            ]
        out.append(entry)
    return {
        "tool": "ncu",
        "file": profile.path,
        "reader": profile.reader,
        "launches": len(out),
        "metrics": int(profile.metrics["metric"].nunique()) if len(profile.metrics) else 0,
        "kernels": out,
    }
