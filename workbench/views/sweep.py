"""A sweep's rows as table cells, for the CLI, the TUI and reports (pure)."""

from __future__ import annotations

from workbench.sweep import analysis
from workbench.sweep.plot import names, order
from workbench.views.text import fmt

HEADERS = (
    "#",
    "config",
    "status",
    "ms",
    "vs best",
    "model",
    "regs",
    "spill B",
    "smem KB",
    "occ %",
    "limiter",
    "compile s",
    "why",
)
"""The CLI's and the report's table: every figure, and the whole explanation."""
NARROW = ("#", "config", "ms", "vs best", "model", "why", "regs", "spill B", "occ %")
"""The TUI's: what tells configs apart and why, the explanation in brief (the highlighted row's
whole one is said below the table), then the resources."""


def rows_of(rows: list[dict], narrow: bool = False) -> list[tuple]:
    """Table rows in `plot.order`, each config by its short name (`names`): the HEADERS with
    the whole explanation, or the NARROW ones with its brief (or the status of a row not yet
    explained: a live one)."""
    ordered = order(rows)
    short = names(rows)
    best = ordered[0]["ms"] if ordered and ordered[0]["status"] == analysis.TIMED else None
    out = []
    for i, r in enumerate(ordered):
        res = r.get("resources") or {}
        occ = res.get("occupancy") or {}
        cells = {
            "#": i + 1 if r["status"] == analysis.TIMED else "-",
            "config": short[r["label"]],
            "status": r["status"],
            "ms": fmt(r.get("ms"), 4),
            "vs best": f"{r['ms'] / best:.2f}x" if best and r.get("ms") else "-",
            "model": f"{r['model']:.2f}x" if r.get("model") else "-",
            "regs": res.get("regs", "-"),
            "spill B": res.get("spill_bytes", "-"),
            "smem KB": f"{res['shared_bytes'] / 1024:.1f}" if "shared_bytes" in res else "-",
            "occ %": fmt(occ.get("percent")),
            "limiter": occ.get("limiter", "-"),
            "compile s": fmt(r.get("compile_s")),
            "why": _brief(r) if narrow else r.get("why", ""),
        }
        out.append(tuple(cells[c] for c in (NARROW if narrow else HEADERS)))
    return out


def _brief(row: dict) -> str:
    """The row's brief; for a run recorded before briefs, its explanation up to the reasons
    (`25% slower`); for a live row, its status."""
    return row.get("brief") or row.get("why", "").split(":")[0] or row["status"]
