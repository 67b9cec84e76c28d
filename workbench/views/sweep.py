"""A sweep's rows as table cells, for the CLI, the TUI and reports (pure)."""

from __future__ import annotations

from workbench.runtime.grammar import shape_text
from workbench.sweep import analysis
from workbench.sweep.plot import names, order
from workbench.sweep.row import SweepRow
from workbench.sweep.strategy import Budget
from workbench.views.text import fmt, table

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


def rows_of(rows: list[SweepRow], narrow: bool = False) -> list[tuple]:
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
        ms, model = r.get("ms"), r.get("model")
        cells = {
            "#": i + 1 if r["status"] == analysis.TIMED else "-",
            "config": short[r["label"]],
            "status": r["status"],
            "ms": fmt(ms, 4),
            "vs best": f"{ms / best:.2f}x" if best and ms else "-",
            "model": f"{model:.2f}x" if model else "-",
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


def _brief(row: SweepRow) -> str:
    """The row's brief; for a run recorded before briefs, its explanation up to the reasons
    (`25% slower`); for a live row, its status."""
    return row.get("brief") or row.get("why", "").split(":")[0] or row["status"]


def strategy_line(info: dict, shape: str) -> str:
    """What a search strategy did at one shape (`SweepResult.strategy`)."""
    at = info.get("shapes", {}).get(shape)
    if not at:
        return ""
    seconds = f", {at['seconds']:.1f} s" if at.get("seconds") is not None else ""
    start = f"; started from {at['start']['from']}" if at.get("start") else ""
    return (
        f"{info['name']}: {at['evaluations']} timing(s) among {at['configs']} configs "
        f"(budget: {Budget(**info['budget']).text()}{seconds}){start}; the others are skipped"
    )


def bucket_lines(buckets: dict) -> list[str]:
    """Which shapes can share an autotune key bucket, one line per bucket."""
    if not buckets.get("buckets"):
        return [f"key buckets: {buckets['note']}"] if buckets.get("note") else []
    dims = buckets["dims"]
    out = [
        f"autotune key buckets (power-of-two ranges of shape dimension(s) {dims}; one config "
        "keeps each shape of its bucket within 5% of its best):"
    ]
    for b in buckets["buckets"]:
        ranges = " x ".join(f"{lo}..{hi}" for lo, hi in b["ranges"])
        shapes = ", ".join(shape_text(s) for s in b["shapes"])
        config = b["config"] or "none fits"
        worst = f" (worst {b['worst']:.3f}x)" if b["worst"] else ""
        out.append(f"  {ranges}: {config}{worst}  <- {shapes}")
    if buckets.get("note"):
        out.append(f"  {buckets['note']}")
    return out


REPLAY_HEADERS = (
    "strategy",
    "median",
    "p90",
    "reached",
    "within share",
    "seconds (median)",
    "final vs best",
    "timings made",
)


def replay_lines(report: dict) -> list[str]:
    """A replay's report (`sweep.replay.replay`) as text: a table per shape."""
    near, share = f"{report['near']:.0%}", f"{report['share']:.0%}"
    out = [
        f"replay of {report['kernel']} ({report['dtype'] or 'as given'}) timed on "
        f"{report['gpu']}, {report['seeds']} seed(s), budget: {report['budget']['text']}",
        f"timings until the strategy's pick is within {near} of the exhaustive best (median and "
        f"p90 over the seeds; - never); within share: reached with at most {share} of the space",
    ]
    for shape in report["shapes"]:
        out.append(
            f"\n{shape['shape']}: {shape['configs']} configs, best {shape['best']} "
            f"({fmt(shape['best_ms'], 4)} ms)"
        )
        rows = []
        for s in shape["strategies"]:
            need, within = s["to_near"], s["within_share"]
            seconds = (s["seconds_to_near"] or {}).get("median")
            rows.append(
                (
                    s["strategy"],
                    fmt(need["median"]),
                    fmt(need["p90"]),
                    f"{s['reached']}/{within['of']}",
                    f"{'yes' if within['yes'] else 'no'} ({within['seeds']}/{within['of']}, "
                    f"<= {within['share']})",
                    fmt(seconds),
                    f"{s['final_vs_best']:.3f}x" if s["final_vs_best"] else "-",
                    fmt(s["spent"]),
                )
            )
        out.append(table(REPLAY_HEADERS, rows))
        for s in shape["strategies"]:
            if s["start"]:
                out.append(
                    f"{s['strategy']} starts from {s['start']['from']}: {s['start']['label']}"
                )
    out += [f"note: {n}" for n in report["notes"]]
    return out
