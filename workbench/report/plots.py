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
MARKERS = "os^Dv<>P"
"""A roofline's points by shape (their colour is their dtype's)."""


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def roofs(records: list[BenchRecord], ceil: Ceilings) -> dict[str, tuple[float, str]]:
    """One compute roof per dtype the cases ran in: dtype -> (TFLOP/s, its label), highest
    first. A case runs against its own dtype's measured matmul rate (float32 on TF32 units; a
    dtype the run did not measure, bfloat16's, and the label says so)."""
    out = {}
    for dtype in sorted({r.compute_dtype or r.dtype for r in records}):
        measured = dtype in ceil.matmul_tflops
        name = "float32 (TF32)" if dtype == "float32" else dtype
        rate = ceil.matmul_rate(dtype)
        said = f"{name}: roof {rate:,.0f} TFLOP/s" + ("" if measured else " (bfloat16's)")
        out[dtype] = (rate, said)
    return dict(sorted(out.items(), key=lambda kv: -kv[1][0]))


def roofline(records: list[BenchRecord], ceil: Ceilings, title: str, path: Path) -> Path | None:
    """`roofline_figure` as a PNG at `path`, cropped to what it holds (no label cut)."""
    fig = roofline_figure(records, ceil, title)
    return None if fig is None else _save(_pyplot(), fig, path, tight=True)


def roofline_figure(records: list[BenchRecord], ceil: Ceilings, title: str) -> Any:
    """TFLOP/s against arithmetic intensity (FLOP per byte moved): each timed case a point in its
    dtype's colour and its shape's marker, the measured copy bandwidth the slanted roof, each
    dtype's measured matmul rate a flat one in the same colour (`roofs`). None when no case has
    a FLOP and byte model."""
    placed = [r for r in records if r.ms and r.flops and r.bytes]
    if not placed:
        return None
    plt = _pyplot()
    from matplotlib.lines import Line2D

    fig, ax = plt.subplots(figsize=(7, 4.6), layout="constrained")
    intensity = [r.flops / r.bytes for r in placed if r.flops and r.bytes]
    rates = roofs(placed, ceil)
    colors = {dtype: f"C{i}" for i, dtype in enumerate(rates)}
    top = max([*(rate for rate, _ in rates.values()), *(r.tflops or 0.0 for r in placed)])
    ridges = [rate * 1000 / ceil.copy_gbps for rate, _ in rates.values()]
    lo = min(intensity + ridges) / 4
    hi = max(intensity + ridges) * 4
    xs = [lo * (max(ridges) / lo) ** (i / 64) for i in range(65)]
    ax.plot(xs, [ceil.copy_gbps * x / 1000 for x in xs], color="0.35", lw=1.2)
    handles = [Line2D([], [], color="0.35", lw=1.2, label=f"copy {ceil.copy_gbps:,.0f} GB/s")]
    for dtype, (rate, said) in rates.items():
        ridge = rate * 1000 / ceil.copy_gbps
        ax.plot([ridge, hi], [rate, rate], color=colors[dtype], lw=1.2, ls="--")
        handles.append(Line2D([], [], color=colors[dtype], ls="--", marker="o", ms=4, label=said))
    shapes = list(dict.fromkeys(shape_text(r.shape) for r in placed))
    markers = {shape: MARKERS[i % len(MARKERS)] for i, shape in enumerate(shapes)}
    # one size per dtype, largest first: cases of one shape that land on one spot (float16
    # and bfloat16 of a memory-bound kernel) show as rings, not one point hiding the other
    sizes = {dtype: max(12, 70 - 26 * i) for i, dtype in enumerate(rates)}
    for r, x in zip(placed, intensity):
        dtype = r.compute_dtype or r.dtype
        marker = markers[shape_text(r.shape)]
        z = 3 + list(rates).index(dtype)
        ax.scatter([x], [r.tflops], color=colors[dtype], marker=marker, zorder=z, s=sizes[dtype])
    if len(shapes) > 1:
        handles += [
            Line2D([], [], color="0.3", marker=markers[s], ls="", ms=5, label=s) for s in shapes
        ]
    ax.set_xscale("log")
    ax.set_yscale("log")
    low = min(r.tflops or top for r in placed)
    ax.set_ylim(min(low, ceil.copy_gbps * lo / 1000) / 2, top * 2.5)
    ax.set_xlim(lo, hi)
    _plain_ticks(ax)
    ax.set_xlabel("arithmetic intensity (FLOP / byte moved)")
    ax.set_ylabel("TFLOP/s")
    ax.set_title(title, fontsize=9)
    fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=7, frameon=False)
    ax.grid(True, which="major", ls=":", lw=0.5)
    return fig


def _plain_ticks(ax: Any) -> None:
    """Log axes labelled 0.1, 1, 600 rather than 6x10^2 (narrower, and quick to measure); where
    an axis spans under two decades its 2s and 5s too, so that it has more than one label."""
    import matplotlib.ticker

    def plain(v: float, _: Any = None) -> str:
        return f"{v:,.0f}" if v >= 1 else f"{v:.2g}"

    def twos_fives(v: float, _: Any) -> str:
        lead = round(v / 10 ** math.floor(math.log10(v)))
        return plain(v) if lead in (2, 5) else ""

    for axis, (a, b) in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
        axis.set_major_formatter(matplotlib.ticker.FuncFormatter(plain))
        minor = twos_fives if b / a < 100 else matplotlib.ticker.NullFormatter()
        axis.set_minor_formatter(
            matplotlib.ticker.FuncFormatter(minor) if callable(minor) else minor
        )


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
    plain = matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:.2g}")
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


def _save(plt: Any, fig: Any, path: Path, tight: bool = False) -> Path:
    """`tight`: the figure is laid out by its own layout engine and cropped to what it holds, so
    no label is cut; else fixed margins (tight_layout measures every tick label, seconds per plot
    on a busy host)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if tight:
        fig.savefig(path, dpi=DPI, bbox_inches="tight", pad_inches=0.05)
    else:
        fig.subplots_adjust(left=0.1, right=0.98, bottom=0.14, top=0.92)
        fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path
