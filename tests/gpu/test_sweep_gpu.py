"""The sweep on a GPU, for real: configs checked against the reference and timed on the same
inputs, the one that cannot compile recorded, Triton's own pick beside them, a PNG. Run with
`python -m pytest -m gpu tests/gpu/test_sweep_gpu.py` on the GPU host; with SWEEP_FIXTURES=DIR
the JSON is kept there as a fixture. On a host of several GPUs, one queue over all of them
against GPU 0 alone."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT, cli

from workbench.run import machine
from workbench.sweep import analysis, spread

pytestmark = pytest.mark.gpu


def test_sweep_checks_times_and_ranks_on_the_gpu():
    proc = cli("sweep", "sweep_three_name", "--path", str(FIXTURES / "sweep_three_name.py"),
               "--json")  # fmt: skip
    assert proc.stdout.strip(), proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    if os.environ.get("SWEEP_FIXTURES"):
        Path(os.environ["SWEEP_FIXTURES"], "sweep_gpu_three_name.json").write_text(proc.stdout)
    result = out["result"]
    assert result["mode"] == "gpu" and "NVIDIA" in result["gpu"]
    rows = {r["values"]["BLOCK"]: r for r in result["rows"]}
    for block in (256, 1024):
        r = rows[block]
        assert r["status"] == "ok", r
        assert r["check"]["bad"] == 0 and 0 < r["p20"] <= r["ms"] <= r["p80"]
        assert r["samples"] >= 10 and r["resources"]["regs"] > 0
    assert rows[96]["status"] == "failed" and proc.returncode == 1
    shape = next(iter(result["shapes"]))
    info = result["shapes"][shape]
    assert info["best"] in {rows[256]["label"], rows[1024]["label"]}
    # Triton's own autotuner meets the config that cannot compile too: a pick, or why it has none
    triton = info["triton"]
    assert triton["label"] in {rows[256]["label"], rows[1024]["label"]} or triton["problem"]
    assert result["plot"] and Path(result["plot"]).stat().st_size > 1000
    assert result["minimal_set"]["labels"] == [info["best"]]
    assert result["device"]["sms"] > 0  # the static model's SM count, from this GPU


def test_every_config_is_judged_against_the_shapes_one_prepared_reference():
    """A floored grid: the config whose BLOCK divides n is right, the others leave the last 64
    outputs unwritten, each told apart against the reference prepared once for the shape. The
    CUDA context is made before the worker says it is ready, a phase of its own."""
    proc = cli("sweep", "sweep_floor_grid", "--path", str(FIXTURES / "sweep_floor_grid.py"),
               "--no-triton-pick", "--json")  # fmt: skip
    assert proc.stdout.strip(), proc.stderr[-3000:]
    result = json.loads(proc.stdout)["result"]
    rows = {r["values"]["BLOCK"]: r for r in result["rows"]}
    assert rows[64]["status"] == "ok" and rows[64]["check"]["bad"] == 0, rows[64]
    for block in (256, 1024):
        assert rows[block]["status"] == "wrong" and rows[block]["check"]["bad"] == 64
        assert "64 of 1048640 outputs not written" in rows[block]["reason"]
    timings = result["timings"]
    assert timings["cuda_init_s"] > 0 and "reference_s" in timings and "capture_s" in timings


def test_no_triton_pick_leaves_triton_out_and_says_so():
    proc = cli("sweep", "sweep_three_name", "--path", str(FIXTURES / "sweep_three_name.py"),
               "--no-triton-pick", "--json")  # fmt: skip
    result = json.loads(proc.stdout)["result"]
    assert result["mode"] == "gpu" and result["triton"] == {}
    assert "Triton's own pick was not run (--no-triton-pick)" in result["notes"]
    assert "triton_s" not in result["timings"]
    assert next(iter(result["shapes"].values()))["best"]


@pytest.mark.skipif(
    len(spread.all_gpus()) < 2 if machine.gpu_present() else True,
    reason="needs two GPUs or more",
)
def test_one_queue_over_every_gpu_gives_one_gpus_rows_and_winner():
    """The 16-config matmul on GPU 0 alone, then on every GPU of the host pulling from one queue
    (Triton's own pick on whichever GPU is free): the same configs with the same statuses, and
    a winner within noise of one GPU's."""
    args = ("sweep", "matmul16", "--path", str(ROOT / "benchmarks" / "sweep_matmul16.py"),
            "--json")  # fmt: skip
    one = json.loads(cli(*args, "--gpus", "0").stdout)["result"]
    every = json.loads(cli(*args, "--gpus", "all").stdout)["result"]
    if os.environ.get("SWEEP_FIXTURES"):
        Path(os.environ["SWEEP_FIXTURES"], "sweep_gpus_matmul16.json").write_text(
            json.dumps({"one": one, "every": every})
        )
    assert every["complete"] and len(every["shards"]) == len(spread.all_gpus())
    assert [(r["label"], r["status"]) for r in every["rows"]] == [
        (r["label"], r["status"]) for r in one["rows"]
    ]
    shape = next(iter(one["shapes"]))
    best = {r["label"]: r for r in one["rows"]}
    mine, theirs = best[every["shapes"][shape]["best"]], best[one["shapes"][shape]["best"]]
    assert mine is theirs or analysis.within_noise(mine, theirs)
    assert every["triton"][shape]["label"]  # the pick ran on one of the GPUs
    assert {r["worker"] for r in every["rows"]} == {s["worker"] for s in every["shards"]}


def test_the_model_explains_all_but_two_losers_of_the_sixteen_config_matmul():
    """The recorded H100 sweep's goal on this GPU: a static reason for 13 or more of 15 losers,
    from the facts the job records (the grid, the kernel's M, N, K, the reference's FLOPs when
    their count lands in time)."""
    path = str(Path(__file__).parents[2] / "benchmarks" / "sweep_matmul16.py")
    proc = cli("sweep", "matmul16", "--path", path, "--json")
    assert proc.stdout.strip(), proc.stderr[-3000:]
    if os.environ.get("SWEEP_FIXTURES"):
        Path(os.environ["SWEEP_FIXTURES"], "sweep_gpu_matmul16_model.json").write_text(proc.stdout)
    result = json.loads(proc.stdout)["result"]
    [facts] = result["problems"].values()
    assert {k: facts["sizes"][k] for k in "MNK"} == {"M": 4096, "N": 4096, "K": 4096}
    # no FLOP formula: counted on the meta device beside the sweep, or left out, with a note,
    # when the count still ran at the sweep's end (its first use takes seconds on a fresh host)
    uncounted = any("still being counted" in n for n in result.get("notes", []))  # kept if any
    assert facts["flops"] == 2 * 4096**3 or (facts["flops"] is None and uncounted)
    assert facts["elsize"] == 2
    for row in result["rows"]:
        v = row["values"]
        assert row["programs"] == (4096 // v["BLOCK_M"]) * (4096 // v["BLOCK_N"])
    left = [r for r in result["rows"] if "profile it" in r["why"]]
    # alone on the GPU the 256x128 twins of the winner are the two left; beside other work on
    # it (the parallel GPU suite) a num_stages twin of the best drifts 4-7 % behind too, a gap
    # no static model resolves: more than two only among configs within 10 % of the best
    best_ms = min(r["ms"] for r in result["rows"] if r.get("ms"))
    near = all(r["ms"] < 1.10 * best_ms for r in left)
    assert len(left) <= 2 or near, [(r["label"], r["why"]) for r in left]
