"""Nsight Systems' SQLite export read into DataFrames: kernels, NVTX ranges, time per range.

The export holds every name in `StringIds`; names registered by the Python `nvtx` package arrive
through `NVTX_EVENTS.textId`, not `text`. A kernel belongs to a push/pop range when the runtime
call that launched it ran on the range's thread between the range's push and pop.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from workbench.profilers.toolerrors import report_problem
from workbench.runtime.errors import WorkbenchError

if TYPE_CHECKING:
    import pandas as pd

PUSH_POP, START_END, DOMAIN_CREATE = 59, 60, 75


@dataclass
class NsysProfile:
    path: str
    schema: str
    kernels: pd.DataFrame
    """One row per kernel: name, start, end, duration_ns, stream, grid/block, registers, range."""
    ranges: pd.DataFrame
    """One row per NVTX range instance: domain, name, style, start, end, duration_ns, tid."""
    range_kernels: pd.DataFrame
    """(range instance, kernel) pairs: the kernels launched inside each push/pop range."""

    def kernel_summary(self) -> pd.DataFrame:
        k = self.kernels
        if k.empty:
            return k
        g = k.groupby("name")["duration_ns"]
        out = g.agg(["count", "sum", "mean", "median", "min", "max"]).reset_index()
        out.columns = ["name", "instances", "total_ns", "avg_ns", "med_ns", "min_ns", "max_ns"]
        out["time_pct"] = 100.0 * out["total_ns"] / out["total_ns"].sum()
        return out.sort_values("total_ns", ascending=False).reset_index(drop=True)

    def range_summary(self) -> pd.DataFrame:
        """Per range name: CPU time, kernels inside, GPU busy time and the gaps between kernels."""
        import pandas as pd

        if self.ranges.empty:
            return pd.DataFrame()
        per_instance = []
        for rid, rng in self.ranges.set_index("range_id").iterrows():
            ks = self.range_kernels[self.range_kernels["range_id"] == rid]
            gaps = _gaps(ks)
            per_instance.append(
                {
                    "domain": rng["domain"],
                    "range": rng["name"],
                    "style": rng["style"],
                    "cpu_ns": rng["duration_ns"],
                    "kernels": len(ks),
                    "gpu_busy_ns": float(ks["duration_ns"].sum()) if len(ks) else 0.0,
                    "gpu_span_ns": float(ks["end"].max() - ks["start"].min()) if len(ks) else 0.0,
                    "gap_sum_ns": float(gaps.sum()) if len(gaps) else 0.0,
                    "gap_max_ns": float(gaps.max()) if len(gaps) else 0.0,
                    "gaps": len(gaps),
                }
            )
        df = pd.DataFrame(per_instance)
        out = df.groupby(["domain", "range", "style"], as_index=False).agg(
            instances=("cpu_ns", "size"),
            cpu_total_ns=("cpu_ns", "sum"),
            cpu_avg_ns=("cpu_ns", "mean"),
            kernels=("kernels", "sum"),
            gpu_busy_ns=("gpu_busy_ns", "sum"),
            gpu_span_ns=("gpu_span_ns", "sum"),
            gap_sum_ns=("gap_sum_ns", "sum"),
            gap_max_ns=("gap_max_ns", "max"),
            gaps=("gaps", "sum"),
        )
        out["gap_avg_ns"] = out["gap_sum_ns"] / out["gaps"].where(out["gaps"] > 0)
        out["gpu_idle_pct"] = 100.0 * (
            1 - out["gpu_busy_ns"] / out["gpu_span_ns"].where(out["gpu_span_ns"] > 0)
        )
        return out.sort_values("cpu_total_ns", ascending=False).reset_index(drop=True)

    def kernels_in(self, range_name: str) -> pd.DataFrame:
        """Per kernel name inside the named range: launches and GPU time."""
        rk = self.range_kernels[self.range_kernels["range"] == range_name]
        if rk.empty:
            return rk
        out = rk.groupby("name")["duration_ns"].agg(["count", "sum", "mean"]).reset_index()
        out.columns = ["name", "launches", "total_ns", "avg_ns"]
        return out.sort_values("total_ns", ascending=False).reset_index(drop=True)

    def to_dict(self) -> dict:
        from workbench.profilers.summary import _clean

        def records(df: pd.DataFrame) -> list[dict]:
            return [{k: _clean(v) for k, v in r.items()} for r in df.to_dict("records")]

        ranges = self.range_summary()
        return {
            "tool": "nsys",
            "file": self.path,
            "schema": self.schema,
            "kernel_launches": len(self.kernels),
            "kernels": records(self.kernel_summary()),
            "ranges": [
                {**r, "kernels_inside": records(self.kernels_in(r["range"]))}
                for r in records(ranges)
            ],
        }


def _gaps(kernels: pd.DataFrame) -> pd.Series:
    """Idle time between consecutive kernels on the same stream (ns, negative = overlap)."""
    import pandas as pd

    if len(kernels) < 2:
        return pd.Series([], dtype=float)
    parts = []
    for _, ks in kernels.sort_values("start").groupby("stream"):
        parts.append((ks["start"].shift(-1) - ks["end"]).dropna())
    return pd.concat(parts) if parts else pd.Series([], dtype=float)


def load(path: str) -> NsysProfile:
    """Read an nsys SQLite export."""
    if not Path(path).is_file():
        raise WorkbenchError(report_problem(path, "no such file"))
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return _read(conn, path)
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise WorkbenchError(report_problem(path, f"SQLite: {exc}")) from exc


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def _read(conn: sqlite3.Connection, path: str) -> NsysProfile:
    import pandas as pd

    tables = _tables(conn)
    if "StringIds" not in tables:
        raise WorkbenchError(report_problem(path, "it is SQLite but not an nsys export"))
    schema = ""
    if "META_DATA_EXPORT" in tables:
        row = conn.execute(
            "SELECT value FROM META_DATA_EXPORT WHERE name = 'EXPORT_SCHEMA_VERSION'"
        ).fetchone()
        schema = str(row[0]) if row else ""
    kernels = _kernels(conn, tables)
    ranges = _ranges(conn, tables)
    range_kernels = _attribute(kernels, ranges)
    if not kernels.empty and not range_kernels.empty:
        innermost = range_kernels.sort_values("range_start").groupby("kernel_id").last()
        kernels["range"] = kernels["kernel_id"].map(innermost["range"])
    else:
        kernels["range"] = pd.Series(dtype=object)
    return NsysProfile(path, schema, kernels, ranges, range_kernels)


def _kernels(conn: sqlite3.Connection, tables: set[str]) -> pd.DataFrame:
    import pandas as pd

    if "CUPTI_ACTIVITY_KIND_KERNEL" not in tables:
        return pd.DataFrame(
            columns=["kernel_id", "name", "start", "end", "duration_ns", "stream", "tid"]
        )
    if "CUPTI_ACTIVITY_KIND_RUNTIME" in tables:  # the launching thread, to place it in a range
        launch_cols = "r.globalTid AS tid, r.start AS launch_start"
        join = (
            "LEFT JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId "
            "AND r.globalTid / 16777216 = k.globalPid / 16777216"  # same process
        )
    else:
        launch_cols, join = "NULL AS tid, NULL AS launch_start", ""
    sql = f"""
        SELECT k.rowid AS kernel_id, s.value AS name, d.value AS demangled,
               k.start, k."end", k."end" - k.start AS duration_ns,
               k.deviceId AS device, k.streamId AS stream, k.correlationId AS correlation,
               k.gridX, k.gridY, k.gridZ, k.blockX, k.blockY, k.blockZ,
               k.registersPerThread AS registers_per_thread,
               k.staticSharedMemory AS static_smem, k.dynamicSharedMemory AS dynamic_smem,
               k.localMemoryPerThread AS local_mem_per_thread, {launch_cols}
        FROM CUPTI_ACTIVITY_KIND_KERNEL k
        LEFT JOIN StringIds s ON k.shortName = s.id
        LEFT JOIN StringIds d ON k.demangledName = d.id
        {join}
        ORDER BY k.start
    """
    df = pd.read_sql_query(sql, conn)
    df["gap_before_ns"] = df.groupby("stream")["start"].diff() - (
        df.groupby("stream")["duration_ns"].shift(1)
    )
    return df


def _ranges(conn: sqlite3.Connection, tables: set[str]) -> pd.DataFrame:
    import pandas as pd

    columns = ["range_id", "domain", "name", "style", "start", "end", "duration_ns", "tid"]
    if "NVTX_EVENTS" not in tables:
        return pd.DataFrame(columns=columns)
    domains = dict(
        conn.execute(
            """SELECT n.domainId, COALESCE(n.text, s.value) FROM NVTX_EVENTS n
               LEFT JOIN StringIds s ON n.textId = s.id WHERE n.eventType = ?""",
            (DOMAIN_CREATE,),
        ).fetchall()
    )
    df = pd.read_sql_query(
        f"""SELECT n.rowid AS range_id, n.domainId AS domain_id,
                   COALESCE(n.text, s.value) AS name, n.eventType AS event_type,
                   n.start, n."end", n."end" - n.start AS duration_ns, n.globalTid AS tid
            FROM NVTX_EVENTS n LEFT JOIN StringIds s ON n.textId = s.id
            WHERE n.eventType IN ({PUSH_POP}, {START_END}) AND n."end" IS NOT NULL
            ORDER BY n.start""",
        conn,
    )
    df["domain"] = [
        domains.get(d) or ("<default domain>" if not d else f"domain {d}") for d in df["domain_id"]
    ]
    df["style"] = df["event_type"].map({PUSH_POP: "PushPop", START_END: "StartEnd"})
    return df[columns]


def _attribute(kernels: pd.DataFrame, ranges: pd.DataFrame) -> pd.DataFrame:
    """Each push/pop range with the kernels launched from its thread while it was open."""
    import pandas as pd

    cols = ["range_id", "range", "domain", "range_start", "kernel_id", "name", "start", "end"]
    cols += ["duration_ns", "stream"]
    if kernels.empty or ranges.empty or kernels["tid"].isna().all():
        return pd.DataFrame(columns=cols)
    parts = []
    for rng in ranges[ranges["style"] == "PushPop"].itertuples():
        inside = kernels[
            (kernels["tid"] == rng.tid)
            & (kernels["launch_start"] >= rng.start)
            & (kernels["launch_start"] <= rng.end)
        ]
        if inside.empty:
            continue
        part = inside[["kernel_id", "name", "start", "end", "duration_ns", "stream"]].copy()
        part.insert(0, "range_start", rng.start)
        part.insert(0, "domain", rng.domain)
        part.insert(0, "range", rng.name)
        part.insert(0, "range_id", rng.range_id)
        parts.append(part)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=cols)
