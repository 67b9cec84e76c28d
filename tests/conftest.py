"""Shared fixtures: every test writes its runs to its own reports/ folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from workbench.catalog.spec import KernelSpec, Tolerance

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
FAULTY = FIXTURES / "faulty"

PITFALL_FINDINGS = {
    "pitfall_atomics": "reduction-across-blocks",
    "pitfall_bank_conflicts": "smem-bank-conflicts",
    "pitfall_bf16_acc": "accumulating-low-precision",
    "pitfall_dropout_scale": "rng-keep-rate",
    "pitfall_launch_bound": "launch-bound",
    "pitfall_small_grid": "grid-too-small",
    "pitfall_spill": "register-spill",
    "pitfall_stride": "assumes-contiguous",
    "pitfall_tail": "no-boundary-mask",
    "pitfall_wide_rows": "rows-wider-than-block",
}
"""The flawed kernels of kernels/pitfalls/ -> the finding their diagnosis must rank first."""
PITFALL_TWINS = {name: f"{name}_fixed" for name in PITFALL_FINDINGS} | {
    "pitfall_dropout_scale": "pitfall_dropout_rng_fixed"  # both dropout pitfalls share one twin
}
"""Flawed kernel -> its fixed twin."""


def pytest_addoption(parser, pluginmanager) -> None:
    """pyproject's `addopts` asks pytest-xdist for `-n auto --dist loadgroup`. Where xdist is
    absent (not installed, or `-p no:xdist`) those options are accepted and the tests run in
    this one process, as `-n 0` does."""
    if pluginmanager.has_plugin("xdist"):
        return
    group = parser.getgroup("xdist", "distributed testing (pytest-xdist absent: ignored)")
    # _addoption: a lowercase short option, as xdist itself declares -n
    group._addoption("-n", "--numprocesses", dest="numprocesses", default=None)
    group._addoption("--dist", dest="dist", default="no")


def pytest_xdist_auto_num_workers(config) -> int | None:
    """`-n auto`: one process more than there are cores. Much of a test is waiting (a child's
    start-up, a TUI settling), so a third process on CI's 2 cores keeps both busy (297 s for
    the suite there against 437 s with two). PYTEST_XDIST_AUTO_NUM_WORKERS still decides."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    return len(os.sched_getaffinity(0)) + 1


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups (--dist loadgroup)
def pytest_collection_modifyitems(config, items) -> None:
    """`-m gpu` tests run only where a CUDA GPU is (the GPU host); elsewhere they are skipped.

    Under xdist, tests that share an expensive setup run in one process: those using a module-
    (or class-, session-) scoped fixture of their own module are one group per module, so that
    setup runs once; tests that run on the GPU are one group, so they never time kernels side
    by side. A test marked `xdist_group` by hand keeps its group. Every other test goes to
    whichever process is free."""
    from workbench.run import machine

    gpu = machine.gpu_present()
    if not gpu:
        skip = pytest.mark.skip(reason="needs a CUDA GPU: run `pytest -m gpu` on the GPU host")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)
    if not config.pluginmanager.has_plugin("xdist"):
        return
    for item in items:
        if item.get_closest_marker("xdist_group"):
            continue
        if gpu and "gpu" in item.keywords:
            item.add_marker(pytest.mark.xdist_group("gpu"))
        elif _shares_a_setup(item):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))


def _shares_a_setup(item: pytest.Item) -> bool:
    """Whether the test uses a fixture, broader than one test, defined in its own module."""
    module = item.nodeid.split("::")[0]
    info = getattr(item, "_fixtureinfo", None)
    for defs in info.name2fixturedefs.values() if info else ():
        for fixturedef in defs:
            if fixturedef.scope != "function" and fixturedef.baseid.split("::")[0] == module:
                return True
    return False


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


def alive_with(marker: str) -> bool:
    """Whether a process whose command line holds `marker` is running (Linux's /proc)."""
    for proc in Path("/proc").iterdir():
        try:
            if marker.encode() in (proc / "cmdline").read_bytes():
                return True
        except OSError:
            continue
    return False


def interrupt_once_running(
    cmd: list[str], env: dict[str, str], marker: str, sig: int
) -> subprocess.CompletedProcess:
    """Start the CLI command `cmd`, wait until its job runs the kernel (the hanging kernels touch
    the file WORKBENCH_TEST_RUNNING names: a process merely started may not have reached the
    point the command handles the signal at, which made this flaky under load), send `sig` to
    the command and wait for it to end. `marker` is in the job child's command line."""
    running = Path(tempfile.mkdtemp()) / "running"
    env = {**env, "WORKBENCH_TEST_RUNNING": str(running)}
    proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not running.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert running.exists() and alive_with(marker), "the job never reached its kernel"
    finally:
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(cmd, proc.returncode, None, stderr)


def cpu_env(reports: Path) -> dict[str, str]:
    """The environment of a CLI run as on a host without a GPU, its runs written to `reports`."""
    return {"WORKBENCH_REPORTS": str(reports), "WORKBENCH_DEVICE": "cpu"}


def cpu_cli(
    tmp_path_factory: pytest.TempPathFactory, *args: str
) -> tuple[subprocess.CompletedProcess, Path]:
    """`cli(*args)` as on a host without a GPU, for a fixture wider than one test: its runs go
    to a reports folder of their own, returned beside the process."""
    reports = tmp_path_factory.mktemp("reports")
    return cli(*args, env=cpu_env(reports)), reports


def compare_spec(tolerances: dict[str, Tolerance] | None = None) -> KernelSpec:
    """A spec for `check.compare` alone: it reads nothing but the tolerances (the calibrated rule
    unless given), so the functions and shapes are placeholders."""
    return KernelSpec(
        "compared",
        _same,
        _same,
        lambda s, d, dev: (),
        {"check": [(1,)]},
        tolerances=tolerances or {},
    )


def _same(x: object) -> object:
    return x


# What the worker does for a check job on a host without a GPU, for several kernels in one
# process: a job per kernel would pay torch's start-up (3 s on CI) once per kernel.
_CHECKS = """
import json, os, sys
os.environ["TRITON_INTERPRET"] = "1"
from workbench.runtime import compat
compat.fix_interpreter()  # imports triton: after the switch above
from workbench.catalog.discovery import discover
from workbench.catalog.loader import load_spec
from workbench.check.job import job
from workbench.run.params import CheckParams
from workbench.run.worker import Context
for path, name, params in json.loads(sys.argv[1]):
    spec = load_spec(discover([path]).find(name))
    ctx = Context("cpu", True, ".", lambda event: None)
    result = job(spec, CheckParams.read("check", params), ctx)
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
