"""Each failure is classified by where it arose, with the remedy that follows: the user's code
named by file:line, a usage error by its flag, the environment by its path, the workbench or a
library as such. Nothing that should stop a job is swallowed."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import FAULTY, FIXTURES, ROOT, cli

from workbench.catalog.discovery import discover
from workbench.profilers import ncureport
from workbench.run import jobs
from workbench.run.params import CheckParams, IrParams
from workbench.runtime.errors import WorkbenchError


def _line_of(file, text: str) -> int:
    return next(i for i, line in enumerate(file.read_text().splitlines(), 1) if text in line)


@pytest.mark.parametrize(
    "name, says",
    [("exits_at_import", "exited with status 3"), ("interrupted_at_import", "SIGINT")],
)
def test_exit_or_interrupt_at_import_is_not_an_import_error(name, says):
    out = cli("check", name, "--path", str(FAULTY / f"{name}.py"), "--json")
    problem = json.loads(out.stdout)["problem"]
    assert out.returncode == 2
    assert problem["kind"] != "import-error" and says in problem["cause"]


def test_kernel_exception_names_its_file_and_line_in_text():
    out = cli("check", "fault_raises", "--path", str(FAULTY / "faults.py"))
    line = _line_of(FAULTY / "faults.py", 'raise RuntimeError("kernel wrapper exploded")')
    assert f"faults.py:{line}: RuntimeError: kernel wrapper exploded" in out.stderr
    assert f"fix the code at faults.py:{line}" in out.stderr


def test_compile_error_names_the_file_and_its_own_line():
    out = cli("ir", "fault_compile", "--path", str(FAULTY / "faults.py"), "--json")
    error = json.loads(out.stdout)["result"]["variants"][0]["error"]
    assert error["kind"] == "compile-error" and error["source"] == "user-code"
    assert error["file"] == str(FAULTY / "faults.py")
    assert error["line"] == _line_of(FAULTY / "faults.py", "offs = tl.arange(0, n)")
    assert "at 2:" not in error["cause"] and "constexpr" in error["cause"]


def test_resources_text_names_the_compile_errors_line():
    out = cli("resources", "fault_compile", "--path", str(FAULTY / "faults.py"))
    line = _line_of(FAULTY / "faults.py", "offs = tl.arange(0, n)")
    assert f"faults.py:{line}: Triton could not compile the kernel" in out.stdout


def test_config_values_triton_rejects_are_a_usage_error():
    out = cli("ir", "vector_add", "--config", "BLOCK=123", "--json")
    error = json.loads(out.stdout)["result"]["variants"][0]["error"]
    assert error["source"] == "usage"
    assert "--config BLOCK=123" in error["cause"] and "--config" in error["remedy"]
    assert "kernel source" not in error["remedy"]


def test_compile_mode_reimport_reports_like_the_loader():
    file = FAULTY / "breaks_when_compiled.py"
    out = cli("ir", "breaks_when_compiled", "--path", str(file), "--json")
    problem = json.loads(out.stdout)["problem"]
    assert problem["kind"] == "import-error" and problem["source"] == "user-code"
    assert problem["file"] == str(file)
    assert problem["line"] == _line_of(file, 'BLOCKS = {"small": 64}["large"]')


def test_an_error_inside_the_workbench_is_not_blamed_on_the_kernel():
    entry = discover([str(ROOT / "kernels")]).find("vector_add")
    job = jobs.Job("check", entry, CheckParams(seed="abc"), timeout=120)  # seeding fails in the job
    problem = jobs.run_job(job).problem
    assert problem is not None and problem.source == "tool"
    assert problem.file is None and "fix the code" not in problem.remedy


def test_an_unwritable_path_in_the_child_names_the_path(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    entry = discover([str(ROOT / "kernels")]).find("vector_add")
    params = IrParams(stages=["ttir"], out=str(blocker / "ir"))
    outcome = jobs.run_job(jobs.Job("ir", entry, params, timeout=240))
    error = outcome.result["variants"][0]["error"]
    assert error["source"] == "environment" and str(blocker) in error["file"]
    assert "kernel source" not in error["remedy"]


def test_why_the_ncu_installs_reader_failed_is_said(tmp_path, monkeypatch):
    (tmp_path / "ncu").write_text("")
    extras = tmp_path / "extras" / "python"
    extras.mkdir(parents=True)
    (extras / "ncu_report.py").write_text('raise ImportError("libnvperf_host.so: not found")\n')
    monkeypatch.setattr(ncureport, "_module", None)
    monkeypatch.setattr(ncureport, "import_failures", {})
    monkeypatch.delitem(sys.modules, "ncu_report", raising=False)
    profile = ncureport.load(str(FIXTURES / "ncu_spill.ncu-rep"), str(tmp_path / "ncu"))
    assert str(extras / "ncu_report.py") in profile.reader
    assert "libnvperf_host.so: not found" in profile.reader
    assert str(extras) not in sys.path


def test_an_nvtx_read_error_is_not_an_empty_stack():
    with pytest.raises(WorkbenchError) as err:
        ncureport._nvtx_stack(object())  # no nvtx_state(): the reader failing to read ranges
    assert err.value.problem.kind == "nvtx-unreadable"


def test_a_missing_nvtx_package_is_an_environment_problem(tmp_path):
    (tmp_path / "nvtx.py").write_text('raise ImportError("libnvToolsExt.so: not found")\n')
    entry = discover([str(ROOT / "kernels")]).find("vector_add")
    params = {"configs": [{"shape": [64], "dtype": "float32"}]}
    cmd = [sys.executable, "-m", "workbench.run.worker", "profile-target"]
    cmd += ["--file", entry.file, "--kernel", "vector_add", "--params", json.dumps(params)]
    cmd += ["--run-dir", str(tmp_path)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=240)
    events = [json.loads(line) for line in out.stdout.splitlines()]
    problem = next(e["problem"] for e in events if e["event"] == "error")
    assert problem["kind"] == "missing-package" and problem["source"] == "environment"
    assert "nvtx" in problem["remedy"]


def test_an_unknown_shape_set_in_the_job_is_a_usage_error():
    entry = discover([str(ROOT / "kernels")]).find("vector_add")
    job = jobs.Job("check", entry, CheckParams(shape_sets=["nosuch"]), timeout=120)
    problem = jobs.run_job(job).problem
    assert problem is not None and problem.source == "usage" and "regular" in problem.remedy
