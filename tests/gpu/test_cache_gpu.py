"""The cache doctor's GPU scenarios (run on the GPU host; CACHE_FIXTURE_OUT=DIR keeps the real
autotune caches and reports they make, to bring back as fixtures).

Scenario 2: a matmul keyed on (M, N, K) tuned on a row-major B serves its pick to a
column-major B of the same shape. Scenario 1: a tuning made while another process keeps the GPU
busy is served from disk later; `cache verify` re-times it on the idle GPU.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT, cli

KERNEL = FIXTURES / "cache_scenarios" / "narrow_matmul.py"
LOAD = """
import torch, time
a = torch.randn(8192, 8192, device="cuda", dtype=torch.float16)
end = time.time() + 600
while time.time() < end:
    for _ in range(20):
        a @ a
    torch.cuda.synchronize()
"""
TUNE = """
import importlib.util, sys, torch
spec = importlib.util.spec_from_file_location("narrow_matmul", sys.argv[1])
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
a, b = mod._inputs((4096, 4096, 4096, 0), torch.float16, "cuda")
mod.matmul(a, b); torch.cuda.synchronize()
"""


def verify(root: Path) -> dict:
    env = {"TRITON_CACHE_DIR": str(root)}
    out = cli(
        "cache",
        "verify",
        "narrow_matmul",
        "--path",
        str(KERNEL),
        "--dir",
        str(root),
        "--json",
        env=env,
        timeout=1800,
    )
    assert out.returncode == 0, out.stderr + out.stdout
    return json.loads(out.stdout)


def keep(name: str, root: Path, report: dict) -> None:
    out = os.environ.get("CACHE_FIXTURE_OUT")
    if out:
        dest = Path(out) / name
        shutil.copytree(root, dest / "cache", dirs_exist_ok=True)
        (dest / "report.json").write_text(json.dumps(report, indent=1, default=str))


@pytest.mark.gpu
def test_scenario_2_key_too_narrow(tmp_path):
    root = tmp_path / "cache"
    root.mkdir()
    first = verify(root)
    [v] = first["reach"]["verify"]
    assert v["status"] == "tuned now" and len(v["inputs"]) == 2
    assert first["scan"]["tuned"] == []  # scanned before tuning
    again = verify(root)
    keep("scenario2", root, again)
    [v2] = again["reach"]["verify"]
    assert v2["status"] == "served from disk"
    assert [a["reachable"] for a in again["reach"]["autotune"]] == [True]
    narrow = [
        f for f in first["findings"] + again["findings"] if f["id"] == "autotune-key-too-narrow"
    ]
    assert narrow, f"no layout-dependent best config measured: {v2}"
    assert "stride_b" in narrow[0]["fix"] and "stride_b" in narrow[0]["evidence"]["detail"]


@pytest.mark.gpu
def test_scenario_1_tuned_under_load_then_verified_idle(tmp_path):
    root = tmp_path / "cache"
    root.mkdir()
    env = {**os.environ, "TRITON_CACHE_DIR": str(root), "PYTHONPATH": str(ROOT)}
    load = subprocess.Popen([sys.executable, "-c", LOAD], env=env)
    try:
        subprocess.run([sys.executable, "-c", TUNE, str(KERNEL)], env=env, check=True, timeout=900)
    finally:
        load.kill()
        load.wait()
    report = verify(root)
    keep("scenario1", root, report)
    [v] = report["reach"]["verify"]
    assert v["status"] == "served from disk"
    served, fastest = v["served"]["ms"], v["fastest"]["ms"]
    beats = fastest[2] < served[1] and fastest[0] < served[0] * 0.98
    assert v["stale"] == beats
    ids = [f["id"] for f in report["findings"]]
    assert ("autotune-served-stale" in ids) == beats
    if beats:  # the fix: clear the stale tuning, verify re-tunes, the finding is gone
        done = cli(
            "cache",
            "clear",
            "narrow_matmul",
            "--path",
            str(KERNEL),
            "--dir",
            str(root),
            "--autotune-only",
            "--yes",
            env={"TRITON_CACHE_DIR": str(root)},
        )
        assert done.returncode == 0, done.stderr
        after = verify(root)
        assert after["reach"]["verify"][0]["status"] == "tuned now"
        assert "autotune-served-stale" not in [f["id"] for f in after["findings"]]
