"""Read an Nsight Compute report into pandas: metrics, NVIDIA's rule results, per-line counters.

`.ncu-rep` files are read with NVIDIA's `ncu_report` module (the installed ncu's
`extras/python`, else the `ncu-report` package, which carries its own libraries and needs no
GPU); without either, `ncu -i FILE --csv --page raw --print-units base` gives the metrics. A CSV
written that way can be read directly too. Values are in base units (ns, bytes, %).
"""

from __future__ import annotations

import importlib
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.profilers import summary
from workbench.profilers.names import DOMAIN
from workbench.profilers.ncumetrics import NcuLaunch
from workbench.profilers.toolerrors import report_problem
from workbench.runtime.errors import WorkbenchError, fail

if TYPE_CHECKING:
    import pandas as pd

METRIC_COLUMNS = ["launch", "range", "kernel", "config", "metric", "value", "unit"]
RULE_COLUMNS = [
    "launch",
    "range",
    "kernel",
    "rule",
    "name",
    "section",
    "type",
    "title",
    "message",
    "speedup_type",
    "speedup_pct",
    "focus_metrics",
]
SOURCE_COLUMNS = ["launch", "kernel", "file", "line", "metric", "value"]
MSG_TYPES = {0: "NONE", 1: "OK", 2: "OPTIMIZATION", 3: "WARNING", 4: "ERROR"}
SPEEDUP_TYPES = {0: "unknown", 1: "local", 2: "global"}
_MAX_SOURCE_INSTANCES = 200_000
# Source-level counters: instanced per SASS instruction, the instance's correlation id is its PC.
# (Other instanced metrics carry categories or table indices as ids.) Stall samples are kept as
# "all samples"; the `_not_issued` halves repeat them.
SOURCE_PREFIXES = (
    "smsp__pcsamp_",
    "inst_executed",
    "thread_inst_executed",
    "memory_l1_",
    "memory_l2_",
    "derived__memory_l1_wavefronts_shared_excessive",
    "derived__memory_l2_theoretical_sectors_global_excessive",
)


def is_source_metric(name: str) -> bool:
    return name.startswith(SOURCE_PREFIXES) and not name.endswith("_not_issued")


@dataclass
class NcuProfile:
    path: str
    reader: str
    metrics: pd.DataFrame
    rules: pd.DataFrame
    source: pd.DataFrame
    launches: list[dict] = field(default_factory=list)
    """Per launch: range, kernel, config, nvtx stack, device, text attributes."""
    sources: dict[str, str] = field(default_factory=dict)
    """Source files embedded in the report (`--import-source yes`), by path."""

    def kernels(self, top_lines: int = 8) -> list[NcuLaunch]:
        return summary.kernel_launches(self, top_lines)

    def lines(self, launch: int | None = None) -> pd.DataFrame:
        return summary.line_table(self.source, self.sources, launch)

    def to_dict(self, top_lines: int = 8) -> dict:
        return summary.ncu_dict(self, top_lines)


# ---------------------------------------------------------------- ncu_report -----------


_module: Any = None
import_failures: dict[str, str] = {}
"""Readers that failed to import, and why (e.g. the ncu install's copy missing a library): said
beside whichever reader was used, since a mismatched reader misreads newer reports."""


def import_ncu_report(ncu_path: str | None = None) -> tuple[Any, str] | None:
    """NVIDIA's reader: the installed ncu's copy first (it matches the writer), else PyPI's."""
    global _module
    if _module is not None:
        return _module, getattr(_module, "__file__", "ncu_report")
    extras = [Path(ncu_path).resolve().parent / "extras" / "python"] if ncu_path else []
    for folder in extras + [None]:
        if folder is not None and not (folder / "ncu_report.py").is_file():
            continue
        if folder is not None:
            sys.path.insert(0, str(folder))
        try:
            _module = importlib.import_module("ncu_report")
            return _module, getattr(_module, "__file__", "ncu_report")
        except Exception as exc:  # noqa: BLE001 - a broken copy: try the next reader
            where = str(folder / "ncu_report.py") if folder else "the ncu-report package"
            import_failures[where] = f"{type(exc).__name__}: {exc}"
            sys.modules.pop("ncu_report", None)
            if folder is not None:
                sys.path.remove(str(folder))
    return None


def load(path: str, ncu_path: str | None = None) -> NcuProfile:
    """An `.ncu-rep` (ncu_report, else `ncu -i` CSV) or an ncu raw-page CSV."""
    p = Path(path)
    if not p.is_file():
        raise WorkbenchError(report_problem(path, "no such file"))
    if p.suffix == ".csv":
        return from_csv_text(p.read_text(errors="replace"), path)
    found = import_ncu_report(ncu_path)
    if found is not None:
        profile = _from_ncu_report(found[0], path, found[1])
    else:
        if ncu_path is None:
            from workbench.profilers import tools

            ncu_path = tools.find("ncu").path
        profile = from_csv_text(export_csv(ncu_path, path), path)
    failed = "; ".join(
        f"{where} failed to import ({why})" for where, why in import_failures.items()
    )
    profile.reader += f"; {failed}" if failed else ""
    return profile


def _check_header(path: str) -> None:
    """ncu_report trusts the file; a damaged one must be refused before it reaches the reader."""
    with open(path, "rb") as f:
        head = f.read(16)
    if len(head) < 16:
        raise WorkbenchError(report_problem(path, "the file is empty or truncated"))


def _from_ncu_report(mod: Any, path: str, reader: str) -> NcuProfile:
    import pandas as pd

    _check_header(path)
    try:
        ctx = mod.load_report(path)
    except Exception as exc:  # noqa: BLE001 - the reader's errors vary by version
        raise WorkbenchError(report_problem(path, f"{type(exc).__name__}: {exc}")) from exc
    metric_rows: list[list] = []
    rule_rows: list[list] = []
    source_rows: list[list] = []
    launches: list[dict] = []
    sources: dict[str, str] = {}
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for j in range(rng.num_actions()):
            action = rng.action_by_idx(j)
            launch = len(launches)
            stack = _nvtx_stack(action)
            range_ = stack[-1] if stack else ""
            kernel = action.name()
            config = range_.split(":", 1)[1] if ":" in range_ else ""
            info = {"launch": launch, "range": range_, "kernel": kernel, "config": config}
            info["nvtx"] = "/".join(stack)
            for name in action.metric_names():
                metric = action.metric_by_name(name)
                if metric is None:
                    continue
                if name.startswith(SOURCE_PREFIXES) and metric.has_correlation_ids():
                    if is_source_metric(name):
                        source_rows.extend(_source_rows(action, metric, launch, kernel))
                    continue
                value = metric.value()
                if isinstance(value, str):
                    info.setdefault("attributes", {})[name] = value
                elif value is not None and not (isinstance(value, float) and math.isnan(value)):
                    metric_rows.append(
                        [launch, range_, kernel, config, name, float(value), metric.unit()]
                    )
            rule_rows.extend(_rule_rows(action, launch, range_, kernel))
            for file, text in dict(action.source_files() or {}).items():
                if text:
                    sources.setdefault(file, text)
            launches.append(info)
    if not launches:  # the reader opens a truncated file as an empty report
        raise WorkbenchError(report_problem(path, "it holds no profiled kernel (truncated?)"))
    return NcuProfile(
        path,
        f"ncu_report ({reader})",
        pd.DataFrame(metric_rows, columns=METRIC_COLUMNS),
        pd.DataFrame(rule_rows, columns=RULE_COLUMNS),
        _aggregate_source(pd.DataFrame(source_rows, columns=SOURCE_COLUMNS)),
        launches,
        sources,
    )


def _nvtx_stack(action: Any) -> list[str]:
    """The push/pop stack in our domain (else the first domain with one) at the launch."""
    try:
        state = action.nvtx_state()  # None when the launch has no NVTX data
    except Exception as exc:  # noqa: BLE001 - the reader's errors vary by version
        raise fail(
            "nvtx-unreadable",
            f"ncu_report could not read a launch's NVTX ranges: {type(exc).__name__}: {exc}",
            "read the report with the ncu_report of the ncu that wrote it (WORKBENCH_NCU), or "
            "export it as CSV (ncu -i FILE --csv --page raw) and import that",
            source="tool",
        ) from exc
    if state is None:
        return []
    stacks: list[tuple[str, list[str]]] = []
    for dom_id in state.domains():
        info = state.domain_by_id(dom_id)
        ranges = [str(r) for r in (info.push_pop_ranges() or [])]
        if ranges:
            stacks.append((info.name(), ranges))
    for name, ranges in stacks:
        if name == DOMAIN:
            return ranges
    return stacks[0][1] if stacks else []


def _source_rows(action: Any, metric: Any, launch: int, kernel: str) -> list[list]:
    """Instance values of a PC-correlated metric, each charged to its source file and line."""
    ids = metric.correlation_ids()
    n = min(metric.num_instances(), _MAX_SOURCE_INSTANCES)
    rows = []
    cache: dict[int, tuple[str, int] | None] = {}
    for i in range(n):
        value = metric.value(i)
        if not isinstance(value, (int, float)) or not value:
            continue
        pc = ids.value(i)
        if pc not in cache:
            src = action.source_info(pc)
            cache[pc] = (src.file_name(), src.line()) if src is not None else None
        where = cache[pc]
        if where is not None:
            rows.append([launch, kernel, where[0], where[1], metric.name(), float(value)])
    return rows


def _aggregate_source(df: pd.DataFrame) -> pd.DataFrame:
    if df.empty:
        return df
    keys = ["launch", "kernel", "file", "line", "metric"]
    return df.groupby(keys)["value"].sum().reset_index()


def _rule_rows(action: Any, launch: int, range_: str, kernel: str) -> list[list]:
    rows = []
    for rule in action.rule_results_as_dicts():
        msg = rule.get("rule_message") or {}
        if not isinstance(msg, dict):
            msg = {"title": msg.title(), "message": msg.message(), "type": msg.type()}
        if not (msg.get("title") or msg.get("message")):
            continue  # a rule that ran and had nothing to say
        speed = rule.get("speedup_estimation") or {}
        if not isinstance(speed, dict):
            speed = {"type": speed.type(), "speedup": speed.speedup()}
        focus = [
            f.get("name") if isinstance(f, dict) else str(f) for f in rule.get("focus_metrics", [])
        ]
        rows.append(
            [
                launch,
                range_,
                kernel,
                rule.get("rule_identifier"),
                rule.get("name"),
                rule.get("section_identifier"),
                MSG_TYPES.get(int(msg.get("type") or 0), str(msg.get("type"))),
                msg.get("title") or "",
                msg.get("message") or "",
                SPEEDUP_TYPES.get(int(speed["type"]), str(speed["type"])) if speed else None,
                float(speed["speedup"]) if speed else None,
                ",".join(f for f in focus if f),
            ]
        )
    return rows


# ---------------------------------------------------------------- CSV ------------------


def export_csv(ncu: str, path: str, timeout: float = 300.0) -> str:
    """The raw page of a report as CSV in base units (ncu needs no GPU for this)."""
    import subprocess

    cmd = [ncu, "-i", path, "--csv", "--page", "raw", "--print-units", "base"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    text = out.stdout + out.stderr
    if out.returncode != 0 or "==ERROR==" in text:
        errors = [ln for ln in text.splitlines() if "==ERROR==" in ln]
        raise WorkbenchError(report_problem(path, (errors or [text.strip()[-300:]])[0]))
    return out.stdout


RULE_TYPES = {"OK": "OK", "OPT": "OPTIMIZATION", "WRN": "WARNING", "ERR": "ERROR"}
# Section labels on the details page -> the metric each one shows (ncu 2025.x).
DETAIL_LABELS = {
    "Duration": "gpu__time_duration.sum",
    "Registers Per Thread": "launch__registers_per_thread",
    "Grid Size": "launch__grid_size",
    "Block Size": "launch__block_size",
    "Shared Memory Per Block": "launch__shared_mem_per_block_allocated",
    "Waves Per SM": "launch__waves_per_multiprocessor",
    "Theoretical Occupancy": "sm__maximum_warps_per_active_cycle_pct",
    "Achieved Occupancy": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "Compute (SM) Throughput": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "Memory Throughput": "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "DRAM Throughput": "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "Block Limit Registers": "launch__occupancy_limit_registers",
    "Block Limit Shared Mem": "launch__occupancy_limit_shared_mem",
    "Block Limit Warps": "launch__occupancy_limit_warps",
    "Block Limit SM": "launch__occupancy_limit_blocks",
    "Block Limit Barriers": "launch__occupancy_limit_barriers",
}
_ID_COLUMNS = {"ID", "Process ID", "Process Name", "Host Name", "Context", "Stream", "Device"}


def from_csv_text(text: str, path: str) -> NcuProfile:
    """Parse ncu CSV: the raw page (one row a launch, metric columns, a units row) or the details
    page (one row a metric or rule result, with Section/Metric/Rule columns)."""
    import csv
    import io

    import pandas as pd

    lines = [ln for ln in text.splitlines() if ln.startswith('"')]  # drop ==PROF== lines
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    if not rows or "Kernel Name" not in rows[0] or "ID" not in rows[0]:
        raise WorkbenchError(report_problem(path, "not an ncu CSV (no ID and Kernel Name columns)"))
    header = rows[0]
    details = "Metric Name" in header and "Section Name" in header
    parse = _details_rows if details else _raw_rows
    metric_rows, rule_rows, launches = parse(header, rows[1:])
    if not launches:
        raise WorkbenchError(report_problem(path, "the CSV holds no profiled kernel"))
    return NcuProfile(
        path,
        "csv (details page)" if details else "csv (raw page)",
        pd.DataFrame(metric_rows, columns=METRIC_COLUMNS),
        pd.DataFrame(rule_rows, columns=RULE_COLUMNS),
        pd.DataFrame([], columns=SOURCE_COLUMNS),
        launches,
    )


def _launch_info(header: list[str], row: list[str], launch: int) -> dict:
    stack = _csv_nvtx([c for h, c in zip(header, row) if "Push/Pop_Range" in h])
    range_ = stack[-1] if stack else ""
    return {
        "launch": launch,
        "range": range_,
        "kernel": row[header.index("Kernel Name")],
        "config": range_.split(":", 1)[1] if ":" in range_ else "",
        "nvtx": "/".join(stack),
    }


def _raw_rows(header: list[str], rows: list[list[str]]) -> tuple[list, list, list[dict]]:
    units = rows[0] if rows and rows[0] and rows[0][0] == "" else [""] * len(header)
    data = rows[1:] if units is rows[0] else rows
    metric_rows: list[list] = []
    launches: list[dict] = []
    for row in data:
        info = _launch_info(header, row, len(launches))
        for name, unit, cell in zip(header, units, row):
            if name in _ID_COLUMNS or "__" not in name:
                continue
            value = _number(cell)
            if value is None:
                if cell:
                    info.setdefault("attributes", {})[name] = cell
                continue
            metric_rows.append(
                [info["launch"], info["range"], info["kernel"], info["config"], name, value, unit]
            )
        launches.append(info)
    return metric_rows, [], launches


def _details_rows(header: list[str], rows: list[list[str]]) -> tuple[list, list, list[dict]]:
    col = {h: i for i, h in enumerate(header)}
    metric_rows: list[list] = []
    rule_rows: list[list] = []
    launches: dict[str, dict] = {}
    for row in rows:
        rid = row[col["ID"]]
        if rid not in launches:
            launches[rid] = _launch_info(header, row, len(launches))
        info = launches[rid]
        where = [info["launch"], info["range"], info["kernel"]]
        rule = row[col["Rule Name"]] if "Rule Name" in col else ""
        if rule:
            speedup = _number(row[col["Estimated Speedup"]]) if "Estimated Speedup" in col else None
            kind = row[col["Estimated Speedup Type"]] if "Estimated Speedup Type" in col else ""
            rule_rows.append(
                where
                + [
                    rule,
                    rule,
                    row[col["Section Name"]],
                    RULE_TYPES.get(row[col["Rule Type"]], row[col["Rule Type"]]),
                    "",
                    row[col["Rule Description"]],
                    kind.lower() or None,
                    speedup,
                    "",
                ]
            )
            continue
        label, cell = row[col["Metric Name"]], row[col["Metric Value"]]
        name = DETAIL_LABELS.get(label, label)  # sections print labels, --metrics names
        value = _number(cell)
        if name and value is not None:
            metric_rows.append(where + [info["config"], name, value, row[col["Metric Unit"]]])
    return metric_rows, rule_rows, list(launches.values())


def _number(cell: str) -> float | None:
    try:
        return float(cell.replace(",", ""))
    except ValueError:
        return None


def _csv_nvtx(cells: list[str]) -> list[str]:
    """Push/pop stacks in CSV cells: `<tid> "<domain>:<name>:<5 attribute fields>:<message>"`.

    A name may hold colons itself; the message repeats it, so the name is the first
    (n - 6) / 2 fields after the domain.
    """
    import re

    stack: list[tuple[str, str]] = []
    for cell in cells:
        for m in re.finditer(r'"+([^"]+)"+', cell):
            fields = m.group(1).split(":")
            if len(fields) < 8:
                continue
            n = (len(fields) - 6) // 2 if len(fields) % 2 == 0 else len(fields) - 7
            stack.append((fields[0], ":".join(fields[1 : 1 + n])))
    ours = [r for d, r in stack if d == DOMAIN]
    return ours or [r for _, r in stack]
