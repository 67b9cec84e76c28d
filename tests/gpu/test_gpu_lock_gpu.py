"""The per-GPU lock on the GPU host: a profiled run's warm-ups (its first call autotunes, timing
each config) wait for another run's timing, as its profiled ranges do."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from workbench.catalog.discovery import discover
from workbench.runtime import gpu_lock

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.gpu
def test_a_profile_targets_warm_up_waits_for_the_gpu_lock(tmp_path, monkeypatch):
    monkeypatch.setenv(gpu_lock.LOCKS_ENV, str(tmp_path / "locks"))
    entry = discover([str(ROOT / "kernels")]).find("vector_add")
    params = {"configs": [{"shape": [1 << 20], "dtype": "float32"}], "warmup": 2, "repeats": 2}
    cmd = [sys.executable, "-m", "workbench.run.worker", "profile-target", "--file", entry.file]
    cmd += ["--kernel", "vector_add", "--params", json.dumps(params), "--run-dir", str(tmp_path)]
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path, "WORKBENCH_DEVICE": "cuda"}
    events: queue.Queue[dict] = queue.Queue()
    with gpu_lock.exclusive(gpu_lock.device_key("cuda")):
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
        assert proc.stdout is not None
        stdout = proc.stdout

        def read() -> None:
            for line in stdout:
                events.put(json.loads(line))

        threading.Thread(target=read, daemon=True).start()
        phases = []
        while "waiting" not in phases:
            event = events.get(timeout=180)  # the child's imports and its inputs come first
            assert event["event"] != "error", event
            phases += [event["phase"]] if event["event"] == "phase" else []
        assert phases == ["waiting"], phases  # no warm-up ran beside the lock's holder
    assert proc.wait(timeout=180) == 0
    seen = []
    while not events.empty():
        event = events.get()
        seen += [event.get("phase")] if event["event"] == "phase" else [event["event"]]
    assert seen[:2] == ["warmup", "range"] and seen[-1] == "result", seen
