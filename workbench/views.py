"""Rows for tables, shared by the CLI and the TUI: data in, plain cells out (no UI imports)."""

from __future__ import annotations

import os

from workbench.discovery import KernelEntry
from workbench.render import fmt

KERNEL_HEADERS = ("name", "kind", "dtypes", "shape sets", "file")
RESOURCE_HEADERS = ("config", "regs", "spill B", "smem B", "warps", "stages", "occ %", "limiter")
CHECK_HEADERS = ("status", "dtype", "shape", "layout", "max|d|", "relL2", "worst", "note")


def kernel_row(k: KernelEntry) -> tuple[str, ...]:
    return (
        k.name,
        k.kind,
        ",".join(k.dtypes) if k.dtypes else "from inputs",
        " ".join(f"{s}:{len(v)}" for s, v in (k.shapes or {}).items()) or "from inputs",
        os.path.relpath(k.file),
    )


def check_row(case: dict) -> tuple[str, ...]:
    return (
        case["status"],
        case["dtype"],
        "x".join(map(str, case["shape"])) or "-",
        case["layout"],
        fmt(case["max_abs_diff"]),
        fmt(case["rel_l2"]),
        str(case["worst_index"]) if case["status"] == "failed" else "",
        case["reason"],
    )


def check_verdict(result: dict) -> str:
    s = result["summary"]
    verdict = "CORRECT" if result["correct"] else "NOT CORRECT"
    line = (
        f"{result['kernel']}: {verdict} ({s['passed']} passed, {s['failed']} failed, "
        f"{s['errors']} errors, {s['skipped']} skipped; {result['mode']} mode)"
    )
    facts = [f.replace("_", " ") for f in FACTS if s.get(f)]
    return line + "".join(f"\n  fact: {f}" for f in facts)


FACTS = ("stride_only_errors", "boundary_only_errors", "nondeterministic")


def resource_row(v: dict) -> tuple:
    res = v["resources"] or {}
    occ = res.get("occupancy") or {}
    return (
        v["label"],
        res.get("regs", "-"),
        res.get("spill_bytes", "-"),
        res.get("shared_bytes", "-"),
        res.get("num_warps", "-"),
        res.get("num_stages", "-"),
        fmt(occ.get("percent")),
        occ.get("limiter", "-"),
    )


def finding_lines(found: list[dict]) -> str:
    lines = []
    for f in found:
        where = f":{f['line']}" if f.get("line") else ""
        lines.append(f"[{f['severity']}] {f['id']}{where}: {f['title']}\n    fix: {f['fix']}")
    return "\n".join(lines) or "no static findings"
