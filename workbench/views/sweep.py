"""A sweep's rows as table cells, for the CLI and the TUI (pure)."""

from __future__ import annotations

from workbench.sweep import analysis
from workbench.views.text import fmt

HEADERS = (
    "#",
    "config",
    "status",
    "ms",
    "vs best",
    "regs",
    "spill B",
    "smem KB",
    "occ %",
    "limiter",
    "compile s",
    "why",
)


def rows_of(rows: list[dict]) -> list[tuple]:
    """Table rows: timed configs fastest first, then the rest."""
    order = analysis.ranked(rows)
    best = order[0]["ms"] if order else None
    out = []
    for i, r in enumerate(order + [r for r in rows if r["status"] != analysis.TIMED]):
        res = r.get("resources") or {}
        occ = res.get("occupancy") or {}
        out.append(
            (
                i + 1 if r["status"] == analysis.TIMED else "-",
                r["label"],
                r["status"],
                fmt(r.get("ms"), 4),
                f"{r['ms'] / best:.2f}x" if best and r.get("ms") else "-",
                res.get("regs", "-"),
                res.get("spill_bytes", "-"),
                f"{res['shared_bytes'] / 1024:.1f}" if "shared_bytes" in res else "-",
                occ.get("percent", "-"),
                occ.get("limiter", "-"),
                fmt(r.get("compile_s")),
                r.get("why", ""),
            )
        )
    return out
