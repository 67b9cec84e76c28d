"""Shared fixtures: every test writes its runs to its own reports/ folder."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from workbench.catalog.discovery import discover
from workbench.run import jobs

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


def check_all(
    names: tuple[str, ...], path: str, dtypes: list[str], tmp_path_factory
) -> dict[str, jobs.Outcome]:
    """One check job per kernel, two at a time (the interpreter is CPU-bound; CI has 2 cores)."""
    catalog = discover([path])
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("WORKBENCH_REPORTS", str(tmp_path_factory.mktemp("check") / "reports"))
        mp.setenv("WORKBENCH_DEVICE", "cpu")

        def run(name: str) -> jobs.Outcome:
            job = jobs.Job("check", catalog.find(name), {"dtypes": dtypes}, timeout=240)
            return jobs.run_job(job)

        with ThreadPoolExecutor(max_workers=2) as pool:
            return dict(zip(names, pool.map(run, names)))
