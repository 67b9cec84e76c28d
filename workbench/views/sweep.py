"""A sweep's rows as table cells, for the CLI and the TUI (pure)."""

from __future__ import annotations

from workbench.sweep import analysis
from workbench.views.text import fmt, kv, shared_values, short_label

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


def table_order(rows: list[dict]) -> list[dict]:
    """The order of a sweep's table: timed configs fastest first, then the rest."""
    return analysis.ranked(rows) + [r for r in rows if r["status"] != analysis.TIMED]


def shared_text(rows: list[dict]) -> str:
    """What every config of a sweep's rows shares, said once above its table."""
    shared = shared_values([r.get("values") for r in rows])
    return f"every config: {kv(shared)}" if shared else ""


def rows_of(rows: list[dict], short: bool = True) -> list[tuple]:
    """Table rows, in `table_order`; `short` drops the values they share (see `shared_text`)."""
    shared = shared_values([r.get("values") for r in rows]) if short else {}
    order = table_order(rows)
    best = order[0]["ms"] if order and order[0]["status"] == analysis.TIMED else None
    out = []
    for i, r in enumerate(order):
        res = r.get("resources") or {}
        occ = res.get("occupancy") or {}
        out.append(
            (
                i + 1 if r["status"] == analysis.TIMED else "-",
                short_label(r.get("values"), r["label"], shared),
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
