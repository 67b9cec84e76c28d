"""`diagnose` on the GPU host: every pitfall found first on its flawed kernel, nothing above info
on the fixed twins, and the two fixes the workbench applies by itself measured faster, correct.

Run with `python -m pytest -m gpu tests/gpu/test_diagnose_gpu.py`; with DIAGNOSE_FIXTURES=DIR
set, each diagnosis's JSON is also written there, for the CPU tests and the closing note.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from conftest import PITFALL_FINDINGS, PITFALL_TWINS, cli

pytestmark = pytest.mark.gpu

FLAWED = {name: (first, PITFALL_TWINS[name]) for name, first in PITFALL_FINDINGS.items()}
"""Flawed kernel -> (the pitfall its diagnosis must rank first, its fixed twin)."""
LIBRARY = ("vector_add", "softmax", "matmul", "layer_norm")


def _diagnose(*args: str, timeout: float = 900) -> dict:
    start = time.monotonic()
    proc = cli("diagnose", *args, "--json", timeout=timeout)
    assert proc.stdout.strip(), proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    out["wall_s"] = time.monotonic() - start
    if folder := os.environ.get("DIAGNOSE_FIXTURES"):
        name = "_".join(a for a in args if not a.startswith("-"))
        Path(folder, f"diagnose_{name}.json").write_text(json.dumps(out, indent=1, default=str))
    return out


@pytest.mark.parametrize("name", sorted(FLAWED))
def test_the_pitfall_is_ranked_first(name: str):
    out = _diagnose(name)
    findings = out["diagnosis"]["findings"]
    assert findings, out["steps"]
    assert findings[0]["id"] == FLAWED[name][0], [(f["id"], f["severity"]) for f in findings]


@pytest.mark.parametrize("name", sorted({twin for _, twin in FLAWED.values()}) + list(LIBRARY))
def test_twins_and_library_kernels_raise_nothing_above_info(name: str):
    out = _diagnose(name)
    loud = [(f["id"], f["title"]) for f in out["diagnosis"]["findings"] if f["severity"] != "info"]
    assert not loud, loud


def test_a_full_diagnose_with_ncu_takes_at_most_45_s():
    out = _diagnose("pitfall_spill")
    assert "ncu" in {s["step"] for s in out["steps"]} and "ncu" not in out["diagnosis"]["missing"]
    assert out["wall_s"] <= 45, out["steps"]


def test_try_another_config_on_the_spilling_kernel_is_faster_and_correct():
    out = _diagnose("pitfall_spill", "--try", "register-spill")
    trial = out["trial"]
    assert trial and trial["after"]["correct"], out["problems"]
    assert trial["speedup"] > 1.0, trial


def test_try_cuda_graph_on_the_launch_bound_workload_is_faster_and_correct():
    out = _diagnose("transformer", "--dtype", "float16", "--try", "launch-bound")
    trial = out["trial"]
    assert trial and trial["after"]["correct"], out["problems"]
    assert trial["speedup"] >= 1.2, trial
