"""Shared fixtures: every test writes its runs to its own reports/ folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
FAULTY = FIXTURES / "faulty"


@pytest.fixture(autouse=True)
def _reports(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_REPORTS", str(tmp_path / "reports"))
    monkeypatch.setenv("WORKBENCH_DEVICE", os.environ.get("WORKBENCH_DEVICE", "cpu"))
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
