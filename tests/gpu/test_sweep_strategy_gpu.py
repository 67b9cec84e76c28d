"""Search strategies on a GPU, for real: the sweep times only what the strategy asks, its rows say
so, the rest are skipped; the rows of a whole sweep keep the seconds a replay needs. Run with
`python -m pytest -m gpu tests/gpu/test_sweep_strategy_gpu.py` on the GPU host."""

from __future__ import annotations

import itertools
import json

import pytest
from conftest import ROOT, cli

pytestmark = pytest.mark.gpu

MATMUL16 = str(ROOT / "benchmarks" / "sweep_matmul16.py")
SHAPE = "2048x2048x2048"


def _sweep(*args: str) -> dict:
    proc = cli("sweep", "matmul16", "--path", MATMUL16, "--shape", SHAPE, *args, "--json")
    assert proc.stdout.strip(), proc.stderr[-3000:]
    return json.loads(proc.stdout)["result"]


def _space(tmp_path) -> str:
    """128 configs, the kernel's own 16 among them (Triton's pick is in the space)."""
    tiles = (64, 128, 256)
    out = [
        {"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k, "GROUP_M": 8, "num_warps": w, "num_stages": s}
        for m, n, k, w, s in itertools.product(tiles, tiles, (32, 64), (4, 8), (3, 4))
        if m * n < 256 * 256
    ]
    path = tmp_path / "space128.json"
    path.write_text(json.dumps(out))
    return str(path)


def test_coordinate_times_only_what_it_asks_from_tritons_pick(tmp_path):
    result = _sweep("--space", _space(tmp_path), "--strategy", "coordinate", "--budget", "8")
    info = result["strategy"]["shapes"][SHAPE]
    assert result["strategy"]["name"] == "coordinate" and info["evaluations"] <= 8
    timed = [r for r in result["rows"] if r.get("chosen_by") == "coordinate"]
    assert 1 <= len(timed) <= 8
    assert all(r["status"] in ("ok", "wrong", "failed") for r in timed)
    assert all(r["check_s"] > 0 and r["timing_s"] >= 0 for r in timed)
    skipped = [r for r in result["rows"] if r["status"] == "skipped"]
    assert len(timed) + len(skipped) == info["configs"] and "coordinate chose" in skipped[0]["why"]
    assert info["start"]["label"] == result["triton"][SHAPE]["label"]
    assert info["start"]["from"] == "Triton's pick"
    assert min(timed, key=lambda r: r["order"])["label"] == info["start"]["label"]
    assert result["shapes"][SHAPE]["best"] == info["pick"]


def test_halving_times_light_then_full_within_its_budget(tmp_path):
    result = _sweep("--space", _space(tmp_path), "--strategy", "halving", "--budget", "20")
    info = result["strategy"]["shapes"][SHAPE]
    assert info["evaluations"] == 20  # 13 light, 5 with more samples, 2 in full
    rounds = [r["rounds"] for r in result["rows"] if r.get("rounds")]
    assert sorted(len(r) for r in rounds).count(1) == 13 - 5
    assert all(r[0]["samples"] == 3 for r in rounds)
    finalists = [r for r in result["rows"] if r.get("rounds") and len(r["rounds"]) == 3]
    assert len(finalists) == 2 and all(r["stop"] != "light" for r in finalists)
    assert info["pick"] in {r["label"] for r in finalists}


def test_an_exhaustive_sweep_keeps_what_a_timed_replay_needs(tmp_path):
    result = _sweep("--space", _space(tmp_path))
    timed = [r for r in result["rows"] if r["status"] == "ok"]
    assert timed and all(r["calls"] == r["samples"] + 3 and r["timing_s"] > 0 for r in timed)
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(result))
    out = cli("sweep", "replay", str(path), "--budget", "5s", "--seeds", "3", "--json")
    assert out.returncode == 0, out.stderr
    shape = json.loads(out.stdout)["shapes"][0]
    for s in shape["strategies"]:
        assert s["seconds_to_near"] is not None
