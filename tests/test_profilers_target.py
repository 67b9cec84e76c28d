"""The profiled child on CPU: warm-up outside the range, the range, the result (no profiler)."""

from __future__ import annotations

import pytest

from workbench import jobs
from workbench.discovery import discover


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
    out = jobs.run_job(jobs.Job("profile-target", entry, params, timeout=120), events.append)
    assert out.status == "ok", out.problem
    phases = [(e["phase"], e.get("range")) for e in events if e.get("event") == "phase"]
    assert phases == [  # every warm-up before the first range: the capture window holds ranges
        ("warmup", "vector_add:1000:float32"),
        ("warmup", "vector_add:33:float16"),
        ("range", "vector_add:1000:float32"),
        ("range", "vector_add:33:float16"),
        ("done", None),
    ]
    assert out.result["jit_kernels"] == ["_add_kernel"]
    assert [r["range"] for r in out.result["ranges"]] == [
        "vector_add:1000:float32",
        "vector_add:33:float16",
    ]
    assert out.result["repeats"] == 2 and out.result["mode"] == "interpreter"


def test_target_without_configs_fails_clearly(cpu):
    entry = discover([]).find("vector_add")
    out = jobs.run_job(jobs.Job("profile-target", entry, {"configs": []}, timeout=120))
    assert out.status == "error" and out.problem.kind == "no-config"
