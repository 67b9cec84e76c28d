"""The CLI as a new user meets it: pipes, --path, history, imports of saved reports, and
arguments refused in the parent with the flag named, before any job starts."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time

import pytest
from conftest import FAULTY, FIXTURES, ROOT, cli

from workbench.run.store import RunRecord, Store

SPILL_REPORT = str(FIXTURES / "ncu_spill.ncu-rep")


def _record(kind: str, kernel: str = "vector_add") -> str:
    run_id = f"{kind}-{kernel}-{time.monotonic_ns()}"
    fields = dict.fromkeys(("file", "summary", "result", "problem", "artifacts"))
    Store().record(
        RunRecord(
            id=run_id,
            kind=kind,
            kernel=kernel,
            params={},
            status="ok",
            started=time.time(),
            seconds=1.0,
            host="host",
            mode="cpu",
            **fields,
        )
    )
    return run_id


@pytest.mark.parametrize(
    "args",
    [("list",), ("list", "--json"), ("history", "--json"), ("profile", "--import", SPILL_REPORT)],
)
def test_a_closed_pipe_ends_the_command_quietly(args):
    for _ in range(40):  # enough rows that `history --json` overflows any buffer
        _record("check")
    read, write = os.pipe()
    os.close(read)  # the reader has gone before the first write, as `| head` soon will be
    proc = subprocess.run(
        [sys.executable, "-m", "workbench", *args],
        cwd=ROOT,
        stdout=write,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
    )
    os.close(write)
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr
    assert proc.returncode == 141


def test_path_before_the_command_is_that_commands_path():
    out = cli("--path", str(FAULTY / "faults.py"), "list", "--json")
    assert out.returncode == 0
    assert "fault_raises" in {k["name"] for k in json.loads(out.stdout)["kernels"]}
    refused = cli("--path", str(FAULTY), "history")
    assert refused.returncode == 2 and "takes no --path" in refused.stderr


def test_history_reads_a_store_it_cannot_write(_reports):
    run_id = _record("check")
    sqlite3.connect(_reports / "workbench.db").close()  # the last close removes -wal and -shm
    _reports.chmod(0o555)
    locked = os.geteuid() == 0 and shutil.which("chattr") is not None
    if locked:  # root writes anywhere else
        locked = subprocess.run(["chattr", "+i", str(_reports)]).returncode == 0
    try:
        if os.access(_reports, os.W_OK) and not locked:
            pytest.skip("cannot make a folder read-only here")
        out = cli("history", "--json")
    finally:
        if locked:
            subprocess.run(["chattr", "-i", str(_reports)], check=True)
        _reports.chmod(0o755)
    assert out.returncode == 0, out.stderr
    assert [r["id"] for r in json.loads(out.stdout)] == [run_id]


def test_history_kinds_are_the_commands_words():
    ir, target, imported = _record("ir"), _record("profile-target"), _record("profile-import")
    _record("check")
    resources = cli("history", "--kind", "resources", "--json")
    assert [r["id"] for r in json.loads(resources.stdout)] == [ir]
    profile = cli("history", "--kind", "profile", "--json")
    assert {r["id"] for r in json.loads(profile.stdout)} == {target, imported}
    unknown = cli("history", "--kind", "nosuch")
    assert unknown.returncode == 2 and "resources" in unknown.stderr


def test_history_of_a_kernel_without_runs_names_those_with_runs():
    _record("check", "gelu")
    out = cli("history", "vector_ad")
    assert out.returncode == 0
    assert "no runs of 'vector_ad'" in out.stderr and "gelu" in out.stderr


def test_an_unknown_shape_set_is_refused_before_a_worker_starts(_reports):
    out = cli("check", "vector_add", "--shapes", "nosuch", "--json")
    error = json.loads(out.stdout)["error"]
    assert out.returncode == 2 and error["source"] == "usage"
    assert "--shapes nosuch" in error["cause"] and "regular" in error["remedy"]
    assert not (_reports / "runs").exists()


def test_a_path_that_does_not_exist_is_named(tmp_path):
    missing = tmp_path / "nowhere"
    out = cli("check", "vector_add", "--path", str(missing))
    assert out.returncode == 2 and f"--path {missing} does not exist" in out.stderr
    for args in (["list"], ["list", "--json"]):  # an empty listing is not a success
        out = cli(*args, "--path", str(missing))
        assert out.returncode == 2 and "does not exist" in out.stdout + out.stderr


def test_list_names_what_runs_here_and_gpu_actions_refuse_up_front():
    """On a CPU host `list` names every action that works there; `cache verify` refuses
    before it scans or starts a job, as bench does."""
    out = cli("list", env={"WORKBENCH_DEVICE": "cpu"})
    here = out.stdout.split("actions here: ")[1].split("\n")[0].split(", ")
    assert {"sweep", "diagnose", "cache", "report"} <= set(here) and "bench" not in here
    start = time.monotonic()
    out = cli("cache", "verify", "vector_add", env={"WORKBENCH_DEVICE": "cpu"})
    assert out.returncode == 2 and out.stdout == "" and "error (usage)" in out.stderr
    assert "needs a CUDA GPU" in out.stderr and time.monotonic() - start < 20
    for args in (  # every GPU action refused here says it is a matter of usage
        ["bench", "vector_add"],
        ["profile", "vector_add", "--tool", "ncu"],
        ["sweep", "vector_add", "--gpus", "all"],
        ["diagnose", "vector_add", "--try", "register-spill"],
    ):
        out = cli(*args, env={"WORKBENCH_DEVICE": "cpu"})
        assert out.returncode == 2 and "error (usage): `" in out.stderr, (args, out.stderr)
        assert "needs a CUDA GPU" in out.stderr, args


def test_an_unwritable_out_folder_is_refused_naming_the_flag(tmp_path, _reports):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    out = cli("ir", "vector_add", "--out", str(blocker / "ir"))
    assert out.returncode == 2 and "error (usage)" in out.stderr
    assert f"--out {blocker / 'ir'}" in out.stderr and "artifacts in" not in out.stderr
    assert not (_reports / "runs").exists()


def test_a_line_outside_the_kernel_says_where_the_kernel_is():
    source = (ROOT / "kernels" / "vector_add.py").read_text().splitlines()
    def_line = next(i for i, t in enumerate(source, 1) if t.startswith("def _add_kernel"))
    out = cli("ir", "vector_add", "--line", "1")
    assert out.returncode == 0, out.stderr
    assert f"--line 1 is outside _add_kernel, which spans lines {def_line}-" in out.stdout
    assert "0 line(s)" not in out.stdout


def test_an_import_under_another_kernels_name_is_refused(_reports):
    out = cli("profile", "vector_add", "--import", SPILL_REPORT)
    assert out.returncode == 2 and "pitfall_spill" in out.stderr and "vector_add" in out.stderr
    assert Store().history() == []


def test_an_import_under_an_unknown_kernel_is_refused():
    out = cli("profile", "nosuch", "--import", SPILL_REPORT)
    assert out.returncode == 2 and "no kernel named 'nosuch'" in out.stderr
    assert Store().history() == []


def test_an_nsys_report_read_through_the_sqlite_beside_it_says_so(tmp_path):
    shutil.copy(FIXTURES / "nsys_vector_add.sqlite", tmp_path / "t.sqlite")
    (tmp_path / "t.nsys-rep").write_bytes(b"not a report")
    out = cli("profile", "--import", str(tmp_path / "t.nsys-rep"), "--json")
    notes = json.loads(out.stdout)["notes"]
    said = "t.nsys-rep itself was not opened"
    assert any(str(tmp_path / "t.sqlite") in n and said in n for n in notes)


def test_sweep_and_pin_arguments_are_refused_in_the_parent(tmp_path):
    """A missing --space file and a malformed --pin name their flag; no run is started."""
    env = {"WORKBENCH_REPORTS": str(tmp_path / "reports")}
    space = cli("sweep", "vector_add", "--space", str(tmp_path / "nope.json"), env=env)
    assert space.returncode == 2 and "error (usage): --space" in space.stderr
    pin = cli("profile", "vector_add", "--pin", "BLOCK", env=env)
    assert pin.returncode == 2 and "'BLOCK' in --pin is not KEY=VALUE" in pin.stderr
    assert not (tmp_path / "reports" / "runs").exists()


def test_argument_errors_say_usage_and_the_remedy():
    """argparse's own errors and the argument grammars' alike: `error (usage)`, a remedy."""
    for args in (
        ["ir", "vector_add", "--arch", "foo"],
        ["bench", "vector_add", "--shape", "12xq"],
        ["ir", "vector_add", "--config", "foo"],
        ["ir", "vector_add", "--line", "0"],
        ["check"],
    ):
        out = cli(*args)
        assert out.returncode == 2 and "Traceback" not in out.stderr, args
        assert "error (usage): " in out.stderr and "remedy: " in out.stderr, args


def test_blackwell_archs_compile_with_their_own_limits():
    """`resources --arch sm_120` cross-compiles and reads occupancy against sm_120's limits (48
    warps a SM), sm_100 against the data-centre part's (64), as `sweep --arch` already took."""
    occ = {}
    for arch in ("sm_100", "sm_120"):
        out = cli("resources", "vector_add", "--arch", arch, "--json")
        assert out.returncode == 0, out.stderr
        variant = json.loads(out.stdout)["result"]["variants"][0]
        occ[arch] = variant["resources"]["occupancy"]
    assert occ["sm_100"]["max_warps"] == 64 and occ["sm_120"]["max_warps"] == 48


def test_a_named_command_builds_and_imports_its_own_parser_alone():
    """`sweep ...` imports the sweep command's module, not the other ten (their imports are
    time a sweep waits before its worker starts); `--help`, a misspelt command or none list
    every command, and --path before the command is passed over."""
    code = (
        "import sys; from workbench.cli.main import build_parser; "
        "p = build_parser(sys.argv[1:]); "
        "print(sorted(p._subparsers._group_actions[0].choices), "
        "'workbench.cli.check' in sys.modules)"
    )

    def built(*argv: str) -> str:
        run = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        return run.stdout.strip()

    assert built("sweep", "vector_add") == "['sweep', 'tui'] False"
    assert built("--path", "zoo", "list") == "['list', 'tui'] False"
    for argv in (["--help"], ["swep"], ["listing"], []):
        assert built(*argv).endswith("'tui'] True"), argv
        assert built(*argv).count("'") == 24, argv  # the eleven commands and tui
