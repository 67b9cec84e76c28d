"""FLOPs for modules that declare none, on the GPU host: a bf16 GEMM and a causal attention in the
three-name contract are benched with their counted FLOPs, placed compute-bound, and their FLOP
rate held against the one Nsight Compute measures on the same launches.

Run with `python -m pytest -m gpu tests/gpu/test_work_gpu.py`; with WORK_FIXTURES=DIR set, the
JSON of each command and the ncu reports are copied there, for the CPU tests.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES, cli

pytestmark = pytest.mark.gpu

MODULES = {
    "matmul_bf16": 2.0 * 4096**3,
    "attention_causal_bf16": 4.0 * 4 * 32 * 4096**2 * 128 / 2,
}
"""Three-name module -> the FLOPs of its inputs by hand (2 M N K; 4 B H S^2 D, halved)."""
AGREE = 0.10
"""The bench's FLOP rate against ncu's: within 10 %."""


def _run(kind: str, name: str, *args: str, timeout: float = 900) -> dict:
    path = str(FIXTURES / "three_name" / f"{name}.py")
    proc = cli(kind, name, "--path", path, *args, "--json", timeout=timeout)
    assert proc.stdout.strip(), proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    if folder := os.environ.get("WORK_FIXTURES"):
        Path(folder, f"{kind}_{name}.json").write_text(json.dumps(out, indent=1, default=str))
        if kind == "profile" and out.get("report"):
            shutil.copy(out["report"], Path(folder, f"ncu_{name}.ncu-rep"))
    return out


@pytest.mark.parametrize("name", sorted(MODULES))
def test_bench_counts_the_flops_and_places_it_compute_bound(name: str):
    (rec,) = _run("bench", name)["result"]["records"]
    assert rec["status"] == "ok", rec
    assert rec["flops"] == MODULES[name] and rec["flops_source"] == "flop-counter"
    assert rec["bytes_source"] == "inputs+outputs" and rec["input_dtype"] == "bfloat16"
    assert rec["bound"] == "compute", rec
    assert rec["roofline_ratio"] > 0.4, rec  # the library's kernels run 0.67-1.04 of cuBLAS


@pytest.mark.parametrize("name", sorted(MODULES))
def test_ncu_counts_the_same_flops_at_the_same_rate(name: str):
    (rec,) = _run("bench", name, "--no-compile")["result"]["records"]
    summary = _run("profile", name, "--tool", "ncu", timeout=600)["summary"]
    launches = [k for k in summary["kernels"] if k["config"] == "inputs"]
    flops = sum((k["tensor_flops"] or 0) + (k["fp_flops"] or 0) for k in launches)
    ns = sum(k["duration_ns"] for k in launches)
    # causal: the diagonal tiles are computed whole, a few % over half of full attention
    assert flops == pytest.approx(MODULES[name], rel=AGREE), launches
    assert rec["tflops"] == pytest.approx(flops / ns / 1e3, rel=AGREE)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_diagnose_places_it_compute_bound_from_ncu_without_memory_far_from_peak(name: str):
    d = _run("diagnose", name)["diagnosis"]
    placed = d["roofline"]
    assert placed["source"] == "bench" and placed["bound"] == "compute", placed
    assert placed["flops_source"] == "ncu" and placed["intensity"] > placed["ridge"], placed
    assert placed["tflops"] == pytest.approx(placed["ncu_tflops"], rel=AGREE), placed
    assert all(f["id"] != "memory-far-from-peak" for f in d["findings"]), d["findings"]
