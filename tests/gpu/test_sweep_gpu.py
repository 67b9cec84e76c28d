"""The sweep on a GPU, for real: configs checked against the reference and timed on the same
inputs, the one that cannot compile recorded, Triton's own pick beside them, a PNG. Run with
`python -m pytest -m gpu tests/gpu/test_sweep_gpu.py` on the GPU host; with SWEEP_FIXTURES=DIR
the JSON is kept there as a fixture."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import FIXTURES, cli

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
