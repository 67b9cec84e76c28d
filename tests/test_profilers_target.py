"""The profiled child on CPU: warm-up outside the range, the range, the result (no profiler)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workbench.catalog.discovery import discover
from workbench.profilers.result import TargetResult
from workbench.run import jobs
from workbench.run.params import ProfileParams

ROOT = Path(__file__).parent.parent


@pytest.fixture
def cpu(monkeypatch, tmp_path):
    monkeypatch.setenv("WORKBENCH_DEVICE", "cpu")
    monkeypatch.setenv("WORKBENCH_REPORTS", str(tmp_path))


def test_target_warms_up_then_runs_each_config_in_its_range(cpu):
    entry = discover([]).find("vector_add")
    params = {
        "configs": [{"shape": [1000], "dtype": "float32"}, {"shape": [33], "dtype": "float16"}],
        "warmup": 1,
        "repeats": 2,
    }
    events: list[dict] = []
    job = jobs.Job("profile-target", entry, ProfileParams(**params), timeout=120)
    out = jobs.run_job(job, events.append)
    assert out.status == "ok", out.problem
    phases = [(e["phase"], e.get("range")) for e in events if e.get("event") == "phase"]
    assert phases == [  # every warm-up before the first range: the capture window holds ranges
        ("warmup", "vector_add:1000:float32"),
        ("warmup", "vector_add:33:float16"),
        ("range", "vector_add:1000:float32"),
        ("range", "vector_add:33:float16"),
        ("done", None),
    ]
    result = TargetResult.from_dict(out.result)
    assert result.to_dict() == out.result and TargetResult.from_dict(result.to_dict()) == result
    assert result.jit_kernels == ["_add_kernel"] and result.pin is None
    assert [r["range"] for r in result.ranges] == [
        "vector_add:1000:float32",
        "vector_add:33:float16",
    ]
    assert result.repeats == 2 and result.mode == "interpreter"
    assert out.result["summary"] == {"ranges": 2, "repeats": 2}


def test_target_without_configs_fails_clearly(cpu):
    entry = discover([]).find("vector_add")
    out = jobs.run_job(jobs.Job("profile-target", entry, ProfileParams(), timeout=120))
    assert out.status == "error" and out.problem.kind == "no-config"


def _alive_with(marker: str) -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes()
        except (OSError, ValueError):
            continue
        if marker.encode() in cmdline:
            pids.append(int(proc.name))
    return pids


def test_ctrl_c_cancels_the_profiler_and_its_child(tmp_path):
    """Interrupting `profile` ends the wrapped tool's whole process group and keeps the record.

    ncu is not installed here: a program that answers --version and then waits stands in for
    the profiler, which is all this checks (the same path ran under the real ncu on the H100).
    """
    marker = f"61.{os.getpid()}"
    tool = tmp_path / "ncu"
    answer = "[ \"$1\" = --version ] && { echo 'Version 1'; exit 0; }"
    tool.write_text(f"#!/bin/sh\n{answer}\nexec sleep {marker}\n")
    tool.chmod(0o755)
    env = {
        **os.environ,
        "WORKBENCH_NCU": str(tool),
        "WORKBENCH_DEVICE": "cuda",
        "WORKBENCH_REPORTS": str(tmp_path / "reports"),
    }
    cmd = [sys.executable, "-m", "workbench", "profile", "vector_add", "--json"]
    proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not _alive_with(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _alive_with(marker), "the stand-in profiler never started"
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 2
    result = json.loads(out)
    assert result["problem"]["kind"] == "cancelled"
    assert result["run"]["status"] == "cancelled"
    assert not _alive_with(marker)


def test_a_pinned_config_is_the_one_every_launch_runs(cpu):
    """`profile --pin` runs the kernel with one config: the autotuner's own list is set aside."""
    entry = discover([str(ROOT / "tests" / "fixtures" / "sweep_three_name.py")]).find(
        "sweep_three_name"
    )
    base = {"configs": [{"shape": [4096], "dtype": "float32"}], "warmup": 1, "repeats": 1}
    ok = jobs.run_job(
        jobs.Job("profile-target", entry, ProfileParams(**base, pin={"BLOCK": 256, "num_warps": 4}))
    )
    assert ok.status == "ok", ok.problem
    assert ok.result["pin"] == {"kernel": "_scale", "config": "BLOCK=256,num_warps=4"}
    # BLOCK=96 cannot compile (not a power of two): pinned, every launch meets it, where the
    # same job pinned to BLOCK=256 ran clean
    bad = jobs.run_job(jobs.Job("profile-target", entry, ProfileParams(**base, pin={"BLOCK": 96})))
    assert bad.status == "error" and "power of 2" in str(bad.problem), bad.problem
