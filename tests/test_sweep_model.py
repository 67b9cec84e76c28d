"""The sweep's static model: GEMM tile intensity against the ridge, waves, loads in flight, and
the losers it explains, on real recorded sweeps (H100 and two H200s, 4096^3 bf16) and on cases
worked by hand at its edges."""

from __future__ import annotations

import copy
import json

import pytest
from conftest import FIXTURES, ROOT

from workbench.bench.result import Ceilings
from workbench.sweep import analysis, model
from workbench.sweep.result import SweepResult

H100 = json.loads((FIXTURES / "sweep_h100_matmul16.json").read_text())["result"]
H200X2 = json.loads((FIXTURES / "sweep_h200x2_matmul64.json").read_text())["result"]
H100_DEVICE = model.device("NVIDIA H100 80GB HBM3", "bfloat16")


def _explained(recorded: dict) -> SweepResult:
    raw = copy.deepcopy(recorded)
    for row in raw["rows"]:
        row.pop("why", None)
    return SweepResult.from_dict(raw)


def _why(result: SweepResult) -> dict[tuple, str]:
    """(BM, BN, BK, warps, stages) -> the row's explanation."""
    keys = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps", "num_stages")
    return {tuple(r["values"][k] for k in keys): r["why"] for r in result.rows}


def test_the_h100_sixteen_leave_two_losers_to_a_profile_and_size_the_small_tiles():
    result = _explained(H100)
    why = _why(result)
    losers = [w for w in why.values() if w != "best"]
    assert len(losers) == 15
    left = [w for w in losers if "profile it" in w]
    # 256x128 moves the same bytes per FLOP as the 128x256 winner: nothing static tells them apart
    assert len(left) == 2
    assert all(w.endswith("no static reason: profile it (profile --pin)") for w in left)
    assert "profile it" in why[(256, 128, 64, 8, 3)] and "profile it" in why[(256, 128, 64, 8, 4)]
    # 2.3x slower, and the model says 2.29x: a 64x64 tile moves 2.7x the bytes per FLOP
    assert why[(64, 64, 64, 4, 3)] == (
        "125% slower: tile intensity 32 FLOP/B (64x64) against the best's 85, below the ridge "
        "295: memory-bound tile (model 2.29x)"
    )
    assert why[(128, 128, 32, 4, 3)].startswith("31% slower: tile intensity 64 FLOP/B (128x128)")
    info = result.shapes["4096x4096x4096"]
    assert (
        info["profile"] == "BLOCK_M=256,BLOCK_N=128,BLOCK_K=64,GROUP_M=8,num_warps=8,num_stages=3"
    )


def test_the_ridge_of_the_h100s_measured_ceilings_leaves_the_same_two():
    """A GPU run records the ridge of the ceilings a bench measured there (bf16 matmul over
    copy bandwidth: 723-758 TFLOP/s over 3,000 GB/s in this H100's runs, 241-253 FLOP/B)
    instead of the datasheet's (295)."""
    doc = json.loads((ROOT / "reports" / "h100" / "bench.json").read_text())
    ceil = Ceilings.from_dict(doc["ceilings"])
    ridge = ceil.matmul_rate("bfloat16") * 1e12 / (ceil.copy_gbps * 1e9)
    assert 230 < ridge < 270  # measured, well under the datasheet's
    measured = {**H100, "device": {"sms": 132, "ridge": ridge, "source": "measured"}}
    why = _why(_explained(measured))
    left = [k for k, w in why.items() if "profile it" in w]
    assert sorted(left) == [(256, 128, 64, 8, 3), (256, 128, 64, 8, 4)]
    assert f"below the ridge {ridge:.0f}" in why[(64, 64, 64, 4, 4)]


def test_the_h200_sixty_four_name_shallow_pipelines_and_spills():
    result = _explained(H200X2)
    why = _why(result)
    # BK=32 at 3 stages: 2 x 24 KiB ahead; its 4-stage twin keeps up
    assert why[(128, 256, 32, 8, 3)].startswith(
        "28% slower: 48 KiB of loads in flight per SM (1 block/SM x 2 stages of 24 KiB ahead)"
    )
    assert "profile it" in why[(128, 256, 32, 8, 4)]
    assert why[(128, 256, 64, 4, 3)].startswith("600% slower: spills 800 bytes/thread")
    left = [w for w in why.values() if "profile it" in w]
    assert len(left) <= 6 and len(why) == 64
    # the model expects more than was measured: said, and left to a profile
    assert "the model expects 24% (tile intensity 64 FLOP/B" in why[(128, 128, 64, 4, 3)]


def test_without_the_model_a_loser_is_the_old_unexplained_one():
    """A row whose kernel has no GEMM blocks and no grid gets the facts alone, as before."""
    raw = copy.deepcopy(H100)
    for row in raw["rows"]:
        row["values"] = {"BLOCK": row["values"]["BLOCK_M"], "num_warps": 4}
        row.pop("why", None)
    result = SweepResult.from_dict(raw)
    assert sum("no static reason" in r["why"] for r in result.rows) > 2
    assert all("tile intensity" not in r["why"] for r in result.rows)


def test_tile_intensity_and_ridge_by_hand():
    prob = model.Problem({"M": 4096, "N": 4096, "K": 4096}, 2 * 4096**3, 2)
    row = _row(128, 256, 64, stages=4, per_sm=1)
    est = model.estimate(row, prob, H100_DEVICE)
    assert est is not None and est.tile == (128, 256)
    assert est.intensity == pytest.approx(2 * 128 * 256 / (384 * 2))  # 85.3 FLOP/B
    assert H100_DEVICE.ridge == pytest.approx(989.4e12 / 3350e9)  # 295
    assert est.tiles == 32 * 16 and est.waves == pytest.approx(512 / 132)
    assert est.in_flight == 3 * 384 * 64 * 2 and est.starve == 1.0
    # float32 halves the intensity and runs at the TF32 peak: half the ridge
    fp32 = model.estimate(row, model.Problem(prob.sizes, prob.flops, 4), H100_DEVICE)
    assert fp32 is not None and fp32.intensity == pytest.approx(est.intensity / 2)
    assert model.device("NVIDIA H100 80GB HBM3", "float32").ridge == pytest.approx(
        H100_DEVICE.ridge / 2
    )
    assert model.device("NVIDIA H200", "bfloat16").ridge == pytest.approx(989.4 / 4.8)
    assert model.device("NVIDIA A100", None).ridge == H100_DEVICE.ridge  # read as an H100
    measured = {"sms": 114, "ridge": 250.0, "source": "measured"}
    assert model.device("NVIDIA H100 PCIe", "bfloat16", measured) == model.Device(
        114, 250.0, "measured"
    )


@pytest.mark.parametrize(
    ("tiles", "per_sm", "cost"),
    [
        (132, 1, 1.0),  # one full wave
        (133, 1, 2 / (133 / 132)),  # one block past it: a second wave for one SM
        (264, 2, 1.0),  # one wave of two blocks per SM
        (300, 2, 3 / (300 / 132)),  # a wave of 264, then 36 on 36 SMs: the busiest runs 3
        (66, 1, 1 / 0.5),  # half the SMs idle
    ],
)
def test_wave_cost_counts_blocks_on_the_busiest_sm(tiles, per_sm, cost):
    assert model.wave_cost(tiles, 132, per_sm) == pytest.approx(cost)


def test_loads_in_flight_stretch_below_64_kib_and_not_at_it():
    prob = model.Problem({"M": 4096, "N": 4096, "K": 4096}, None, 2)
    at = model.estimate(_row(128, 128, 32, stages=3, per_sm=2), prob, H100_DEVICE)
    under = model.estimate(_row(128, 256, 32, stages=3, per_sm=1), prob, H100_DEVICE)
    assert at is not None and at.in_flight == 64 * 1024 and at.starve == 1.0
    assert under is not None and under.in_flight == 48 * 1024
    assert under.starve == pytest.approx(4 / 3)


def test_a_gemm_needs_m_n_k_blocks_sizes_and_matmul_flops():
    blocks = model.gemm_blocks({"BLOCK_SIZE_M": 64, "BN": 32, "TILE_K": 16, "GROUP_M": 8})
    assert blocks == {"M": 64, "N": 32, "K": 16}
    assert model.gemm_blocks({"BLOCK_M": 64, "BLOCK_N": 64, "HEAD_DIM": 64}) is None
    sizes = {"M": 512, "N": 256, "K": 128}
    assert model.gemm_dims(model.Problem(sizes, 2 * 512 * 256 * 128 * 4, 2), blocks) == (
        512,
        256,
        128,
        4,
    )
    # a reference without matmul FLOPs (no dot), or with other FLOPs, is no GEMM
    assert model.gemm_dims(model.Problem(sizes, 0.0, 2), blocks) is None
    assert model.gemm_dims(model.Problem(sizes, 3e9, 2), blocks) is None
    assert model.gemm_dims(model.Problem({"M": 512}, None, 2), blocks) is None
    # recorded before the facts: a shape of three sizes is M, N, K
    assert model.problem(None, [64, 32, 16], "float32") == model.Problem(
        {"M": 64, "N": 32, "K": 16}, None, 4
    )


def test_a_grid_alone_gives_waves_for_any_kernel():
    dev = model.Device(132, 295.0, "test")
    prob = model.Problem({}, None, 2)
    full = {"values": {"BLOCK": 1024}, "programs": 264, "resources": _res(2)}
    tail = {"values": {"BLOCK": 512}, "programs": 140, "resources": _res(1)}
    a, b = model.estimate(full, prob, dev), model.estimate(tail, prob, dev)
    assert a is not None and b is not None and b.tile is None
    p = model.compare(b, a)
    assert p.ratio == pytest.approx(2 / (140 / 132)) and not p.tiled
    assert p.reasons == (
        model.Reason("1.1 waves", "1.1 waves of 132 blocks (1 block/SM): the last wave 94% empty"),
    )
    assert model.estimate({"values": {}, "resources": _res(1)}, prob, dev) is None


@pytest.mark.parametrize(
    ("predicted", "measured", "explains"),
    [
        (1.26, 1.18, True),
        (1.47, 1.22, True),
        (1.24, 1.05, False),  # 4x the measured excess on the log scale
        (1.24, 2.0, False),  # a third of it
        (1.02, 1.02, False),  # under the 3% the model names
        (1.5, 0.99, False),  # faster than the best: nothing to explain
    ],
)
def test_the_model_explains_slowdowns_of_similar_size(predicted, measured, explains):
    reason = model.Reason("r", "r")
    assert model.Prediction(predicted, (reason,), True).explains(measured) is explains


def test_what_the_model_leaves_is_said_with_the_gap_to_profile():
    best = {**_timed(1.0), "label": "best"}
    tile = model.Reason("tile 50 FLOP/B", "tile intensity 50 FLOP/B")
    part = analysis.verdict(_timed(2.0), best, model.Prediction(1.2, (tile,), True))
    assert part.why == (
        "100% slower; the model accounts for 20% (tile intensity 50 FLOP/B), the other 67% has "
        "no static reason: profile it (profile --pin)"
    )
    assert part.gap == pytest.approx(2.0 / 1.2) and part.brief == "profile it"
    faster = analysis.verdict(_timed(1.1), best, model.Prediction(0.8, (), True))
    assert faster.why.startswith("10% slower where the model expects it 20% faster: profile it")
    assert faster.gap == pytest.approx(1.1 / 0.8)
    sized = analysis.verdict(_timed(1.2), best, model.Prediction(1.25, (tile,), True))
    assert sized == analysis.Verdict(
        "20% slower: tile intensity 50 FLOP/B (model 1.25x)", "tile 50 FLOP/B"
    )


def _res(per_sm: int, limiter: str = "registers") -> dict:
    occupancy = {"blocks_per_sm": per_sm, "percent": 12.5 * per_sm, "limiter": limiter}
    return {"occupancy": occupancy, "shared_bytes": 0, "spill_bytes": 0}


def _row(bm: int, bn: int, bk: int, stages: int, per_sm: int) -> dict:
    values = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "num_warps": 8, "num_stages": stages}
    return {"values": values, "resources": _res(per_sm)}


def _timed(ms: float) -> dict:
    return {"label": f"c{ms}", "status": "ok", "ms": ms, "p20": ms, "p80": ms, "resources": None}


def test_a_live_h100_sweep_records_what_the_model_reads_and_leaves_two_to_a_profile():
    """`sweep matmul16` on an H100 with this code (tests/gpu/test_sweep_gpu.py, kept): the job
    recorded the GPU's SMs, each config's programs and the problem's sizes and FLOPs; read
    again here, the model leaves at most two of the fifteen losers to a profile, as it said
    live."""
    live = json.loads((FIXTURES / "sweep_gpu_matmul16_model.json").read_text())["result"]
    assert live["device"]["sms"] == 132 and live["problems"]
    assert all(r.get("programs") for r in live["rows"] if r["status"] == "ok")
    assert live["problems"]["4096x4096x4096"]["flops"] == 2 * 4096**3
    result = _explained(live)
    left = [r for r in result.rows if "profile it" in r["why"]]
    assert len([r for r in result.rows if r["why"] != "best"]) == 15 and len(left) <= 2
    assert [r["why"] for r in live["rows"]] == [r["why"] for r in result.rows]
