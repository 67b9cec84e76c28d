"""The report's PNGs (matplotlib, Agg backend): a kernel's bench cases against the roofline its
own run measured, and its times across runs per case.

Each returns the path it wrote, or None with nothing to draw; matplotlib is imported only here,
when a plot is made.
"""

from __future__ import annotations

import datetime
import math
from pathlib import Path
from typing import Any

from workbench.bench.history import Trend
from workbench.bench.result import BenchRecord, Ceilings
from workbench.runtime.grammar import shape_text

DPI = 100


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def roofline(records: list[BenchRecord], ceil: Ceilings, title: str, path: Path) -> Path | None:
    """TFLOP/s against arithmetic intensity (FLOP per byte moved): each timed case a point, the
    measured copy bandwidth the slanted roof, each measured matmul rate a flat one. None when no
    case has a FLOP and byte model."""
    placed = [r for r in records if r.ms and r.flops and r.bytes]
    if not placed:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.2))
    intensity = [r.flops / r.bytes for r in placed if r.flops and r.bytes]
    # the roofs of the dtypes shown (float32 runs on TF32 units), highest first
    rates = {d: ceil.matmul_rate(d) for d in sorted({r.compute_dtype or r.dtype for r in placed})}
    rates = dict(sorted(rates.items(), key=lambda kv: -kv[1]))
    top = max([*rates.values(), *(r.tflops or 0.0 for r in placed)])
    ridges = [rate * 1000 / ceil.copy_gbps for rate in rates.values()]
    lo = min(intensity + ridges) / 4
    hi = max(intensity + ridges) * 4
    xs = [lo * (max(ridges) / lo) ** (i / 64) for i in range(65)]
    ax.plot(xs, [ceil.copy_gbps * x / 1000 for x in xs], color="0.35", lw=1.2)
    label_x = lo * 1.5
    ax.text(
        label_x,
        ceil.copy_gbps * label_x / 1000 * 1.2,
        f"copy {ceil.copy_gbps:,.0f} GB/s",
        fontsize=7,
        color="0.35",
        va="bottom",
    )
    above = True
    previous = None
    for dtype, rate in rates.items():
        ridge = rate * 1000 / ceil.copy_gbps
        ax.plot([ridge, hi], [rate, rate], color="0.55", lw=1, ls="--")
        name = "float32 (TF32)" if dtype == "float32" else dtype
        above = not above if previous and previous / rate < 1.3 else True  # close roofs: alternate
        previous = rate
        ax.text(
            hi,
            rate,
            f"{name} matmul {rate:,.0f} TFLOP/s",
            fontsize=7,
            ha="right",
            va="bottom" if above else "top",
            color="0.35",
        )
    colors: dict[str, str] = {}
    labelled: set[tuple] = set()
    stacked: dict[float, int] = {}
    for r, x in zip(placed, intensity):
        color = colors.setdefault(r.dtype, f"C{len(colors)}")
        ax.scatter([x], [r.tflops], color=color, zorder=3, s=22)
        spot = (round(math.log10(x), 2), round(math.log10(r.tflops or 1e-9), 2), tuple(r.shape))
        if spot in labelled:  # dtypes of one shape often land on one spot: one label
            continue
        labelled.add(spot)
        row = stacked[spot[0]] = stacked.get(spot[0], -1) + 1  # labels at one intensity stack
        ratio = f" ({r.roofline_ratio:.2f})" if r.roofline_ratio is not None else ""
        ax.annotate(
            shape_text(r.shape) + ratio,
            (x, r.tflops),
            fontsize=6,
            xytext=(6, -8 - 8 * row),
            textcoords="offset points",
        )
    for dtype, color in colors.items():
        ax.scatter([], [], color=color, label=dtype, s=22)
    ax.set_xscale("log")
    ax.set_yscale("log")
    low = min(r.tflops or top for r in placed)
    ax.set_ylim(min(low, ceil.copy_gbps * lo / 1000) / 2, top * 2.5)
    ax.set_xlim(lo, hi)
    ax.set_xlabel("arithmetic intensity (FLOP / byte moved)")
    ax.set_ylabel("TFLOP/s")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(True, which="major", ls=":", lw=0.5)
    return _save(plt, fig, path)


def trend(trends: list[Trend], title: str, path: Path) -> Path | None:
    """Median time per run (p20-p80 as error bars) for every case with at least two runs,
    regressions marked. Log time axis: cases of very different sizes share it."""
    shown = [t for t in trends if len(t.points) > 1]
    if not shown:
        return None
    plt = _pyplot()
    import matplotlib.dates
    import matplotlib.ticker

    fig, ax = plt.subplots(figsize=(7, 3.4))
    for i, t in enumerate(shown):
        when = [datetime.datetime.fromtimestamp(p.time) for p in t.points]
        ms = [p.ms for p in t.points]
        low = [p.ms - p.p20 if p.p20 is not None else 0.0 for p in t.points]
        high = [p.p80 - p.ms if p.p80 is not None else 0.0 for p in t.points]
        label = f"{shape_text(t.case.shape)} {t.case.dtype} ({_short_gpu(t.case.gpu)}, "
        label += f"Triton {t.case.triton})"
        ax.errorbar(
            when,
            ms,
            yerr=[low, high],
            marker="o",
            ms=3,
            lw=1,
            capsize=2,
            color=f"C{i % 10}",
            label=label,
        )
        if t.regression:
            ax.scatter([when[-1]], [ms[-1]], marker="x", s=60, color="red", zorder=4)
    if any(t.regression for t in shown):
        ax.scatter([], [], marker="x", color="red", label="regression")
    ax.set_yscale("log")
    # plain numbers; minor ticks labelled too when the times span less than a decade
    plain = matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:.3g}")
    times = [p.ms for t in shown for p in t.points]
    narrow = max(times) / min(times) < 10
    ax.yaxis.set_major_formatter(plain)
    ax.yaxis.set_minor_formatter(plain if narrow else matplotlib.ticker.NullFormatter())
    ax.tick_params(axis="y", which="minor", labelsize=7)
    locator = matplotlib.dates.AutoDateLocator()
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(matplotlib.dates.ConciseDateFormatter(locator))
    ax.set_ylabel("ms (median)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=6, loc="best")
    ax.grid(True, ls=":", lw=0.5)
    return _save(plt, fig, path)


def _short_gpu(name: str) -> str:
    return name.removeprefix("NVIDIA ").split(" ")[0] if name else "?"


def _save(plt: Any, fig: Any, path: Path) -> Path:
    # fixed margins: tight_layout measures every tick label, seconds per plot on a busy host
    fig.subplots_adjust(left=0.1, right=0.98, bottom=0.14, top=0.92)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path
