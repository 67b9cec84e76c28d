"""Time per config as terminal bars (for the TUI and the CLI) and as a PNG in the run folder,
each config named by what sets it apart, marked or coloured by its status: spills, low
occupancy, failures (pure, matplotlib only for the PNG)."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from workbench.ir.config import shared_values, short_legend, short_name
from workbench.sweep import analysis
from workbench.sweep.result import SweepResult
from workbench.sweep.row import SweepRow, timed_ms

MARKERS = {"spill": "S", "occupancy": "O", "failed": "X", "wrong": "W", "pruned": "P"}
LEGEND = "S spills  O occupancy below the best's  X failed/timeout  W wrong result  P pruned"
STATUS = {
    "ok": ("tab:blue", "ok"),
    "spill": ("tab:red", "spills"),
    "occupancy": ("tab:orange", "occupancy below the best's"),
    "failed": ("dimgray", "failed / timeout / pruned (no time)"),
    "wrong": ("tab:purple", "wrong result (no time)"),
}
"""The PNG's bar colours by status, with their legend entries."""
BARS, DRAWN = 128, 16
"""Bars in the whole PNG, and the fewest a shape gets whatever its count: each shape draws its
fastest configs (and Triton's pick) and counts the rest. Every bar of hundreds of configs at
many shapes drew a figure a hundred thousand pixels tall, and took half a minute."""
COLUMNS = 3
"""Panels side by side once a sweep has more than COLUMNS shapes."""


def names(rows: list[SweepRow]) -> dict[str, str]:
    """Each config's short name by label: what it does not share with the others (`BM128 w4`)."""
    shared = shared_values([r.get("values") for r in rows])
    return {r["label"]: short_name(r.get("values") or {}, shared) or r["label"] for r in rows}


def shared_text(rows: list[SweepRow]) -> str:
    """What every config shares, said once above their table or plot, and what the short names
    abbreviate."""
    configs = [r.get("values") for r in rows]
    shared = shared_values(configs)
    said = [f"every config: {short_name(shared)}"] if shared else []
    legend = short_legend(configs)
    return "; ".join(said + [legend] if legend else said)


def marks(row: SweepRow, best: SweepRow | None) -> str:
    """The row's markers: spills and occupancy below `best`'s (`analysis.low_occupancy`), or
    why it has no time."""
    if row["status"] in ("failed", "timeout"):
        return MARKERS["failed"]
    if row["status"] in ("wrong", "pruned"):
        return MARKERS[row["status"]]
    out = MARKERS["spill"] if (row.get("resources") or {}).get("spill_bytes") else ""
    return out + (MARKERS["occupancy"] if analysis.low_occupancy(row, best) else "")


def status(row: SweepRow, best: SweepRow | None) -> str:
    """The row's key in STATUS: what colours its bar (spills before low occupancy)."""
    if row["status"] in ("failed", "timeout", "pruned"):
        return "failed"
    if row["status"] == "wrong":
        return "wrong"
    mark = marks(row, best)
    return "spill" if MARKERS["spill"] in mark else "occupancy" if mark else "ok"


def order(rows: list[SweepRow]) -> list[SweepRow]:
    """Fastest first, then the untimed: a static sweep's by the model's time (`model`), those
    the model cannot place last."""
    rest = [r for r in rows if r["status"] != analysis.TIMED]
    rest.sort(key=lambda r: (r.get("model") is None, r.get("model") or 0.0))
    return analysis.ranked(rows) + rest


def bars(rows: list[SweepRow], width: int = 40) -> list[str]:
    """One line per config: its short name, a bar scaled to the slowest timed config, ms,
    markers; fastest first, then the untimed."""
    timed = analysis.ranked(rows)
    top = max((timed_ms(r) for r in timed), default=1.0)
    best = timed[0] if timed else None
    short = names(rows)
    name_w = max((len(n) for n in short.values()), default=0)
    lines = []
    for r in order(rows):
        if r["status"] == analysis.TIMED:
            bar = "█" * max(1, round(width * timed_ms(r) / top))
            value = f"{r['ms']:.4g} ms"
        else:
            bar, value = "", r["status"]
        lines.append(f"{short[r['label']]:<{name_w}} {bar:<{width}} {value:>11} {marks(r, best)}")
    return lines


def prefetch() -> None:
    """Import pyplot in a daemon thread: begun as a timed sweep starts, the import is made while
    the sweep's process waits on its workers, not after the last row (`png`)."""
    threading.Thread(target=_pyplot, name="pyplot-import", daemon=True).start()


def _pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend; None where matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def png(result: SweepResult, path: Path) -> str | None:
    """`figure` as a PNG at `path`, cropped to what it holds; None where nothing was timed (a
    static sweep does not import matplotlib) or matplotlib is missing."""
    plt = _pyplot() if analysis.ranked(result.rows) else None
    if plt is None:
        return None
    fig = figure(result)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return str(path)


def key(result: SweepResult) -> str:
    """What `figure` draws from: two results with one key give one picture."""
    drawn = (result.kernel, result.dtype, result.gpu, result.arch, result.rows, result.triton)
    return json.dumps(drawn, sort_keys=True, default=str)


def figure(result: SweepResult) -> Any:
    """The bars of every shape, each config by its short name (`names`) and coloured by its
    status, its time and brief beside it, the best and Triton's pick in bold; a share of BARS
    (at least DRAWN) a shape, the rest counted; None with nothing timed."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    shapes = analysis.by_shape(result.rows)
    if not any(analysis.ranked(rs) for rs in shapes.values()):
        return None
    cols = 1 if len(shapes) <= COLUMNS else COLUMNS
    grid = [list(shapes.items())[i : i + cols] for i in range(0, len(shapes), cols)]
    drawn = max(DRAWN, BARS // len(shapes))
    height = sum(max(0.28 * min(len(rs), drawn + 1) + 1.2 for _, rs in r) for r in grid) + 0.8
    fig, axes = plt.subplots(len(grid), cols, figsize=(9 * cols, height), layout="constrained")
    panels = list(getattr(axes, "flat", [axes]))
    for ax in panels[len(shapes) :]:
        ax.set_axis_off()
    seen: set[str] = set()
    for ax, (shape, rows) in zip(panels, shapes.items()):
        seen.update(_panel(ax, result, shape, rows, drawn))
    handles = [Patch(color=STATUS[k][0], label=STATUS[k][1]) for k in STATUS if k in seen]
    fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), fontsize=7)
    return fig


def _panel(ax: Any, result: SweepResult, shape: str, rows: list[SweepRow], most: int) -> set[str]:
    """One shape's bars on `ax` (its `most` fastest, and Triton's pick); the statuses it
    coloured."""
    pick = (result.triton.get(shape) or {}).get("label")
    ranked = order(rows)
    best = ranked[0] if ranked[0]["status"] == analysis.TIMED else None
    drawn = ranked[:most] + [r for r in ranked[most:] if r["label"] == pick]
    short = names(rows)
    ys = list(range(len(drawn)))
    keys = [status(r, best) for r in drawn]
    top = max((r["ms"] or 0.0 for r in drawn), default=0.0)
    # a config without a time gets a stub, so that its colour shows
    widths = [r["ms"] or top * 0.02 for r in drawn]
    ax.barh(ys, widths, color=[STATUS[k][0] for k in keys])
    ax.set_yticks(ys, [short[r["label"]] for r in drawn], fontsize=8, family="monospace")
    ax.set_ylim(len(drawn) - 0.5, -0.5)  # fastest on top, no margin
    left = len(ranked) - len(drawn)
    more = f"; {left} slower config(s) not drawn (sweep.json has every one)" if left else ""
    ax.set_xlabel(f"ms (median, L2 flushed){more}")
    for y, r in zip(ys, drawn):
        said = [f"{r['ms']:.4g} ms"] if r["ms"] else []
        said.append(r.get("brief") or r["status"])
        if r["label"] == pick:
            said.append("Triton's pick")
        weight = "bold" if r is best or r["label"] == pick else "normal"
        x = widths[y] + top * 0.01
        ax.text(x, y, "  ".join(said), va="center", fontsize=7, fontweight=weight)
    ax.set_xlim(0, top * 1.6 or 1.0)
    what = (result.kernel, shape, result.dtype, "on", result.gpu or result.arch)
    title = " ".join(w for w in what if w and w != "-")
    ax.set_title("\n".join(filter(None, (title, shared_text(rows)))), fontsize=9)
    return set(keys)
