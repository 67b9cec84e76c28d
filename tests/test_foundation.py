"""The foundation end to end: discovery, the job runner's faults, check verdicts, the store."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading

import pytest
from conftest import FAULTY, ROOT, alive_with, cli, cpu_env, interrupt_once_running

from workbench.catalog.discovery import discover
from workbench.run import jobs
from workbench.run.params import CheckParams
from workbench.run.store import Store
from workbench.runtime.errors import WorkbenchError


def check(name: str, timeout: float = 120.0, **params):
    entry = discover([str(FAULTY)]).find(name)
    return jobs.run_job(jobs.Job("check", entry, CheckParams(**params), timeout=timeout))


def test_list_reads_sources_without_importing_torch():
    code = (
        "import sys, json; from workbench.cli.main import main; main(['list', '--json']);"
        "print(json.dumps(sorted(m for m in ('torch', 'triton') if m in sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    listing, imported = out.rsplit("\n", 2)[0], json.loads(out.strip().splitlines()[-1])
    assert imported == []
    names = {k["name"] for k in json.loads(listing)["kernels"]}
    assert "vector_add" in names


def test_broken_modules_are_reported_and_the_rest_still_list():
    catalog = discover([str(FAULTY)])
    names = {k.name for k in catalog.kernels}
    assert {"fault_raises", "fault_strided", "raises_at_import"} <= names
    problems = {os.path.basename(p.file): p for p in catalog.problems}
    assert problems["syntax_error.py"].kind == "syntax-error"
    assert problems["syntax_error.py"].line == 4
    assert problems["missing_package.py"].kind == "missing-package"
    assert "definitely_not_installed_pkg" in problems["missing_package.py"].cause
    with pytest.raises(WorkbenchError) as err:
        catalog.find("syntax_error")
    assert err.value.problem.line == 4


def test_unknown_kernel_suggests_close_names():
    with pytest.raises(WorkbenchError) as err:
        discover([str(FAULTY)]).find("fault_raise")
    assert "fault_raises" in err.value.problem.remedy


def test_exception_at_import_names_file_and_line():
    out = check("raises_at_import")
    assert out.status == "error" and out.problem.kind == "import-error"
    src = (FAULTY / "raises_at_import.py").read_text().splitlines()
    assert out.problem.file.endswith("raises_at_import.py")
    assert "blok" in src[out.problem.line - 1]
    assert "KeyError" in out.problem.cause


@pytest.mark.versions
def test_kernel_exception_is_a_case_error_with_the_users_line():
    out = check("fault_raises")
    case = out.result["cases"][0]
    assert case["status"] == "error" and case["problem"]["kind"] == "exception"
    assert case["problem"]["file"].endswith("faults.py")
    assert "kernel wrapper exploded" in case["reason"]
    assert out.result["correct"] is False


@pytest.mark.versions
def test_compile_error_points_at_the_kernel_line():
    case = check("fault_compile").result["cases"][0]
    assert case["problem"]["kind"] == "compile-error"
    src = (FAULTY / "faults.py").read_text().splitlines()
    assert "tl.arange(0, n)" in src[case["problem"]["line"] - 1]


def test_hang_is_killed_at_the_timeout():
    out = check("fault_hang", timeout=8)
    assert out.status == "timeout" and out.problem.kind == "timeout"
    assert out.seconds < 30


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_interrupting_the_cli_stops_its_job_and_keeps_the_run(tmp_path, sig):
    """The job's child has a session of its own, so neither Ctrl-C nor `timeout`'s SIGTERM
    reaches it: the CLI stops it (else a GPU job would go on holding the GPU and its lock)."""
    reports = tmp_path / "reports"
    cmd = [sys.executable, "-m", "workbench", "check", "fault_hang", "--path", str(FAULTY)]
    marker = str(reports)  # in the job child's command line (its --run-dir) only
    proc = interrupt_once_running(cmd, {**os.environ, **cpu_env(reports)}, marker, sig)
    assert proc.returncode == 128 + sig, proc.stderr
    assert not alive_with(marker)
    [run] = Store(reports).history()
    assert (run.kernel, run.status) == ("fault_hang", "cancelled")
    said = "Ctrl-C" if sig == signal.SIGINT else "SIGTERM"  # not a bare ^C: what, and what next
    assert f"stopped by {said}: the running job was cancelled" in proc.stderr


def test_once_the_jobs_are_stopped_no_thread_starts_another(tmp_path):
    """A command's other threads (diagnose's compiles, sweep's shards) may ask for a job after
    `stop_all`: the exiting process starts none."""
    code = (
        "from workbench.catalog.discovery import discover; from workbench.run import jobs\n"
        "from workbench.run.params import CheckParams\n"
        f"entry = discover([{str(FAULTY)!r}]).find('fault_free_copy')\n"
        "jobs.stop_all()\n"
        "out = jobs.run_job(jobs.Job('check', entry, CheckParams()))\n"
        "print(out.status, out.run_dir or '-', out.problem.cause)"
    )
    env = {**os.environ, **cpu_env(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    said = "cancelled - the workbench was interrupted and stopped the job"
    assert out.stdout.strip() == said, out.stderr
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("name, kind", [("fault_segfault", "segfault"), ("fault_abort", "abort")])
def test_child_crash_ends_only_that_job(name, kind):
    out = check(name)
    assert out.status == "crash" and out.problem.kind == kind
    assert check("fault_free_copy").result["correct"] is True  # the parent carries on


@pytest.mark.versions
def test_output_shape_mismatch_is_named():
    case = check("fault_shape").result["cases"][0]
    assert case["problem"]["kind"] == "shape-mismatch"
    assert "(63,)" in case["reason"] and "(64,)" in case["reason"]


@pytest.mark.versions
def test_stride_only_errors_are_recognised():
    result = check("fault_strided").result
    by_layout = {c["layout"]: c for c in result["cases"]}
    assert by_layout["contiguous"]["status"] == "passed"
    assert by_layout["strided"]["status"] == "failed"
    assert result["summary"]["stride_only_errors"] is True


@pytest.mark.versions
def test_bf16_is_skipped_in_the_interpreter_never_passed():
    result = check("fault_free_copy").result
    bf16 = [c for c in result["cases"] if c["dtype"] == "bfloat16"]
    assert bf16 and all(c["status"] == "skipped" and "interpreter" in c["reason"] for c in bf16)
    assert result["correct"] is True and result["summary"]["passed"] == 1


@pytest.mark.versions
def test_check_cli_exit_status_and_json():
    bad = cli("check", "fault_strided", "--path", str(FAULTY), "--json")
    assert bad.returncode == 4  # right on its own inputs, wrong on strided copies of them
    assert json.loads(bad.stdout)["result"]["correct"] is False
    good = cli("check", "vector_add", "--dtype", "float32", "--shapes", "irregular")
    assert good.returncode == 0, good.stderr
    assert "CORRECT" in good.stdout


def test_unwritable_reports_keeps_the_result(tmp_path):
    # A folder under a plain file can't be created, even by root (chmod would not stop root).
    locked = tmp_path / "locked"
    locked.write_text("")
    out = cli(
        "check",
        "fault_free_copy",
        "--path",
        str(FAULTY),
        "--json",
        env={"WORKBENCH_REPORTS": str(locked / "reports")},
    )
    assert out.returncode == 3
    data = json.loads(out.stdout)
    assert data["result"]["correct"] is True
    assert data["store_problem"]["kind"] == "store-unwritable"
    assert "WORKBENCH_REPORTS" in data["store_problem"]["remedy"]


def test_two_processes_writing_the_store_lose_nothing(_reports):
    code = (
        "import sys, time; from workbench.run.store import RunRecord, Store\n"
        "for i in range(40):\n"
        "    Store().record(RunRecord(f'{sys.argv[1]}-{i}', 'check', 'k', None, {}, 'ok',"
        " time.time(), 0.1, 'h', 'cpu', None, {'i': i}, None, None))\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, tag], cwd=ROOT, env=os.environ.copy())
        for tag in ("a", "b", "c")
    ]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    ids = {r.id for r in Store().history(limit=1000)}
    assert len(ids) == 120


def test_processes_opening_a_new_store_at_once_all_get_in(tmp_path):
    """Switching a new database to WAL takes a lock SQLite does not wait for: eight processes
    opening one at once met 'database is locked' about once in 240 opens until the switch was
    retried. Twelve rounds of eight."""
    code = (
        "import sys, time; from pathlib import Path\n"
        "from workbench.run.store import RunRecord, Store\n"
        "Store(Path(sys.argv[1])).record(RunRecord(sys.argv[2], 'check', 'k', None, {}, 'ok',"
        " time.time(), 0.1, 'h', 'cpu', None, {}, None, None))\n"
    )
    for round in range(12):
        folder = tmp_path / str(round)
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", code, str(folder), str(n)],
                cwd=ROOT,
                stderr=subprocess.PIPE,
                text=True,
            )  # fmt: skip
            for n in range(8)
        ]
        errors = [p.communicate(timeout=120)[1] for p in procs if p.wait(timeout=120) != 0]
        assert not errors, errors[0]


def test_history_lists_runs_newest_first():
    check("fault_free_copy")
    check("fault_strided")
    out = cli("history", "--json")
    runs = json.loads(out.stdout)
    assert [r["kernel"] for r in runs[:2]] == ["fault_strided", "fault_free_copy"]
    assert runs[0]["result"]["correct"] is False
    assert cli("history", "fault_free_copy").stdout.count("fault_free_copy") == 1


def test_cancel_stops_the_job():
    cancel = threading.Event()
    entry = discover([str(FAULTY)]).find("fault_hang")
    threading.Timer(3.0, cancel.set).start()
    out = jobs.run_job(jobs.Job("check", entry, CheckParams(), timeout=60), cancel=cancel)
    assert out.status == "cancelled"
