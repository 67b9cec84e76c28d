"""The sweep's PNG and the report's roofline, drawn from real GPU results: configs named by what
sets them apart, bars coloured by status, every dtype against its own roof, no label cut."""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES, ROOT

from workbench.bench.result import BenchRecord, Ceilings
from workbench.ir.config import shared_values, short_legend, short_name
from workbench.report import plots
from workbench.sweep import analysis, plot
from workbench.sweep.result import SweepResult

H100 = json.loads((FIXTURES / "sweep_h100_matmul16.json").read_text())["result"]
H200X2 = json.loads((FIXTURES / "sweep_h200x2_matmul64.json").read_text())["result"]
H100_BENCH = json.loads((ROOT / "reports" / "h100" / "bench.json").read_text())


def test_short_names_keep_what_differs_and_say_the_rest_once():
    configs = [
        {"BLOCK_M": 128, "BLOCK_SIZE_N": 64, "GROUP_M": 8, "SPLIT": 2, "num_warps": 4},
        {"BLOCK_M": 64, "BLOCK_SIZE_N": 64, "GROUP_M": 8, "SPLIT": 1, "num_warps": 8},
    ]
    shared = shared_values(configs)
    assert shared == {"BLOCK_SIZE_N": 64, "GROUP_M": 8}
    assert [short_name(c, shared) for c in configs] == ["BM128 SPLIT=2 w4", "BM64 SPLIT=1 w8"]
    assert short_name(shared) == "BN64 GROUP_M=8"
    assert short_legend(configs) == "BM = BLOCK_M, BN = BLOCK_SIZE_N, w = num_warps"
    # a config alone shares nothing: it is named by all its values
    assert short_name(configs[0], shared_values(configs[:1])) == "BM128 BN64 GROUP_M=8 SPLIT=2 w4"


def test_the_sweep_png_names_bars_by_what_differs_and_colours_them_by_status(tmp_path):
    result = SweepResult.from_dict(H200X2)
    names = plot.names(result.rows)
    assert len(set(names.values())) == 64 and not any("GROUP_M" in n for n in names.values())
    fig = plot.figure(result)
    [ax] = fig.axes
    ticks = [t.get_text() for t in ax.get_yticklabels()]
    assert ticks[0] == "BM128 BN256 BK64 w8 s3" and ticks == [
        names[r["label"]] for r in plot.order(result.rows)
    ]
    assert "every config: GROUP_M=8" in ax.get_title()
    bars = {t: p.get_facecolor() for t, p in zip(ticks, ax.patches)}
    red, blue = (pytest.approx(c) for c in _rgba("tab:red", "tab:blue"))
    assert bars["BM128 BN256 BK32 w4 s3"] == red  # spills 720 bytes/thread
    assert bars["BM128 BN256 BK64 w8 s3"] == blue  # the best
    said = [t.get_text() for t in ax.texts]
    assert (
        said[0].startswith("0.1852 ms  best  Triton's pick") and ax.texts[0].get_weight() == "bold"
    )
    assert "tile 32 FLOP/B" in said[-9]  # the slowest config that does not spill
    # nothing outside the figure once it is laid out
    fig.canvas.draw()
    inside = fig.bbox
    for text in [ax.title, ax.xaxis.label, *ax.get_yticklabels(), *fig.legends[0].get_texts()]:
        box = text.get_window_extent()
        assert inside.x0 <= box.x0 and box.x1 <= inside.x1 and inside.y0 <= box.y0, text
    assert plot.png(SweepResult.from_dict(H100), tmp_path / "sweep.png") == str(
        tmp_path / "sweep.png"
    )
    assert (tmp_path / "sweep.png").stat().st_size > 20_000


def test_a_big_sweeps_png_draws_each_shapes_fastest_and_counts_the_rest():
    """13 batch sizes x 128 configs (an H100 recording): a grid of panels, each with its
    fastest configs and Triton's pick wherever it ranked, the rest counted under it."""
    result = SweepResult.from_dict(json.loads((FIXTURES / "spaces" / "moe.json").read_text()))
    fig = plot.figure(result)
    panels = [ax for ax in fig.axes if ax.axison]
    assert len(panels) == 13 and len(fig.axes) == 15  # 5 rows of 3, two left blank
    for ax, (shape, rows) in zip(panels, analysis.by_shape(result.rows).items()):
        said = [t.get_text() for t in ax.texts]
        ranked = plot.order(rows)
        pick = result.triton[shape]["label"]
        fastest = ranked[: plot.DRAWN]
        assert [t.get_text() for t in ax.get_yticklabels()][: plot.DRAWN] == [
            plot.names(rows)[r["label"]] for r in fastest
        ]
        assert sum("Triton's pick" in t for t in said) == 1
        drawn = plot.DRAWN + (pick not in {r["label"] for r in fastest})
        assert len(ax.patches) == drawn
        assert f"{len(rows) - drawn} slower config(s) not drawn" in ax.get_xlabel()


def test_a_roofline_draws_every_dtype_against_its_own_roof(tmp_path):
    records = [
        BenchRecord.from_dict(r)
        for r in H100_BENCH["records"]
        if r["name"] == "matmul_bias_gelu" and r["status"] == "ok"
    ]
    ceil = Ceilings.from_dict(H100_BENCH["ceilings"])
    assert {r.dtype for r in records} == {"float32", "float16", "bfloat16"}
    roofs = plots.roofs(records, ceil)
    assert roofs == {
        dtype: (ceil.matmul_rate(dtype), f"{name}: roof {ceil.matmul_rate(dtype):,.0f} TFLOP/s")
        for dtype, name in (
            ("float16", "float16"),
            ("bfloat16", "bfloat16"),
            ("float32", "float32 (TF32)"),
        )
    }
    fig = plots.roofline_figure(records, ceil, "matmul_bias_gelu on the H100")
    [ax] = fig.axes
    dashed = [line for line in ax.lines if line.get_linestyle() == "--"]
    assert sorted(line.get_ydata()[0] for line in dashed) == sorted(r for r, _ in roofs.values())
    # each case a point, in the colour of its dtype's roof
    assert len(ax.collections) == len(records) == 9
    roof_colour = {line.get_ydata()[0]: line.get_color() for line in dashed}
    for point, rec in zip(ax.collections, records):
        assert tuple(point.get_facecolor()[0]) == pytest.approx(
            _rgba(roof_colour[ceil.matmul_rate(rec.dtype)])[0]
        )
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert [label for _, label in roofs.values()] == legend[1:4]
    fig.canvas.draw()
    inside = fig.bbox
    for text in [ax.yaxis.label, ax.xaxis.label, ax.title, *fig.legends[0].get_texts()]:
        box = text.get_window_extent()
        assert inside.x0 <= box.x0 and box.x1 <= inside.x1 and inside.y0 <= box.y0, text
    path = plots.roofline(records, ceil, "matmul_bias_gelu", tmp_path / "roofline.png")
    assert path is not None and path.stat().st_size > 10_000
    # the gallery's one float32 case, whose y label the fixed margins cut
    fig = plots.roofline_figure(records[:1], ceil, "matmul_bias_gelu on the H100")
    fig.canvas.draw()
    assert fig.bbox.x0 <= fig.axes[0].yaxis.label.get_window_extent().x0


def test_a_dtype_the_run_did_not_measure_is_said_to_use_bfloat16s_roof():
    ceil = Ceilings.from_dict(H100_BENCH["ceilings"])
    rec = BenchRecord.from_dict(
        {**H100_BENCH["records"][0], "dtype": "float8_e4m3fn", "flops": 1e9, "bytes": 1e6}
    )
    [(rate, said)] = plots.roofs([rec], ceil).values()
    assert rate == ceil.matmul_rate("bfloat16") and said.endswith("(bfloat16's)")


def _rgba(*colours: str) -> list[tuple]:
    from matplotlib.colors import to_rgba

    return [to_rgba(c) for c in colours]
