"""Time per config as terminal bars (for the TUI and the CLI) and as a PNG in the run folder,
with markers for spills, low occupancy and failures (pure, matplotlib only for the PNG)."""

from __future__ import annotations

from pathlib import Path

from workbench.sweep import analysis
from workbench.sweep.result import SweepResult

MARKERS = {"spill": "S", "occupancy": "O", "failed": "X", "wrong": "W", "pruned": "P"}
LEGEND = "S spills  O occupancy < 25%  X failed/timeout  W wrong result  P pruned"


def marks(row: dict) -> str:
    if row["status"] in ("failed", "timeout"):
        return MARKERS["failed"]
    if row["status"] in ("wrong", "pruned"):
        return MARKERS[row["status"]]
    res = row.get("resources") or {}
    occ = (res.get("occupancy") or {}).get("percent")
    out = MARKERS["spill"] if res.get("spill_bytes") else ""
    if occ is not None and occ < analysis.LOW_OCCUPANCY:
        out += MARKERS["occupancy"]
    return out


def bars(rows: list[dict], width: int = 40) -> list[str]:
    """One line per config: label, bar scaled to the slowest timed config, ms, markers; fastest
    first, then the untimed."""
    timed = analysis.ranked(rows)
    rest = [r for r in rows if r["status"] != analysis.TIMED]
    top = max((r["ms"] for r in timed), default=1.0)
    name_w = max((len(r["label"]) for r in rows), default=0)
    lines = []
    for r in timed + rest:
        if r["status"] == analysis.TIMED:
            bar = "█" * max(1, round(width * r["ms"] / top))
            value = f"{r['ms']:.4g} ms"
        else:
            bar, value = "", r["status"]
        lines.append(f"{r['label']:<{name_w}} {bar:<{width}} {value:>11} {marks(r)}")
    return lines


def png(result: SweepResult, path: Path) -> str | None:
    """The bars of every shape as a PNG; None where matplotlib is missing or nothing was timed."""
    shapes = analysis.by_shape(result.rows)
    if not any(analysis.ranked(rs) for rs in shapes.values()):
        return None
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, axes = plt.subplots(len(shapes), 1, figsize=(10, 0.3 * len(result.rows) + 1.5))
    for ax, (shape, rows) in zip(list(getattr(axes, "flat", [axes])), shapes.items()):
        order = analysis.ranked(rows) + [r for r in rows if r["status"] != analysis.TIMED]
        ys = range(len(order))
        ax.barh(
            ys,
            [r["ms"] or 0.0 for r in order],
            color=["tab:red" if marks(r) else "tab:blue" for r in order],
        )
        ax.set_yticks(list(ys), [f"{r['label']} {marks(r)}" for r in order], fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel("ms (median, L2 flushed)")
        ax.set_title(f"{result.kernel} {shape} on {result.gpu or result.arch}")
    fig.text(0.01, 0.005, LEGEND, fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return str(path)
