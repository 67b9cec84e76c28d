"""Shared fixtures: every test writes its runs to its own reports/ folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
FAULTY = FIXTURES / "faulty"


def pytest_collection_modifyitems(config, items) -> None:
    """`-m gpu` tests run only where a CUDA GPU is (the GPU host); elsewhere they are skipped."""
    from workbench.run import machine

    if machine.gpu_present():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU: run `pytest -m gpu` on the GPU host")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _reports(tmp_path, monkeypatch, request):
    monkeypatch.setenv("WORKBENCH_REPORTS", str(tmp_path / "reports"))
    monkeypatch.setenv("WORKBENCH_SCAN_CACHE", str(tmp_path / "scan.json"))
    gpu = "gpu" in request.keywords
    monkeypatch.setenv(
        "WORKBENCH_DEVICE", "cuda" if gpu else os.environ.get("WORKBENCH_DEVICE", "cpu")
    )
    return tmp_path / "reports"


def cli(*args: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run `python -m workbench ARGS` as a user would."""
    return subprocess.run(
        [sys.executable, "-m", "workbench", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=timeout,
    )


# What the worker does for a check job on a host without a GPU, for several kernels in one
# process: a job per kernel would pay torch's start-up (3 s on CI) once per kernel.
_CHECKS = """
import json, os, sys
os.environ["TRITON_INTERPRET"] = "1"
from workbench.runtime import compat
compat.fix_interpreter_loop_bounds()  # imports triton: after the switch above
from workbench.catalog.discovery import discover
from workbench.catalog.loader import load_spec
from workbench.check.job import job
from workbench.run.worker import Context
for path, name, params in json.loads(sys.argv[1]):
    spec = load_spec(discover([path]).find(name))
    result = job(spec, params, Context("cpu", True, ".", lambda event: None))
    print("RESULT " + json.dumps(result), flush=True)
"""


def interpreter_checks(*parts: list[tuple[str, str, dict]]) -> dict[str, dict]:
    """The check result of each (path, kernel, params) in the interpreter, kernel by kernel as
    the worker computes it; one child process per part, two at a time (CI has 2 cores)."""

    def run(part: list[tuple[str, str, dict]]) -> list[dict]:
        proc = subprocess.run(
            [sys.executable, "-c", _CHECKS, json.dumps([(str(p), n, q) for p, n, q in part])],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=280,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        return [json.loads(x[7:]) for x in proc.stdout.splitlines() if x.startswith("RESULT ")]

    with ThreadPoolExecutor(max_workers=2) as pool:
        return {r["kernel"]: r for found in pool.map(run, parts) for r in found}
